// Copies of a kernel's store for its unrolled output loops (UNROLL of an output loop, opts.h),
// and the assignments of values to unrolled ranges that the expander's reduction copies share.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "compiler/ir/uop.h"

namespace kiln {

// The number of assignments of values to unrolled ranges `rs` (the product of their sizes).
int64_t unroll_assignments(const std::vector<const UOp*>& rs);
// Assignment c of `rs` in row-major order (the last range fastest): each range to its value.
std::unordered_map<const UOp*, const UOp*> unroll_assignment(const std::vector<const UOp*>& rs,
                                                             int64_t c);

// One copy of store `st` per assignment of the output loops unrolled whole: each copy has the
// loops' values as constants, so the gates that chose between expressions by them fold, and
// each copy computes its own expression only (the Winograd input transform's points). The
// copies share the loads of equal values. {st} when no output loop is unrolled.
std::vector<const UOp*> store_copies(const UOp* st);

}  // namespace kiln
