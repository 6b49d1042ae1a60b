// split_loops: an output loop that the kernel reads only through a quotient and a remainder by
// one constant c (a Winograd transform's loop over batch x 196 tiles, index r / 196 and
// r % 196 everywhere) becomes two loops, r = hi * c + lo, so that the accesses are affine in
// both and the lane axis runs over lo without per-lane divisions (gathers). merge_loops does
// the opposite for loops that every access walks as one; a loop is split only when the split
// removes divisions and remainders, so the two passes never undo each other.
//
// A loop of symbolic size E splits when E is a multiple of c for every value of its symbols
// (simplify(E % c) == 0): a symbolic batch merged with static tiles is split back into the
// symbolic batch loop and the static tile loop, which the heuristics can vectorize. A static
// loop splits only by a c of at least 64 (a static batch merged with a Winograd transform's
// tiles: resnet18 at batch 8 176 -> 110 ms, tools/bench/symbolic_shapes.py); other static
// kernels keep the loop shapes their heuristics were measured on (r / 14, r % 14 over 196
// positions vectorizes well enough), and every batch-1 benchmark package is byte-identical.
#pragma once

#include "compiler/ir/uop.h"

namespace kiln {

// `ast` with its splittable output loops split (the same node when none are). Loop ids stay
// dense and ordered: the inner part takes the id after the outer one.
const UOp* split_loops(const UOp* ast);

}  // namespace kiln
