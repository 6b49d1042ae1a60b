// What an integer dot-product contraction is made of: a product of a uint8 value and an int8
// value, each widened to int32 (CAST_int32(u) * CAST_int32(s), either order). The kernel
// optimizer recognizes such contractions to size their tiles; the expander turns their unrolled
// sums into DOT4s. One definition, so the two cannot disagree.
#pragma once

#include <utility>

#include "compiler/ir/uop.h"

namespace kiln {

// (u, s) if `p` is that product, u the uint8 and s the int8 factor; (nullptr, nullptr) otherwise.
std::pair<const UOp*, const UOp*> byte_product_factors(const UOp* p);

}  // namespace kiln
