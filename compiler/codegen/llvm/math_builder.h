// Small helpers for emitting elementwise float math as LLVM IR on scalars or vectors alike:
// splat constants, fma, Horner polynomials, bit casts between float and int lanes.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <span>

namespace kiln::mathlib {

class MathBuilder {
 public:
  // `fty` is float or double, or a vector of them.
  MathBuilder(llvm::IRBuilder<>& b, llvm::Type* fty);

  llvm::IRBuilder<>& b;
  llvm::Type* fty;  // the float type (scalar or vector)
  llvm::Type* ity;  // the same-width integer type (i32/i64, scalar or vector)
  llvm::Type* bty;  // i1 (scalar or vector)
  unsigned lanes;   // 0 for scalars
  bool is_double;

  llvm::Type* with_elem(llvm::Type* elem) const;  // elem, or a vector of `lanes` elem
  llvm::Value* f(double v) const;
  llvm::Value* i(int64_t v) const;
  llvm::Value* fma(llvm::Value* a, llvm::Value* x, llvm::Value* c);  // llvm.fmuladd
  llvm::Value* add(llvm::Value* a, llvm::Value* c) { return b.CreateFAdd(a, c); }
  llvm::Value* sub(llvm::Value* a, llvm::Value* c) { return b.CreateFSub(a, c); }
  llvm::Value* mul(llvm::Value* a, llvm::Value* c) { return b.CreateFMul(a, c); }
  llvm::Value* div(llvm::Value* a, llvm::Value* c) { return b.CreateFDiv(a, c); }
  llvm::Value* sel(llvm::Value* c, llvm::Value* t, llvm::Value* e) {
    return b.CreateSelect(c, t, e);
  }
  llvm::Value* fabs(llvm::Value* x);
  // Horner: c[0] + x*(c[1] + x*(c[2] + ...)), with fma.
  llvm::Value* poly(llvm::Value* x, std::span<const double> c);
  // Round to nearest even, for |x| < 2^22 (float) or 2^51 (double): x + 1.5*2^p - 1.5*2^p.
  llvm::Value* round_small(llvm::Value* x);
  // Round toward zero, any magnitude (no rounding instruction or libm needed).
  llvm::Value* trunc(llvm::Value* x);
  llvm::Value* to_int_bits(llvm::Value* x) { return b.CreateBitCast(x, ity); }
  llvm::Value* from_int_bits(llvm::Value* x) { return b.CreateBitCast(x, fty); }
  // 2^k for integer lanes k in the normal exponent range.
  llvm::Value* pow2i(llvm::Value* k);
  // x * 2^k for k in [2*min_exp, 2*max_exp] (two exact scalings, one rounding).
  llvm::Value* ldexp(llvm::Value* x, llvm::Value* k);
  // Saturating float -> int of the same width (NaN -> 0).
  llvm::Value* to_int(llvm::Value* x);
  llvm::Value* isnan(llvm::Value* x) { return b.CreateFCmpUNO(x, x); }
  llvm::Value* inf() const;
  llvm::Value* nan() const;
};

}  // namespace kiln::mathlib
