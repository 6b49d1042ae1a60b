#include "compiler/ir/const_eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compiler/support/half.h"

namespace kiln {
namespace {

ConstValue I(int64_t v) {
  return ConstValue::of_int(v);
}
ConstValue F(double v) {
  return ConstValue::of_float(v);
}

int64_t ev(Op op, DType d, int64_t a, int64_t b) {
  ConstValue args[2] = {I(a), I(b)};
  return eval_alu(op, d, args).i;
}
double evf(Op op, DType d, double a, double b) {
  ConstValue args[2] = {F(a), F(b)};
  return eval_alu(op, d, args).f;
}

TEST(ConstEval, IntegerDivisionTruncatesAndNeverTraps) {
  EXPECT_EQ(ev(Op::IDIV, dtypes::int32, 7, 2), 3);
  EXPECT_EQ(ev(Op::IDIV, dtypes::int32, -7, 2), -3);
  EXPECT_EQ(ev(Op::MOD, dtypes::int32, -7, 2), -1);
  EXPECT_EQ(ev(Op::MOD, dtypes::int32, 7, -2), 1);
  EXPECT_EQ(ev(Op::IDIV, dtypes::int32, 7, 0), 0);
  EXPECT_EQ(ev(Op::MOD, dtypes::int32, 7, 0), 0);
  EXPECT_EQ(ev(Op::IDIV, dtypes::int32, INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(ev(Op::MOD, dtypes::int32, INT32_MIN, -1), 0);
  EXPECT_EQ(ev(Op::IDIV, dtypes::int64, INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(ev(Op::IDIV, dtypes::uint32, -2, 2), 0x7FFFFFFF);  // -2 as uint32 is 0xFFFFFFFE
}

TEST(ConstEval, IntegersWrapToTheirWidth) {
  EXPECT_EQ(ev(Op::ADD, dtypes::int8, 127, 1), -128);
  EXPECT_EQ(ev(Op::MUL, dtypes::uint8, 16, 16), 0);
  EXPECT_EQ(ev(Op::ADD, dtypes::int64, INT64_MAX, 1), INT64_MIN);
  EXPECT_EQ(ev(Op::CMPLT, dtypes::uint8, 200, 100), 0);
  EXPECT_EQ(ev(Op::CMPLT, dtypes::int8, -56, 100), 1);
}

TEST(ConstEval, ShiftsOutOfRangeAreDefined) {
  EXPECT_EQ(ev(Op::SHL, dtypes::int32, 1, 31), INT32_MIN);
  EXPECT_EQ(ev(Op::SHL, dtypes::int32, 1, 32), 0);
  EXPECT_EQ(ev(Op::SHR, dtypes::int32, -8, 1), -4);  // arithmetic
  EXPECT_EQ(ev(Op::SHR, dtypes::int32, -8, 40), -1);
  EXPECT_EQ(ev(Op::SHR, dtypes::uint8, 0x80, 7), 1);  // logical
  EXPECT_EQ(ev(Op::SHR, dtypes::uint8, 0x80, 8), 0);
}

TEST(ConstEval, FloatsRoundToTheirPrecision) {
  EXPECT_EQ(evf(Op::ADD, dtypes::float32, 1.0, 1e-8), 1.0);  // below float32 epsilon
  EXPECT_NE(evf(Op::ADD, dtypes::float64, 1.0, 1e-8), 1.0);
  EXPECT_EQ(evf(Op::MUL, dtypes::float32, 1e30, 1e30), std::numeric_limits<double>::infinity());
  EXPECT_EQ(evf(Op::ADD, dtypes::float16, 2048.0, 1.0), 2048.0);  // float16 spacing is 2 here
  EXPECT_EQ(normalize_const(dtypes::bfloat16, F(1.00390625)).f, 1.0);
}

TEST(ConstEval, MaxAndMinPropagateANaNInTheFirstOperand) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(evf(Op::MAX, dtypes::float32, nan, 1.0)));
  EXPECT_EQ(evf(Op::MAX, dtypes::float32, 1.0, nan), 1.0);
  EXPECT_TRUE(std::isnan(evf(Op::MIN, dtypes::float32, nan, 1.0)));
  EXPECT_EQ(evf(Op::MAX, dtypes::float32, -0.0, 0.0), 0.0);
}

TEST(ConstEval, RoundIsHalfToEven) {
  ConstValue a[1] = {F(2.5)};
  EXPECT_EQ(eval_alu(Op::ROUND, dtypes::float32, a).f, 2.0);
  a[0] = F(3.5);
  EXPECT_EQ(eval_alu(Op::ROUND, dtypes::float32, a).f, 4.0);
  a[0] = F(-2.5);
  EXPECT_EQ(eval_alu(Op::ROUND, dtypes::float32, a).f, -2.0);
}

TEST(ConstEval, CastsSaturateAndMapNaNToZero) {
  EXPECT_EQ(eval_cast(dtypes::float32, dtypes::int32, F(1e20)).i, INT32_MAX);
  EXPECT_EQ(eval_cast(dtypes::float32, dtypes::int32, F(-1e20)).i, INT32_MIN);
  EXPECT_EQ(eval_cast(dtypes::float32, dtypes::uint8, F(-5.0)).i, 0);
  EXPECT_EQ(eval_cast(dtypes::float32, dtypes::int32, F(std::nan(""))).i, 0);
  EXPECT_EQ(eval_cast(dtypes::float32, dtypes::int32, F(-3.9)).i, -3);
  EXPECT_EQ(eval_cast(dtypes::int32, dtypes::uint8, I(-1)).i, 255);
  EXPECT_EQ(eval_cast(dtypes::int32, dtypes::bool_, I(-7)).i, 1);
  EXPECT_EQ(eval_cast(dtypes::float32, dtypes::bool_, F(0.5)).i, 1);
  EXPECT_EQ(eval_cast(dtypes::uint64, dtypes::float64, I(-1)).f, 18446744073709551616.0);
  EXPECT_EQ(eval_cast(dtypes::float64, dtypes::float32, F(0.1)).f, static_cast<double>(0.1f));
}

TEST(ConstEval, BitcastsReinterpretBits) {
  EXPECT_EQ(eval_bitcast(dtypes::float32, dtypes::int32, F(1.0)).i, 0x3f800000);
  EXPECT_EQ(eval_bitcast(dtypes::int32, dtypes::float32, I(0x40000000)).f, 2.0);
  EXPECT_EQ(eval_bitcast(dtypes::float16, dtypes::uint16, F(1.0)).i, 0x3c00);
  EXPECT_EQ(eval_bitcast(dtypes::int16, dtypes::float16, I(0x7c00)).f,
            std::numeric_limits<double>::infinity());
}

TEST(ConstEval, Float16ConversionRoundsToNearestEvenIncludingSubnormals) {
  // Exhaustive: every float16 bit pattern survives a round trip through float.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = half_bits_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half_bits(f), b) << std::hex << b;
  }
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(float_to_half_bits(5.96e-8f), 0x0001);  // smallest subnormal
}

}  // namespace
}  // namespace kiln
