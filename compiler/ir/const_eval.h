// Evaluation of ALU ops and casts on constant values, with kiln's fixed semantics. The simplifier,
// the reference interpreter and the eager tensor evaluator all use this one definition, and the
// LLVM backend emits code with the same behaviour.
//
// Semantics (documented once, here):
//  - Integers wrap (two's complement) to their width; `index` is a 64-bit signed integer.
//  - IDIV truncates toward zero and MOD takes the sign of the dividend (C). Division or modulo by
//    zero gives 0, and INT_MIN / -1 wraps to INT_MIN (INT_MIN % -1 is 0): never a trap.
//  - SHL/SHR by an amount outside [0, bits) gives 0 (SHR of a negative signed value gives -1);
//    SHR is arithmetic for signed types and logical for unsigned ones.
//  - Float ops round to the dtype's precision (float32 math is done in float). MAX(a, b) is
//    `a < b ? b : a` and MIN(a, b) is `b < a ? b : a`: a NaN in the first operand propagates.
//  - MOD on floats is C fmod (the sign of the dividend). ROUND is round-half-to-even. CAST float ->
//  int saturates and maps NaN to 0; any -> bool is
//    `x != 0`; bool -> any is 0 or 1.
#pragma once

#include <optional>
#include <span>

#include "compiler/ir/dtype.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/uop.h"

namespace kiln {

// `v` converted to the representation of scalar dtype `d` (wrapped, rounded).
ConstValue normalize_const(DType d, ConstValue v);

// ALU `op` applied to `args` whose (scalar) operand dtype is `d` (for WHERE: the dtype of the
// two value operands; args[0] is the bool condition). Comparisons return a bool 0/1.
ConstValue eval_alu(Op op, DType d, std::span<const ConstValue> args);

ConstValue eval_cast(DType from, DType to, ConstValue v);

// The identity of a reduction: ADD 0, MUL 1, MAX -inf (or the dtype's minimum), MIN +inf (or
// the maximum). Reductions start from it and apply `acc = op(acc, value)` in order.
ConstValue reduce_identity(Op op, DType d);
ConstValue eval_bitcast(DType from, DType to, ConstValue v);

}  // namespace kiln
