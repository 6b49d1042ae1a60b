#include "compiler/codegen/llvm/module_builder.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/kernel_emitter.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"

namespace kiln {

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx,
                                           const std::vector<CodegenKernel>& kernels,
                                           const TargetInfo& t, ModuleKind kind,
                                           const std::string& table_symbol, uint32_t table_id) {
  bool table = kind != ModuleKind::Jit;
  auto m = std::make_unique<llvm::Module>("kiln", ctx);
  m->setTargetTriple(t.triple());
  m->setDataLayout(t.machine().createDataLayout());
  std::vector<llvm::Constant*> entries;
  for (const CodegenKernel& k : kernels) {
    KernelFunctions f = emit_kernel(*m, k);
    if (table) {
      f.raw->setLinkage(llvm::GlobalValue::InternalLinkage);
      f.entry->setLinkage(llvm::GlobalValue::InternalLinkage);
    }
    entries.push_back(f.entry);
  }
  if (table) {
    llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* arr = llvm::ArrayType::get(ptr, entries.size());
    auto* sty = llvm::StructType::get(ctx, {i32, i32, i32, i32, arr});
    // kiln_abi_entry_table_header, then the entries.
    auto* init = llvm::ConstantStruct::get(
        sty, {llvm::ConstantInt::get(i32, KILN_ABI_ENTRY_TABLE_MAGIC),
              llvm::ConstantInt::get(i32, KILN_ABI_ENTRY_TABLE_VERSION),
              llvm::ConstantInt::get(i32, entries.size()), llvm::ConstantInt::get(i32, table_id),
              llvm::ConstantArray::get(arr, entries)});
    KILN_CHECK(kind != ModuleKind::Static || !table_symbol.empty(), "a static table needs a name");
    auto* g = new llvm::GlobalVariable(
        *m, sty, true, llvm::GlobalValue::ExternalLinkage, init,
        kind == ModuleKind::Static ? table_symbol : KILN_ABI_ENTRY_TABLE_SYMBOL);
    g->setAlignment(llvm::Align(16));
  }
  return m;
}

void optimize_module(llvm::Module& m, const TargetInfo& t) {
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(m, &es)) throw InternalError("LLVM module does not verify: " + err);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&t.machine());
  // Freestanding: no library function is available, so no pass may introduce a call to one.
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  tlii.disableAllFunctions();
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

namespace {
std::vector<uint8_t> emit_file(llvm::Module& m, const TargetInfo& t, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (t.machine().addPassesToEmitFile(pm, os, nullptr, type))
    throw InternalError("the target machine cannot emit this file type for " + t.triple());
  pm.run(m);
  return std::vector<uint8_t>(buf.begin(), buf.end());
}
}  // namespace

std::vector<uint8_t> emit_object(llvm::Module& m, const TargetInfo& t) {
  return emit_file(m, t, llvm::CodeGenFileType::ObjectFile);
}

std::string emit_assembly(llvm::Module& m, const TargetInfo& t) {
  auto bytes = emit_file(m, t, llvm::CodeGenFileType::AssemblyFile);
  return std::string(bytes.begin(), bytes.end());
}

std::string module_ir(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

}  // namespace kiln
