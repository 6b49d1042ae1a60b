// Each external dependency of the compiler, exercised for real: these fail if a library is
// missing, mislinked or the wrong version.
#include <ffi.h>
#include <gtest/gtest.h>
#include <lld/Common/Driver.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "kiln/schema/kiln_generated.h"

LLD_HAS_DRIVER(elf)

namespace {

TEST(Dependencies, LlvmBuildsAndVerifiesAFunction) {
  EXPECT_EQ(LLVM_VERSION_MAJOR, 19);
  llvm::LLVMContext ctx;
  llvm::Module m("t", ctx);
  llvm::IRBuilder<> b(ctx);
  auto* fty = llvm::FunctionType::get(b.getFloatTy(), {b.getFloatTy(), b.getFloatTy()}, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "add", m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  b.CreateRet(b.CreateFAdd(f->getArg(0), f->getArg(1)));
  std::string err;
  llvm::raw_string_ostream os(err);
  EXPECT_FALSE(llvm::verifyModule(m, &os)) << err;
  EXPECT_FALSE(llvm::sys::getDefaultTargetTriple().empty());
}

TEST(Dependencies, LldElfDriverRunsInProcess) {
  std::string out, err;
  llvm::raw_string_ostream os(out), es(err);
  const char* args[] = {"ld.lld", "--version"};
  lld::Result r = lld::lldMain(args, os, es, {{lld::Gnu, &lld::elf::link}});
  EXPECT_EQ(r.retCode, 0) << err;
  EXPECT_NE(out.find("LLD 19"), std::string::npos) << out;
}

TEST(Dependencies, FlatbuffersRoundTripsTheSchema) {
  flatbuffers::FlatBufferBuilder fbb;
  auto prov = kiln::fb::CreateProvenanceDirect(fbb, 1, 2, "kilnc test");
  kiln::fb::PackageBuilder pb(fbb);
  pb.add_provenance(prov);
  pb.add_arena_size(4096);
  fbb.Finish(pb.Finish(), kiln::fb::PackageIdentifier());
  flatbuffers::Verifier v(fbb.GetBufferPointer(), fbb.GetSize());
  ASSERT_TRUE(kiln::fb::VerifyPackageBuffer(v));
  ASSERT_TRUE(kiln::fb::PackageBufferHasIdentifier(fbb.GetBufferPointer()));
  auto* pkg = kiln::fb::GetPackage(fbb.GetBufferPointer());
  EXPECT_EQ(pkg->provenance()->format_minor(), 2u);
  EXPECT_EQ(pkg->provenance()->producer()->str(), "kilnc test");
  EXPECT_EQ(pkg->arena_size(), 4096u);
}

extern "C" int32_t add3(int32_t a, int32_t b, int32_t c) {
  return a + b + c;
}

TEST(Dependencies, LibffiCallsAFunction) {
  ffi_cif cif;
  ffi_type* args[3] = {&ffi_type_sint32, &ffi_type_sint32, &ffi_type_sint32};
  ASSERT_EQ(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 3, &ffi_type_sint32, args), FFI_OK);
  int32_t a = 1, b = 20, c = 300;
  void* values[3] = {&a, &b, &c};
  ffi_arg result = 0;
  ffi_call(&cif, FFI_FN(add3), &result, values);
  EXPECT_EQ(static_cast<int32_t>(result), 321);
}

TEST(Dependencies, OnnxCheckerAcceptsAModelAndRejectsABrokenOne) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  for (auto* vi : {g->add_input(), g->add_output()}) {
    vi->set_name(vi == &g->input(0) ? "x" : "y");
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
  }
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_NO_THROW(onnx::checker::check_model(parsed));
  parsed.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  EXPECT_ANY_THROW(onnx::checker::check_model(parsed));
}

}  // namespace
