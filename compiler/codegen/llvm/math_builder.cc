#include "compiler/codegen/llvm/math_builder.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>

#include <limits>

namespace kiln::mathlib {

MathBuilder::MathBuilder(llvm::IRBuilder<>& builder, llvm::Type* t) : b(builder), fty(t) {
  llvm::Type* el = t->getScalarType();
  is_double = el->isDoubleTy();
  lanes = t->isVectorTy() ? llvm::cast<llvm::FixedVectorType>(t)->getNumElements() : 0;
  ity = with_elem(is_double ? b.getInt64Ty() : b.getInt32Ty());
  bty = with_elem(b.getInt1Ty());
}

llvm::Type* MathBuilder::with_elem(llvm::Type* elem) const {
  return lanes ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(elem, lanes)) : elem;
}

llvm::Value* MathBuilder::f(double v) const {
  return llvm::ConstantFP::get(fty, v);
}
llvm::Value* MathBuilder::i(int64_t v) const {
  return llvm::ConstantInt::get(ity, static_cast<uint64_t>(v), true);
}
llvm::Value* MathBuilder::inf() const {
  return f(std::numeric_limits<double>::infinity());
}
llvm::Value* MathBuilder::nan() const {
  return f(std::numeric_limits<double>::quiet_NaN());
}

llvm::Value* MathBuilder::fma(llvm::Value* a, llvm::Value* x, llvm::Value* c) {
  // fmuladd: fused where the target has FMA, a multiply and an add elsewhere (never a libm call).
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {fty}, {a, x, c});
}

llvm::Value* MathBuilder::fabs(llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}

llvm::Value* MathBuilder::poly(llvm::Value* x, std::span<const double> c) {
  llvm::Value* acc = f(c.back());
  for (size_t k = c.size() - 1; k-- > 0;) acc = fma(acc, x, f(c[k]));
  return acc;
}

llvm::Value* MathBuilder::round_small(llvm::Value* x) {
  llvm::Value* magic = f(is_double ? 6755399441055744.0 : 12582912.0);  // 1.5 * 2^52 / 1.5 * 2^23
  return sub(add(x, magic), magic);
}

llvm::Value* MathBuilder::trunc(llvm::Value* x) {
  // Values of magnitude >= 2^p are integers already; below, round to nearest and step toward 0.
  llvm::Value* big = f(is_double ? 4503599627370496.0 : 8388608.0);
  llvm::Value* ax = fabs(x);
  // ax + 2^p lies in [2^p, 2^(p+1)), where the spacing is 1: one rounding to an integer. (The
  // 1.5 * 2^p of round_small would round to even integers above 2^(p-1).)
  llvm::Value* r = sub(add(ax, big), big);
  r = sel(b.CreateFCmpOGT(r, ax), sub(r, f(1.0)), r);
  r = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
  return sel(b.CreateFCmpUGE(ax, big), x, r);
}

llvm::Value* MathBuilder::pow2i(llvm::Value* k) {
  int bias = is_double ? 1023 : 127, shift = is_double ? 52 : 23;
  return from_int_bits(b.CreateShl(b.CreateAdd(k, i(bias)), i(shift)));
}

llvm::Value* MathBuilder::ldexp(llvm::Value* x, llvm::Value* k) {
  llvm::Value* k1 = b.CreateAShr(k, i(1));
  llvm::Value* k2 = b.CreateSub(k, k1);
  return mul(mul(x, pow2i(k1)), pow2i(k2));
}

llvm::Value* MathBuilder::to_int(llvm::Value* x) {
  // Clamped by selects, then a plain conversion: LLVM's x86 backend scalarizes a vector
  // llvm.fptosi.sat (one vcvttss2si per lane: exp, sigmoid and SiLU ran 3x slower for it). The
  // clamp is the largest float below the integer range's end (2^31 - 128, 2^63 - 1024), NaN is 0.
  llvm::Value* c = f(is_double ? 9223372036854774784.0 : 2147483520.0);
  llvm::Value* xs = sel(b.CreateFCmpUNO(x, x), f(0.0), x);
  xs = sel(b.CreateFCmpOGT(xs, c), c,
           sel(b.CreateFCmpOLT(xs, b.CreateFNeg(c)), b.CreateFNeg(c), xs));
  return b.CreateFPToSI(xs, ity);
}

}  // namespace kiln::mathlib
