// kiln's freestanding math library, emitted as LLVM IR: no libm, vectorizable (every function
// works on scalars and vectors of float32), and accurate to a few ulp over the whole float32
// range. Accuracy and IEEE behaviour are documented in docs/codegen.md and tested against libm
// on a million points per function (tests/codegen/mathlib_test.cc).
//
//   exp, exp2        Cody-Waite reduction, degree-7 polynomial, exact scaling (subnormal results
//                    rounded once; one vscalefps on AVX-512); overflow to +inf, underflow to +0,
//                    NaN propagates
//   log, log2        exponent/mantissa split (subnormal inputs normalized), atanh series;
//                    log(0) = -inf, log(x<0) = NaN, log(+inf) = +inf
//   sin, cos         reduction by pi/2 in double (Cody-Waite below 2^19, Payne-Hanek with 144
//                    bits of 2/pi above), double-precision polynomials; sin/cos(+-inf) = NaN
//   tanh             odd polynomial below 0.625, 1 - 2/(exp(2|x|)+1) above
//   erf              odd polynomial below 1, 1 - exp(-x^2) P(x) up to 3.92, +-1 above
//   sigmoid          1/(1+e) or e/(1+e) with e = exp(-|x|) (accurate for large negative x)
//   float64          exp, exp2, log, log2, tanh, sigmoid, pow (mathlib_f64.cc): the same methods
//                    with double constants and longer exact Taylor/atanh series
//   pow              log2/exp2 in double precision, C99 special cases (pow(x,0)=1, pow(1,y)=1,
//                    negative bases with integer exponents, signed zeros and infinities)
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "compiler/ir/ops.h"

namespace kiln::mathlib {

// The module flag through which build_module lets exp and exp2 scale by AVX-512's vscalefps:
// 1 with AVX512F (16-lane vectors), 2 with AVX512VL as well (8- and 4-lane ones too).
inline constexpr const char* kMathlibScalefFlag = "kiln.x86-scalef";

// A call of kiln's `op` on float32 operands (scalar or vector; `y` only for POW). The function is
// created in the current module on first use, with internal linkage.
llvm::Value* emit(llvm::IRBuilder<>& b, Op op, llvm::Value* x, llvm::Value* y = nullptr);

// True if `op` is implemented here (for float32); provides_f64: also for float64 (exp, exp2,
// log, log2, tanh, sigmoid, pow; not yet sin, cos, erf).
bool provides(Op op);
bool provides_f64(Op op);

// Bodies, used by emit() (and declared for mathlib_trig.cc).
llvm::Value* exp_f32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* sincos_f32(llvm::IRBuilder<>& b, llvm::Value* x, bool cosine);

}  // namespace kiln::mathlib
