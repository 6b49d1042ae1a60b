#include "compiler/codegen/llvm/module_builder.h"

#include <mutex>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/kernel_emitter.h"
#include "compiler/codegen/llvm/mathlib.h"
#include "compiler/codegen/llvm/native_pieces.h"
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
  if (t.is_x86() && t.has_feature("avx512f"))
    m->addModuleFlag(llvm::Module::Warning, mathlib::kMathlibScalefFlag,
                     t.has_feature("avx512vl") ? 2 : 1);
  std::vector<llvm::Constant*> entries;
  for (const CodegenKernel& k : kernels) {
    KernelFunctions f = emit_kernel(*m, k);
    if (table) {
      f.raw->setLinkage(llvm::GlobalValue::InternalLinkage);
      f.entry->setLinkage(llvm::GlobalValue::InternalLinkage);
    }
    entries.push_back(f.entry);
  }
  // Divisions marked as allowing a reciprocal (sigmoid's 1/(1+e)) become AVX-512's 14-bit
  // estimate and one Newton step (sigmoid stays at 2.31 ulp). AVX2's estimate has 12 bits, which
  // one step left at 3.16 ulp against the test's bound of 4: AVX2 keeps the division.
  // (LLVM's own default would take the 12-bit estimate there: it is turned off explicitly.)
  const char* estimates =
      t.is_x86() && t.has_feature("avx512f") ? "vec-divf:1,divf:1" : "!vec-divf,!divf";
  for (llvm::Function& fn : *m)
    if (!fn.isDeclaration()) fn.addFnAttr("reciprocal-estimates", estimates);
  if (table) {
    // kiln_abi.h's layout: the header, the entries, each kernel's argument count, then every
    // argument's access extent (an i64 pair and an i32 access, padded to 24 bytes like
    // kiln.fbs's ArgExtent; LLVM's natural struct layout puts the extents at an 8-byte boundary).
    llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
    llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* extent_ty = llvm::StructType::get(ctx, {i64, i64, i32, i32});
    std::vector<llvm::Constant*> nargs, extents;
    for (const CodegenKernel& k : kernels) {
      KILN_CHECK(k.accesses.size() == k.arg_dtypes.size(), "kernel ", k.name,
                 ": accesses for every argument");
      nargs.push_back(llvm::ConstantInt::get(i32, k.arg_dtypes.size()));
      for (const ArgAccess& a : k.accesses)
        extents.push_back(llvm::ConstantStruct::get(
            extent_ty,
            {llvm::ConstantInt::get(i64, static_cast<uint64_t>(a.begin)),
             llvm::ConstantInt::get(i64, static_cast<uint64_t>(a.end)),
             llvm::ConstantInt::get(i32, (a.read ? uint32_t{KILN_ABI_ACCESS_READ} : 0u) |
                                             (a.written ? uint32_t{KILN_ABI_ACCESS_WRITE} : 0u)),
             llvm::ConstantInt::get(i32, 0)}));
    }
    auto* arr = llvm::ArrayType::get(ptr, entries.size());
    auto* nargs_ty = llvm::ArrayType::get(i32, nargs.size());
    auto* extents_ty = llvm::ArrayType::get(extent_ty, extents.size());
    auto* sty = llvm::StructType::get(ctx, {i32, i32, i32, i32, arr, nargs_ty, extents_ty});
    auto* init = llvm::ConstantStruct::get(
        sty, {llvm::ConstantInt::get(i32, KILN_ABI_ENTRY_TABLE_MAGIC),
              llvm::ConstantInt::get(i32, KILN_ABI_ENTRY_TABLE_VERSION),
              llvm::ConstantInt::get(i32, entries.size()), llvm::ConstantInt::get(i32, table_id),
              llvm::ConstantArray::get(arr, entries), llvm::ConstantArray::get(nargs_ty, nargs),
              llvm::ConstantArray::get(extents_ty, extents)});
    const llvm::StructLayout* layout = m->getDataLayout().getStructLayout(sty);
    KILN_CHECK(
        layout->getElementOffset(5) == KILN_ABI_ENTRY_TABLE_NARGS_OFFSET(entries.size()) &&
            layout->getElementOffset(6) == KILN_ABI_ENTRY_TABLE_EXTENTS_OFFSET(entries.size()) &&
            m->getDataLayout().getTypeAllocSize(extent_ty) == KILN_ABI_ARG_EXTENT_SIZE,
        "the entry table's layout is not kiln_abi.h's");
    KILN_CHECK(kind != ModuleKind::Static || !table_symbol.empty(), "a static table needs a name");
    auto* g = new llvm::GlobalVariable(
        *m, sty, true, llvm::GlobalValue::ExternalLinkage, init,
        kind == ModuleKind::Static ? table_symbol : KILN_ABI_ENTRY_TABLE_SYMBOL);
    g->setAlignment(llvm::Align(16));
  }
  return m;
}

namespace {

// Loops whose bodies LLVM's unswitching may copy, in its cost units (LLVM's default is 50). A
// register tile on a padded lane axis (a 55-wide row in vectors of 32, the last group masked)
// branches, per load, between a plain and a masked access (kernel_emitter.cc,
// all_lanes_or_masked). The condition depends on the tile's position alone, so it is the same
// for the whole reduction, but a 3x3 window's unrolled body costs thousands of units: its 18
// branches stayed in the loop, which they split into blocks the scheduler could not interleave
// (75 vectors spilled; squeezenet's 55x55 direct layer ran at 70 GFLOP/s). Unswitched, the
// reduction has a copy with plain loads and one with masked loads: 0.79 -> 0.31 ms at 1 thread
// on an AMD EPYC (docs/performance.md). The largest such body measured needed 5000-20000.
constexpr int kUnswitchThreshold = 50000;

// LLVM reads the threshold from a process-wide option: set once, before the first pipeline
// (the JIT's modules share it, so timed kernels are the packaged ones). An LLVM without the
// option keeps its default (slower code, never wrong code).
void allow_unswitching_large_loops() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& options = llvm::cl::getRegisteredOptions();
    auto it = options.find("unswitch-threshold");
    if (it != options.end())
      static_cast<llvm::cl::opt<int>*>(it->second)->setValue(kUnswitchThreshold);
  });
}

}  // namespace

void optimize_module(llvm::Module& m, const TargetInfo& t) {
  allow_unswitching_large_loops();
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
  // After the pipeline, which keeps a tile whole (its unrolling and CSE see one value per tile).
  unsigned native_bits = static_cast<unsigned>(t.vector_bytes()) * 8;
  llvm::FunctionPassManager pieces = native_pieces_passes(native_bits);
  for (llvm::Function& f : m)
    if (!f.isDeclaration() && has_odd_wide_vectors(f, native_bits)) pieces.run(f, fam);
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
