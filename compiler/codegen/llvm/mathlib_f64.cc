// float64 math: the same reductions as the float32 functions with double-precision constants
// and longer series (Taylor coefficients are exact rationals, so nothing here is fitted).
// Accuracy is measured against libm in tests/codegen/mathlib_test.cc and listed in
// docs/codegen.md.
#include "compiler/codegen/llvm/mathlib_f64.h"

#include <cmath>
#include <utility>
#include <vector>

namespace kiln::mathlib {

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLog2e = 1.44269504088896340736;
// fdlibm's split of ln 2: the high part has 32 trailing zero bits, so k * kLn2Hi is exact for
// every exponent k a double can have.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;

// log(a) = e ln2 + log1p(f) with a = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)); returns {e, l}
// with l = log1p(f) from the atanh series (|s| < 0.172, so 11 terms reach 1e-18).
std::pair<llvm::Value*, llvm::Value*> log_parts_f64(MathBuilder& d, llvm::Value* a) {
  llvm::IRBuilder<>& b = d.b;
  llvm::Value* sub = b.CreateFCmpOLT(a, d.f(2.2250738585072014e-308));
  llvm::Value* as = d.sel(sub, d.mul(a, d.f(4503599627370496.0)), a);  // * 2^52
  llvm::Value* bits = d.to_int_bits(as);
  llvm::Value* e = b.CreateSub(b.CreateLShr(bits, d.i(52)), d.i(1023));
  e = b.CreateSub(e, d.sel(sub, d.i(52), d.i(0)));
  llvm::Value* mant = d.from_int_bits(
      b.CreateOr(b.CreateAnd(bits, d.i(0xfffffffffffffLL)), d.i(0x3ff0000000000000LL)));
  llvm::Value* big = b.CreateFCmpOGT(mant, d.f(1.41421356237309504880));
  mant = d.sel(big, d.mul(mant, d.f(0.5)), mant);
  e = d.sel(big, b.CreateAdd(e, d.i(1)), e);
  llvm::Value* f = d.sub(mant, d.f(1.0));
  llvm::Value* s = d.div(f, d.add(d.f(2.0), f));
  llvm::Value* z = d.mul(s, s);
  std::vector<double> series;
  for (int k = 1; k <= 11; ++k) series.push_back(2.0 / (2 * k + 1));
  llvm::Value* R = d.mul(z, d.poly(z, series));
  llvm::Value* l = d.sub(f, d.mul(s, d.sub(f, R)));  // f - s*(f - R) = 2s + 2s^3/3 + ...
  return {b.CreateSIToFP(e, d.fty), l};
}

llvm::Value* log_specials(MathBuilder& d, llvm::Value* a, llvm::Value* res) {
  llvm::IRBuilder<>& b = d.b;
  res = d.sel(b.CreateFCmpOEQ(a, d.f(0)), d.f(-INFINITY), res);
  res = d.sel(b.CreateFCmpOEQ(a, d.inf()), d.inf(), res);
  return d.sel(b.CreateFCmpULT(a, d.f(0)), d.nan(), res);  // negative or NaN
}

// e^x - 1 without cancellation near 0: a series below 0.35 (18 terms reach 1e-19), exp above.
llvm::Value* expm1_f64(MathBuilder& d, llvm::Value* x) {
  std::vector<double> c;
  double v = 1.0;
  for (int n = 1; n <= 18; ++n) {
    c.push_back(v);  // 1/n!
    v /= n + 1;
  }
  llvm::Value* small = d.mul(x, d.poly(x, c));
  llvm::Value* big = d.sub(exp_f64(d, x), d.f(1.0));
  return d.sel(d.b.CreateFCmpOLT(d.fabs(x), d.f(0.35)), small, big);
}

}  // namespace

std::vector<double> taylor_exp(int degree, double scale) {
  std::vector<double> c;
  double v = 1.0;
  for (int n = 0; n <= degree; ++n) {
    c.push_back(v);
    v *= scale / (n + 1);
  }
  return c;
}

llvm::Value* log2_f64_nonneg(MathBuilder& d, llvm::Value* a) {
  auto [e, l] = log_parts_f64(d, a);
  llvm::Value* res = d.fma(l, d.f(kLog2e), e);
  res = d.sel(d.b.CreateFCmpOEQ(a, d.f(0)), d.f(-INFINITY), res);
  res = d.sel(d.b.CreateFCmpOEQ(a, d.inf()), d.inf(), res);
  return d.sel(d.isnan(a), a, res);
}

llvm::Value* exp2_f64(MathBuilder& d, llvm::Value* t) {
  llvm::IRBuilder<>& b = d.b;
  llvm::Value* tc = d.sel(b.CreateFCmpOGT(t, d.f(1100)), d.f(1100),
                          d.sel(b.CreateFCmpOLT(t, d.f(-1100)), d.f(-1100), t));
  llvm::Value* kf = d.round_small(tc);
  llvm::Value* r = d.sub(tc, kf);
  llvm::Value* p = d.poly(r, taylor_exp(14, kLn2));
  llvm::Value* res = d.ldexp(p, d.to_int(kf));
  res = d.sel(b.CreateFCmpOGT(t, d.f(1100)), d.inf(), res);
  return d.sel(b.CreateFCmpOLT(t, d.f(-1100)), d.f(0), res);
}

