#include "compiler/ir/verify.h"

#include <gtest/gtest.h>

#include "compiler/support/error.h"

namespace kiln {
namespace {

std::string verify_error(const UOp* u, IrStage s) {
  try {
    verify(u, s);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class Verify : public ::testing::Test {
 protected:
  Context ctx_;
  const UOp* buf(const char* name, Shape s) {
    return ctx_.make(Op::BUFFER, dtypes::float32, {},
                     BufferArg{name, 0, BufferKind::Input, std::move(s)});
  }
};

TEST_F(Verify, AcceptsAWellFormedTensorGraph) {
  const UOp* a = buf("a", {2, 3});
  const UOp* r =
      ctx_.make(Op::REDUCE_AXIS, dtypes::float32, {a->alu(Op::EXP)}, ReduceArg{Op::ADD, {1}});
  EXPECT_EQ(verify_error(r, IrStage::Tensor), "");
}

TEST_F(Verify, RejectsElementwiseOpsOnDifferentShapes) {
  const UOp* bad = buf("a", {2, 3})->add(buf("b", {3, 2}));
  std::string e = verify_error(bad, IrStage::Tensor);
  EXPECT_NE(e.find("verify(tensor)"), std::string::npos) << e;
  EXPECT_NE(e.find("differ in shape"), std::string::npos) << e;
}

TEST_F(Verify, RejectsOpsFromAnotherStage) {
  const UOp* r = ctx_.range(4, 0);
  std::string e = verify_error(r, IrStage::Tensor);
  EXPECT_NE(e.find("not allowed"), std::string::npos) << e;
  EXPECT_NE(e.find("RANGE"), std::string::npos) << e;
  const UOp* v = ctx_.make(Op::VECTORIZE, DType(ScalarKind::Index, 2), {r, r});
  EXPECT_NE(verify_error(v, IrStage::Kernel), "");
  EXPECT_EQ(verify_error(v, IrStage::Lowered), "");
}

TEST_F(Verify, RejectsMixedOperandDtypes) {
  const UOp* bad =
      ctx_.make(Op::ADD, dtypes::index, {ctx_.const_index(1), ctx_.const_int(dtypes::int32, 1)});
  std::string e = verify_error(bad, IrStage::Kernel);
  EXPECT_NE(e.find("operand dtypes differ"), std::string::npos) << e;
}

TEST_F(Verify, KernelMemoryOps) {
  DType p = DType::ptr(ScalarKind::Float32, 16);
  const UOp* g = ctx_.make(Op::DEFINE_GLOBAL, p, {}, int64_t{0});
  const UOp* r = ctx_.range(16, 0);
  const UOp* idx = ctx_.make(Op::INDEX, p, {g, r});
  const UOp* ld = ctx_.make(Op::LOAD, dtypes::float32, {idx});
  const UOp* st = ctx_.make(Op::STORE, dtypes::void_, {idx, ld->add(ld)});
  EXPECT_EQ(verify_error(ctx_.make(Op::SINK, dtypes::void_, {st}), IrStage::Kernel), "");
  const UOp* bad_load = ctx_.make(Op::LOAD, dtypes::float32, {g});
  EXPECT_NE(verify_error(bad_load, IrStage::Kernel).find("LOAD needs an INDEX"), std::string::npos);
  const UOp* bad_store = ctx_.make(Op::STORE, dtypes::void_, {idx, ctx_.const_index(1)});
  EXPECT_NE(verify_error(bad_store, IrStage::Kernel).find("STORE value dtype"), std::string::npos);
  const UOp* bad_reduce =
      ctx_.make(Op::REDUCE, dtypes::float32, {ld, ctx_.const_index(3)}, Op::ADD);
  EXPECT_NE(verify_error(bad_reduce, IrStage::Kernel).find("non-RANGE"), std::string::npos);
}

TEST_F(Verify, IntegerDivisionOnFloatsIsRejected) {
  const UOp* f = ctx_.const_float(dtypes::float32, 1.0);
  EXPECT_NE(verify_error(f->alu(Op::IDIV, f), IrStage::Kernel).find("integer division on floats"),
            std::string::npos);
  const UOp* i = ctx_.const_index(1);
  EXPECT_NE(verify_error(i->alu(Op::FDIV, i), IrStage::Kernel).find("FDIV on integers"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
