// Late lowering (pipeline stage `late_lower`): IR rewrites of an expanded kernel into what the
// LLVM emitter emits one-to-one, chosen by the target description. After this stage:
//
//  - Integer IDIV and MOD are the machine's instructions: their divisor is never 0 (nor -1 for
//    signed types). kiln's semantics (x / 0 = 0, x % 0 = 0, INT_MIN / -1 wraps) are made
//    explicit here with selects, unless a constant or the divisor's bounds prove them moot.
//  - On a target without rounding instructions (x86 before SSE4.1, where LLVM would call libm),
//    FLOOR, CEIL, TRUNC and ROUND are the add-and-subtract 2^p sequence.
//  - 16-bit floats are computed in float32: every float16/bfloat16 value becomes a float32
//    rounded to its precision after each operation. bfloat16 always, and float16 on a target
//    without conversion instructions (x86 before F16C), are then pure integer code on their
//    bits (their buffers are read and written as uint16); a target with conversion instructions
//    keeps float16 loads, stores and CASTs, which the emitter turns into them.
//  - DOT4 (four uint8 x int8 products summed into each int32 lane, made by the expander for
//    integer contractions) stays an instruction where the target has one — vpdpbusd on 16 lanes
//    with AVX-512 VNNI, 8 with AVX-VNNI, sdot on 4 with AArch64 dotprod (wider DOT4s split into
//    pieces of that width) — and is plain int32 code elsewhere (widen, multiply, add: pmaddwd on
//    x86).
//
// The index width is the other late decision: `index_bits` says whether every index value of a
// kernel fits 32 bits (the emitter then computes indices in i32).
#pragma once

#include "compiler/ir/uop.h"

namespace kiln {

class TargetInfo;

const UOp* late_lower(const UOp* expanded_ast, const TargetInfo& t);

// 32 if every index-typed node of the kernel has bounds within int32, else 64.
int index_bits(const UOp* ast);

}  // namespace kiln
