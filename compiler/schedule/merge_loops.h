// merge_loops: adjacent output loops that every access walks as one (a 1x1 convolution's H and
// W: index h*13 + w everywhere) become one loop over their product, so that the lane axis and
// the register tile see 169 positions instead of a 13-wide row padded to 16 lanes 13 times.
//
// Loops A (outer, size a) and B (inner, size b) merge when replacing A by M / b and B by M % b
// (M a new loop of size a*b) simplifies to an AST with no division or remainder of M left: every
// index, gate and value uses A and B only as A*b*s + B*s. Windows over a padded map (index
// (h + kh)*(W + 2) + w) and gates on a coordinate keep their loops. Output loops keep ids 0..n-1
// in order (rangeify's convention), so identical kernels still have identical ASTs.
#pragma once

#include "compiler/ir/uop.h"

namespace kiln {

// `ast` with its mergeable output loops merged (the same node when none are).
const UOp* merge_loops(const UOp* ast);

}  // namespace kiln
