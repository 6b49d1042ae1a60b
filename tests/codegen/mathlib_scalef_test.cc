// exp and exp2 on AVX-512 scale by vscalefps in pieces of 16 lanes (or of 8 and 4 with AVX512VL),
// joined back in lane order: every vector width a tile can give the math library (three pieces
// for 48 lanes, a 4-lane remnant) must make a module that verifies and compiles for an AVX-512
// CPU without executing it; on a host with AVX-512 (mathlib_test's kernels run there) it must also
// compute exp, lane by lane. (A 48-lane SiLU tile once joined its pieces wrongly: the module did
// not verify, found by `kilnc --beam`.)
#include <gtest/gtest.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <string>

#include "compiler/codegen/llvm/mathlib.h"
#include "compiler/target/target_info.h"

namespace kiln {
namespace {

// The assembly of exp (or exp2) on <lanes x float>, in a module carrying the scalef flag.
std::string exp_assembly(Op op, unsigned lanes, int flag, std::string* verify_errors) {
  TargetInfo t = TargetInfo::create({"x86_64-linux-gnu", "sapphirerapids"});
  llvm::LLVMContext ctx;
  llvm::Module m("scalef", ctx);
  m.setTargetTriple(t.triple());
  m.setDataLayout(t.machine().createDataLayout());
  m.addModuleFlag(llvm::Module::Warning, mathlib::kMathlibScalefFlag, flag);
  auto* vt = llvm::FixedVectorType::get(llvm::Type::getFloatTy(ctx), lanes);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(vt, {vt}, false),
                                    llvm::Function::ExternalLinkage, "f", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  b.CreateRet(mathlib::emit(b, op, fn->getArg(0)));
  llvm::raw_string_ostream es(*verify_errors);
  if (llvm::verifyModule(m, &es)) return "";
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (t.machine().addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return "";
  pm.run(m);
  return std::string(text.str());
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(MathlibScalef, EveryTileWidthVerifiesAndScalesInPieces) {
  for (Op op : {Op::EXP, Op::EXP2})
    for (unsigned lanes : {4u, 8u, 12u, 16u, 24u, 32u, 48u, 64u}) {
      std::string errors;
      std::string text = exp_assembly(op, lanes, 2, &errors);
      ASSERT_EQ(errors, "") << op_name(op) << " on " << lanes << " lanes";
      ASSERT_FALSE(text.empty()) << lanes;
      // 16-lane pieces where they divide, else 8- or 4-lane ones.
      int pieces = lanes % 16 == 0  ? static_cast<int>(lanes / 16)
                   : lanes % 8 == 0 ? static_cast<int>(lanes / 8)
                                    : static_cast<int>(lanes / 4);
      EXPECT_EQ(count_of(text, "vscalefps"), pieces) << op_name(op) << " on " << lanes;
    }
}

// Without AVX512VL (flag 1) only 16-lane pieces scale; other widths keep ldexp's integer 2^k.
TEST(MathlibScalef, WithoutVectorLengthExtensionsOnlyWholeZmmPiecesScale) {
  std::string errors;
  EXPECT_EQ(count_of(exp_assembly(Op::EXP, 32, 1, &errors), "vscalefps"), 2) << errors;
  EXPECT_EQ(count_of(exp_assembly(Op::EXP, 24, 1, &errors), "vscalefps"), 0) << errors;
  EXPECT_EQ(errors, "");
}

}  // namespace
}  // namespace kiln