llvm::Value* pow_f64(MathBuilder& d, llvm::Value* xd, llvm::Value* yd) {
  llvm::IRBuilder<>& b = d.b;
  llvm::Value* ax = d.fabs(xd);
  llvm::Value* r = exp2_f64(d, d.mul(yd, log2_f64_nonneg(d, ax)));
  llvm::Value* yt = d.trunc(yd);
  llvm::Value* is_int = b.CreateFCmpOEQ(yt, yd);
  llvm::Value* half = d.mul(yd, d.f(0.5));
  llvm::Value* odd = b.CreateAnd(is_int, b.CreateFCmpUNE(d.trunc(half), half));
  llvm::Value* neg = b.CreateICmpSLT(d.to_int_bits(xd), d.i(0));  // sign bit (also -0, -inf)
  llvm::Value* finite_x = b.CreateFCmpOLT(ax, d.inf());
  llvm::Value* finite_y = b.CreateFCmpOLT(d.fabs(yd), d.inf());
  r = d.sel(b.CreateAnd(neg, odd), d.mul(r, d.f(-1.0)), r);
  r = d.sel(b.CreateAnd(b.CreateAnd(b.CreateFCmpOLT(xd, d.f(0)), finite_x),
                        b.CreateAnd(b.CreateNot(is_int), finite_y)),
            d.nan(), r);
  // |x| == 1 with y = +-inf gives 1 (the product inf * 0 would be NaN).
  r = d.sel(b.CreateAnd(b.CreateFCmpOEQ(ax, d.f(1.0)), b.CreateNot(finite_y)), d.f(1.0), r);
  r = d.sel(d.isnan(yd), yd, r);
  r = d.sel(b.CreateFCmpOEQ(yd, d.f(0)), d.f(1.0), r);
  return d.sel(b.CreateFCmpOEQ(xd, d.f(1.0)), d.f(1.0), r);
}

llvm::Value* exp_f64(MathBuilder& d, llvm::Value* x) {
  llvm::IRBuilder<>& b = d.b;
  llvm::Value* xc = d.sel(b.CreateFCmpOGT(x, d.f(710)), d.f(710),
                          d.sel(b.CreateFCmpOLT(x, d.f(-746)), d.f(-746), x));
  llvm::Value* kf = d.round_small(d.mul(xc, d.f(kLog2e)));
  llvm::Value* r = d.fma(b.CreateFNeg(kf), d.f(kLn2Hi), xc);
  r = d.fma(b.CreateFNeg(kf), d.f(kLn2Lo), r);
  // |r| <= 0.347: the degree-13 remainder is below 4e-18.
  llvm::Value* res = d.ldexp(d.poly(r, taylor_exp(13, 1.0)), d.to_int(kf));
  res = d.sel(b.CreateFCmpOGT(x, d.f(709.782712893384)), d.inf(), res);
  return d.sel(b.CreateFCmpOLT(x, d.f(-745.1332191019412)), d.f(0), res);
}

llvm::Value* log_f64(MathBuilder& d, llvm::Value* x) {
  auto [e, l] = log_parts_f64(d, x);
  llvm::Value* res = d.add(d.fma(e, d.f(kLn2Hi), l), d.mul(e, d.f(kLn2Lo)));
  return log_specials(d, x, res);
}

llvm::Value* log2_f64(MathBuilder& d, llvm::Value* x) {
  auto [e, l] = log_parts_f64(d, x);
  return log_specials(d, x, d.fma(l, d.f(kLog2e), e));
}

llvm::Value* tanh_f64(MathBuilder& d, llvm::Value* x) {
  llvm::IRBuilder<>& b = d.b;
  llvm::Value* a = d.fabs(x);
  llvm::Value* em = expm1_f64(d, d.mul(d.sel(b.CreateFCmpOGT(a, d.f(20)), d.f(20), a), d.f(2.0)));
  llvm::Value* t = d.div(em, d.add(em, d.f(2.0)));  // tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2)
  t = d.sel(b.CreateFCmpOGT(a, d.f(20)), d.f(1.0), t);
  t = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, t, x);
  return d.sel(d.isnan(x), x, t);
}

llvm::Value* sigmoid_f64(MathBuilder& d, llvm::Value* x) {
  llvm::Value* e = exp_f64(d, d.mul(d.fabs(x), d.f(-1.0)));
  llvm::Value* den = d.add(d.f(1.0), e);
  return d.sel(d.b.CreateFCmpOGE(x, d.f(0)), d.div(d.f(1.0), den), d.div(e, den));
}

}  // namespace kiln::mathlib
