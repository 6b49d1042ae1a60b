// Hand-written simplifier cases: each asserts the exact simplified form.
//
// Variables: r0 in [0,16), r1 in [0,4), r2 in [0,8), r3 in [0,3) are loop ranges;
// x in [-8,8], y in [1,10], n in [0,100], w in [4,10] are symbolic integers.
#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/symbolic.h"
#include "tests/ir/expr_eval.h"
#include "tests/ir/expr_parse.h"

namespace kiln {
namespace {

struct Case {
  const char* in;
  const char* out;
};

class Symbolic : public ::testing::Test {
 protected:
  Symbolic() {
    vars_ = {{"r0", ctx_.range(16, 0)},         {"r1", ctx_.range(4, 1)},
             {"r2", ctx_.range(8, 2)},          {"r3", ctx_.range(3, 3)},
             {"x", ctx_.variable("x", -8, 8)},  {"y", ctx_.variable("y", 1, 10)},
             {"n", ctx_.variable("n", 0, 100)}, {"w", ctx_.variable("w", 4, 10)}};
  }
  const UOp* parse(const std::string& s) { return testing::ExprParser(ctx_, vars_).parse(s); }
  void check(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      const UOp* e = parse(c.in);
      const UOp* s = simplify(e);
      EXPECT_EQ(render(s), c.out) << "input: " << c.in;
      EXPECT_LE(expr_size(s), expr_size(e)) << "input: " << c.in;
    }
  }
  Context ctx_;
  std::map<std::string, const UOp*> vars_;
};

const std::vector<Case> kConstantFolding = {
    {"3+4", "7"},
    {"3*4", "12"},
    {"7//2", "3"},
    {"-7//2", "-3"},  // C truncation
    {"-7%3", "-1"},   // the remainder takes the dividend's sign
    {"7%-3", "1"},
    {"5//0", "0"},  // division by zero is 0 by definition
    {"5%0", "0"},
    {"max(3,9)", "9"},
    {"min(3,9)", "3"},
    {"3<4", "true"},
    {"4<3", "false"},
    {"3==3", "true"},
    {"3!=3", "false"},
    {"true&false", "false"},
    {"true|false", "true"},
    {"!true", "false"},
    {"where(true,3,4)", "3"},
    {"where(false,3,4)", "4"},
    {"-(-5)", "5"},
    {"(2+3)*(4-1)", "15"},
    {"100//7%5", "4"},
};
TEST_F(Symbolic, ConstantFolding) {
  check(kConstantFolding);
}

const std::vector<Case> kIdentities = {
    {"r0+0", "r0"},    {"0+r0", "r0"},   {"r0*1", "r0"},        {"1*x", "x"},
    {"r0*0", "0"},     {"r0//1", "r0"},  {"r0%1", "0"},         {"max(r0,r0)", "r0"},
    {"min(x,x)", "x"}, {"r0-r0", "0"},   {"r0<4&r0<4", "r0<4"}, {"r0<4|r0<4", "r0<4"},
    {"y*0+x", "x"},    {"x*-1*-1", "x"}, {"x-1+1", "x"},
};
TEST_F(Symbolic, Identities) {
  check(kIdentities);
}

const std::vector<Case> kTermCombiningAndCanonicalOrder = {
    {"r0+r0", "r0*2"},
    {"r1+r0", "r0+r1"},
    {"x+r0", "r0+x"},
    {"3+r0", "r0+3"},
    {"r0*2+r0*3", "r0*5"},
    {"r0+1+r0+2", "(r0*2)+3"},
    {"2*r0", "r0*2"},
    {"(r0*2)*3", "r0*6"},
    {"r0*4+r1-r0*4", "r1"},
    {"(r0+1)*4", "(r0*4)+4"},
    {"(r0*2+3)*4", "(r0*8)+12"},
    {"y+x+n", "(n+x)+y"},
    {"x*y*2", "(x*y)*2"},
    {"y*x", "x*y"},
    {"r0+x-x", "r0"},
    {"(r0+r1)*2", "(r0+r1)*2"},  // distributing would grow the expression
    {"(r0+r1)+(r0+r1)", "(r0*2)+(r1*2)"},
    {"r0*3-r0*3+5", "5"},
    {"r0*r1+r1*r0", "(r0*r1)*2"},
    {"(x+1)*(x+1)", "(x+1)*(x+1)"},
    {"r2+r1+r0+r3", "((r0+r1)+r2)+r3"},
    {"r0*-1+r0*2", "r0"},
};
TEST_F(Symbolic, TermCombiningAndCanonicalOrder) {
  check(kTermCombiningAndCanonicalOrder);
}

const std::vector<Case> kDivModByBoundsAndExactDivision = {
    {"r0//16", "0"},
    {"r0%16", "r0"},
    {"r1%4", "r1"},
    {"r1//w", "0"},
    {"r1%w", "r1"},
    {"(r0*6+r1*4)//2", "(r0*3)+(r1*2)"},
    {"(r0*6+r1*4+2)//2", "((r0*3)+(r1*2))+1"},
    {"(r0*6+4)%2", "0"},
    {"(r0*6+r1*3)//3", "(r0*2)+r1"},
    {"(x*4)//4", "x"},
    {"(x*4)%4", "0"},
    {"(r2*-3+24)//3", "(r2*-1)+8"},
    {"(r2*-3+24)%3", "0"},
    {"(n%7)//7", "0"},
    {"(n//7)%100", "n//7"},
    {"x%1", "0"},
    {"(r0+16)//16", "1"},
    {"(r0+16)%16", "r0"},
};
TEST_F(Symbolic, DivModByBoundsAndExactDivision) {
  check(kDivModByBoundsAndExactDivision);
}

const std::vector<Case> kDivModFactoringARemainder = {
    {"(r0*4+r1)//4", "r0"},
    {"(r0*4+r1)%4", "r1"},
    {"(r0*4+r1+4)//4", "r0+1"},
    {"(r0*8+r2)//8", "r0"},
    {"(r0*8+r2)%8", "r2"},
    {"(r0*16+r1*4+r3)//4", "(r0*4)+r1"},
    {"(r0*16+r1*4+r3)%4", "r3"},
    {"((r0*16+r1*4+r3)//4)%4", "r1"},
    {"(r0*16+r1*4+r3)//16", "r0"},
    {"(r2*3+1)%3", "1"},
    {"(r2*3+4)//3", "r2+1"},
    {"(r0*4+r1)//8", "r0//2"},
    {"(r0*4+r1)//16", "r0//4"},
    {"(r0*4+r1)%8", "r1+((r0%2)*4)"},
    {"(r0*4+r1)%16", "r1+((r0%4)*4)"},
    {"(r0*4)//8", "r0//2"},
    {"(r0*12)//8", "(r0*3)//2"},
    {"(r0*4+r1*2)//8", "((r0*2)+r1)//4"},
    {"(n*w+r1)//w", "n"},
    {"(n*w+r1)%w", "r1"},
    {"(r0*4+r1)//2", "(r0*2)+(r1//2)"},
    {"(r0*8+r2)//4", "(r0*2)+(r2//4)"},
    {"(n+5)//5", "(n//5)+1"},
};
TEST_F(Symbolic, DivModFactoringARemainder) {
  check(kDivModFactoringARemainder);
}

const std::vector<Case> kDivModCongruenceAndNesting = {
    {"(r0*4+r1)%2", "r1%2"},    {"(r0*8+r2)%4", "r2%4"},
    {"(r2+8)%8", "r2"},         {"(r2+9)%8", "(r2+1)%8"},
    {"(n+5)%5", "n%5"},         {"(n*7+3)%7", "3"},
    {"(n*9+r1)%4", "(r1+n)%4"}, {"(r2//2)//2", "r2//4"},
    {"n//5//4", "n//20"},       {"(r0%8)%4", "r0%4"},
    {"(r0%4)%8", "r0%4"},       {"(x%12)%4", "x%4"},  // nested mod removal holds for negative x too
    {"(x//2)//3", "x//6"},
};
TEST_F(Symbolic, DivModCongruenceAndNesting) {
  check(kDivModCongruenceAndNesting);
}

const std::vector<Case> kDivModRecombination = {
    {"(r0//4)*4+r0%4", "r0"},
    {"r0%4+(r0//4)*4", "r0"},
    {"((r0//4)%2)*4+r0%4", "r0%8"},
    {"(r0//4)*8+(r0%4)*2", "r0*2"},
    {"(n//3)*3+n%3+r1", "r1+n"},
    {"(x//4)*4+x%4", "x"},  // holds with truncation for negative x as well
    {"(r0*4+r1)//4*4+(r0*4+r1)%4", "(r0*4)+r1"},
};
TEST_F(Symbolic, DivModRecombination) {
  check(kDivModRecombination);
}

const std::vector<Case> kDivModThatMustNotFold = {
    {"x//4", "x//4"},
    {"((x*4)+1)//4", "((x*4)+1)//4"},  // x may be negative: truncation differs from floor
    {"(x+8)//4", "(x+8)//4"},
    {"x//x", "x//x"},            // x may be 0, and 0//0 is 0
    {"(r2+9)//8", "(r2+9)//8"},  // splitting would grow it
    {"n%w", "n%w"},
};
TEST_F(Symbolic, DivModThatMustNotFold) {
  check(kDivModThatMustNotFold);
}

const std::vector<Case> kDivModByVariables = {
    {"y//y", "1"},    {"x%x", "0"},        {"(x*y)//y", "x"},
    {"(x*y)%y", "0"}, {"(r0*y)//y", "r0"}, {"(n*w+r1+w)//w", "n+1"},
};
TEST_F(Symbolic, DivModByVariables) {
  check(kDivModByVariables);
}

const std::vector<Case> kComparisonsByBounds = {
    {"r0<16", "true"},      {"r0<0", "false"},   {"r0<8", "r0<8"},    {"r0!=20", "true"},
    {"r0==20", "false"},    {"x<x", "false"},    {"r0!=r0", "false"}, {"r0==r0", "true"},
    {"r1<w", "true"},       {"w<r1", "false"},   {"x<9", "true"},     {"x< -8", "false"},
    {"r0*4+r1<64", "true"}, {"r0//4<4", "true"},
};
TEST_F(Symbolic, ComparisonsByBounds) {
  check(kComparisonsByBounds);
}

const std::vector<Case> kComparisonsOfLinearForms = {
    {"r0+4<8", "r0<4"},
    {"r0*2<8", "r0<4"},
    {"r0*2<7", "r0<4"},
    {"r0*4+r1<8", "((r0*4)+r1)<8"},
    {"r0//4<2", "r0<8"},
    {"8<r0", "8<r0"},
    {"8<r0+2", "6<r0"},
    {"8<r0*2", "4<r0"},
    {"r0>=4", "3<r0"},
    {"r0<=4", "r0<5"},
    {"r0+2!=5", "r0!=3"},
    {"r0*2!=5", "true"},
    {"r0*2==6", "r0==3"},
    {"r0*2==5", "false"},
    {"3==r0", "r0==3"},
    {"x//4<1", "x<4"},
    {"x//4<0", "x<-3"},
    {"x-r0<0", "((r0*-1)+x)<0"},
    {"r0*6+r1*3<9", "((r0*2)+r1)<3"},
};
TEST_F(Symbolic, ComparisonsOfLinearForms) {
  check(kComparisonsOfLinearForms);
}

const std::vector<Case> kBooleanLogic = {
    {"!(r0!=3)", "r0==3"},
    {"!(r0==3)", "r0!=3"},
    {"r0<4&true", "r0<4"},
    {"r0<4&false", "false"},
    {"r0<4|true", "true"},
    {"r0<4|false", "r0<4"},
    {"r0<4&!(r0<4)", "false"},
    {"r0<4&r0<8", "r0<4"},
    {"r0<8&r0<4", "r0<4"},
    {"!(!(r0<4))", "r0<4"},
    {"r0<4&2<r0&r0<16", "(r0<4)&(2<r0)"},
    {"r0<4&r0>=4", "false"},
    {"r1<2&r1<3&r1<4", "r1<2"},
};
TEST_F(Symbolic, BooleanLogic) {
  check(kBooleanLogic);
}

const std::vector<Case> kWhereFolding = {
    {"where(r0<4,r1,r1)", "r1"},
    {"where(r0<16,r1,r2)", "r1"},
    {"where(r0<0,r1,r2)", "r2"},
    {"where(r0<4,true,false)", "r0<4"},
    {"where(r0<4,false,true)", "3<r0"},
    {"where(r0<4,where(r0<4,r1,r2),r3)", "where(r0<4, r1, r3)"},
    {"where(r0<4,r1,where(r0<4,r2,r3))", "where(r0<4, r1, r3)"},
    {"where(r0<4,r1+0,r1*1)", "r1"},
    {"where(r0<4,r0,0)+1", "where(r0<4, r0, 0)+1"},
};
TEST_F(Symbolic, WhereFolding) {
  check(kWhereFolding);
}

const std::vector<Case> kMinMax = {
    {"max(r1,r0+4)", "r0+4"},      {"min(r1,r0+4)", "r1"}, {"max(r0,r1)", "max(r0, r1)"},
    {"max(r1,r0)", "max(r0, r1)"}, {"min(x,-9)", "-9"},    {"max(x,-8)", "x"},
    {"min(r2,7)", "r2"},           {"max(r0//4,4)", "4"},
};
TEST_F(Symbolic, MinMax) {
  check(kMinMax);
}

// Bounds implied by a gate simplify the gated expression: {gate, expression, result}.
struct GivenCase {
  const char* valid;
  const char* expr;
  const char* out;
};
const std::vector<GivenCase> kGivenCases = {
    {"r0<4", "(r0*4+r1)//16", "0"},
    {"r0<4", "(r0*4+r1)%16", "(r0*4)+r1"},
    {"0<r0", "((r0-1)*4+r1)//4", "r0+-1"},
    {"0<r0", "((r0-1)*4+r1)%4", "r1"},
    {"r2<4", "r2%4", "r2"},
    {"r0<2&r1<2", "r0*2+r1<4", "true"},
    {"1<r0&r0<5", "(r0+2)//8", "0"},
    {"x<0", "max(x,0)", "0"},
    {"0<x", "x//x", "1"},
    {"r0+r1<4", "(r0+r1)//4", "0"},  // a bound on a compound expression
    {"0<r1&0<r2&r2<5", "(r0*12+r1*4+r2+-5)//48",
     "r0//4"},  // a padded row: the constant stays in the remainder
};
TEST_F(Symbolic, SimplificationUnderAValidityCondition) {
  for (const GivenCase& g : kGivenCases) {
    const UOp* e = simplify_given(parse(g.expr), simplify(parse(g.valid)));
    EXPECT_EQ(render(e), g.out) << g.expr << " given " << g.valid;
  }
}

TEST_F(Symbolic, MaskedIndexWithInvalid) {
  const UOp* valid = parse("r0<4");
  const UOp* idx = parse("(r0*4+r1)//16+r2");
  const UOp* w = simplify(valid->where(idx, ctx_.invalid()));
  EXPECT_EQ(render(w), "where(r0<4, r2, Invalid)");
  // A gate that is always true disappears with the where.
  const UOp* w2 = simplify(parse("r0<16")->where(parse("r1"), ctx_.invalid()));
  EXPECT_EQ(render(w2), "r1");
}

TEST_F(Symbolic, FloatsOnlyFoldExactly) {
  const UOp* f = ctx_.make(Op::DEFINE_GLOBAL, DType::ptr(ScalarKind::Float32), {}, int64_t{0});
  const UOp* x =
      ctx_.make(Op::LOAD, dtypes::float32,
                {ctx_.make(Op::INDEX, DType::ptr(ScalarKind::Float32), {f, parse("r0")})});
  auto F = [&](double v) { return ctx_.const_float(dtypes::float32, v); };
  EXPECT_EQ(simplify(x->mul(F(1.0))), x);
  EXPECT_EQ(simplify(F(1.0)->mul(x)), x);
  EXPECT_EQ(simplify(x->alu(Op::FDIV, F(1.0))), x);
  EXPECT_EQ(simplify(x->neg()->neg()), x);
  EXPECT_EQ(simplify(x->add(F(-0.0))), x);
  EXPECT_EQ(simplify(x->add(F(0.0))), x->add(F(0.0)));  // -0.0 + 0.0 is +0.0: not an identity
  EXPECT_EQ(simplify(x->mul(F(0.0))), x->mul(F(0.0)));  // NaN * 0 is NaN
  EXPECT_EQ(simplify(F(3.0)->add(x)), x->add(F(3.0)));  // commutative: constant last
  // Never reassociated: (x + 1) + 2 keeps its rounding.
  EXPECT_EQ(simplify(x->add(F(1.0))->add(F(2.0))), x->add(F(1.0))->add(F(2.0)));
  EXPECT_EQ(simplify(F(1.5)->add(F(2.25))), F(3.75));
  EXPECT_EQ(simplify(F(1e30)->mul(F(1e30))),
            F(std::numeric_limits<float>::infinity()));  // float32 rounding
  // MAX on floats keeps operand order: a NaN in the first operand propagates.
  EXPECT_EQ(simplify(F(0.0)->maximum(x)), F(0.0)->maximum(x));
}

TEST_F(Symbolic, CastsFold) {
  EXPECT_EQ(simplify(ctx_.const_index(300)->cast(dtypes::uint8)),
            ctx_.const_int(dtypes::uint8, 44));
  EXPECT_EQ(simplify(ctx_.const_float(dtypes::float32, -3.7)->cast(dtypes::int32)),
            ctx_.const_int(dtypes::int32, -3));
  EXPECT_EQ(simplify(ctx_.const_float(dtypes::float32, 1e20)->cast(dtypes::int32)),
            ctx_.const_int(dtypes::int32, INT32_MAX));  // saturating
  EXPECT_EQ(simplify(ctx_.const_index(7)->cast(dtypes::float32)),
            ctx_.const_float(dtypes::float32, 7.0));
  EXPECT_EQ(simplify(ctx_.const_int(dtypes::int32, 5)->cast(dtypes::bool_)), ctx_.const_bool(true));
  EXPECT_EQ(
      simplify(ctx_.make(Op::BITCAST, dtypes::int32, {ctx_.const_float(dtypes::float32, 1.0)})),
      ctx_.const_int(dtypes::int32, 0x3f800000));
}

TEST_F(Symbolic, NarrowIntegersWrap) {
  const UOp* a = ctx_.const_int(dtypes::int8, 100);
  EXPECT_EQ(simplify(a->add(a)), ctx_.const_int(dtypes::int8, -56));
  const UOp* u = ctx_.const_int(dtypes::uint8, 3);
  EXPECT_EQ(simplify(u->lt(ctx_.const_int(dtypes::uint8, 250))), ctx_.const_bool(true));
  EXPECT_EQ(
      simplify(ctx_.const_int(dtypes::int32, INT32_MIN)->idiv(ctx_.const_int(dtypes::int32, -1))),
      ctx_.const_int(dtypes::int32, INT32_MIN));
}

// The tables above hold at least 150 cases (the float, cast and wrap tests add more).
TEST(SymbolicCases, AtLeast150TableCases) {
  size_t n = kGivenCases.size() + kConstantFolding.size() + kIdentities.size() +
             kTermCombiningAndCanonicalOrder.size() + kDivModByBoundsAndExactDivision.size() +
             kDivModFactoringARemainder.size() + kDivModCongruenceAndNesting.size() +
             kDivModRecombination.size() + kDivModThatMustNotFold.size() +
             kDivModByVariables.size() + kComparisonsByBounds.size() +
             kComparisonsOfLinearForms.size() + kBooleanLogic.size() + kWhereFolding.size() +
             kMinMax.size();
  EXPECT_GE(n, 150u);
  std::printf("simplifier table cases: %zu\n", n);
}

}  // namespace
}  // namespace kiln
