// Double-precision bodies of kiln's math library (scalar or vector of double), shared by the
// float64 entry points and by float32 pow, which works in double internally.
#pragma once

#include "compiler/codegen/llvm/math_builder.h"

namespace kiln::mathlib {

// log2(a) for a >= 0 (0 -> -inf, inf -> inf, NaN -> NaN); negative a is the caller's business.
llvm::Value* log2_f64_nonneg(MathBuilder& d, llvm::Value* a);
// 2^t (overflow to inf, underflow to 0).
llvm::Value* exp2_f64(MathBuilder& d, llvm::Value* t);
// The double body of pow, C99 special cases included.
llvm::Value* pow_f64(MathBuilder& d, llvm::Value* x, llvm::Value* y);

llvm::Value* exp_f64(MathBuilder& d, llvm::Value* x);
llvm::Value* log_f64(MathBuilder& d, llvm::Value* x);
llvm::Value* log2_f64(MathBuilder& d, llvm::Value* x);
llvm::Value* tanh_f64(MathBuilder& d, llvm::Value* x);
llvm::Value* sigmoid_f64(MathBuilder& d, llvm::Value* x);

// Taylor coefficients of exp(scale * r): c[n] = scale^n / n!.
std::vector<double> taylor_exp(int degree, double scale);

}  // namespace kiln::mathlib
