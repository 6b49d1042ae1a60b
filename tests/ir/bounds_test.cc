#include <gtest/gtest.h>

#include "compiler/ir/uop.h"
#include "tests/ir/expr_parse.h"

namespace kiln {
namespace {

class Bounds : public ::testing::Test {
 protected:
  Bounds() {
    vars_ = {{"r0", ctx_.range(16, 0)},
             {"x", ctx_.variable("x", -8, 8)},
             {"y", ctx_.variable("y", 1, 10)}};
  }
  std::pair<int64_t, int64_t> b(const std::string& s) {
    const UOp* u = testing::ExprParser(ctx_, vars_).parse(s);
    return {u->vmin(), u->vmax()};
  }
  Context ctx_;
  std::map<std::string, const UOp*> vars_;
};

using P = std::pair<int64_t, int64_t>;

TEST_F(Bounds, LeavesAndArithmetic) {
  EXPECT_EQ(b("r0"), P(0, 15));
  EXPECT_EQ(b("x"), P(-8, 8));
  EXPECT_EQ(b("7"), P(7, 7));
  EXPECT_EQ(b("r0+x"), P(-8, 23));
  EXPECT_EQ(b("r0*x"), P(-120, 120));
  EXPECT_EQ(b("x*-2"), P(-16, 16));
  EXPECT_EQ(b("r0*r0"), P(0, 225));
  EXPECT_EQ(b("max(x,3)"), P(3, 8));
  EXPECT_EQ(b("min(r0,x)"), P(-8, 8));
}

TEST_F(Bounds, TruncatingDivisionAndModulo) {
  EXPECT_EQ(b("r0//4"), P(0, 3));
  EXPECT_EQ(b("x//3"), P(-2, 2));  // truncation toward zero
  EXPECT_EQ(b("r0%4"), P(0, 3));
  EXPECT_EQ(b("x%3"), P(-2, 2));  // the sign of the dividend
  EXPECT_EQ(b("r0%32"), P(0, 15));
  EXPECT_EQ(b("r0//y"), P(0, 15));
  EXPECT_EQ(b("r0%y"), P(0, 9));
  EXPECT_EQ(b("x//x"), P(-8, 8));  // the divisor may be 0 (result 0) or -1
}

TEST_F(Bounds, ComparisonsAndWhere) {
  EXPECT_EQ(b("r0<16"), P(1, 1));
  EXPECT_EQ(b("r0<0"), P(0, 0));
  EXPECT_EQ(b("r0<8"), P(0, 1));
  EXPECT_EQ(b("r0!=20"), P(1, 1));
  EXPECT_EQ(b("where(r0<8,x,r0)"), P(-8, 15));
  EXPECT_EQ(b("where(r0<16,x,r0)"), P(-8, 8));
  EXPECT_EQ(b("!(r0<16)"), P(0, 0));
}

TEST_F(Bounds, InvalidBranchesDoNotWidenIndexBounds) {
  const UOp* r0 = vars_["r0"];
  const UOp* w = r0->lt(int64_t{4})->where(r0->mul(int64_t{2}), ctx_.invalid());
  EXPECT_EQ(w->vmin(), 0);
  EXPECT_EQ(w->vmax(), 30);
}

TEST_F(Bounds, OverflowGivesTheFullRange) {
  const UOp* big = ctx_.variable("big", 0, INT64_MAX / 2);
  const UOp* s = big->mul(int64_t{4});
  EXPECT_EQ(s->vmin(), INT64_MIN);
  EXPECT_EQ(s->vmax(), INT64_MAX);
  const UOp* i8 = ctx_.const_int(dtypes::int8, 100);
  const UOp* wrap = i8->add(i8);  // wraps in int8
  EXPECT_EQ(wrap->vmin(), -128);
  EXPECT_EQ(wrap->vmax(), 127);
}

TEST_F(Bounds, CastsClampToTheTargetType) {
  const UOp* x = vars_["x"];
  EXPECT_EQ(x->cast(dtypes::uint8)->vmin(), 0);
  EXPECT_EQ(x->cast(dtypes::uint8)->vmax(), 255);
  EXPECT_EQ(vars_["r0"]->cast(dtypes::int8)->vmax(), 15);
  EXPECT_EQ(x->lt(int64_t{0})->cast(dtypes::int32)->vmax(), 1);
}

}  // namespace
}  // namespace kiln
