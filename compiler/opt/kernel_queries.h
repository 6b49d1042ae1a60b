// What the heuristics read off a kernel AST: range sizes, the strides of an index along a range,
// the product's loads, the store, and the arithmetic of lanes and padding. Shared by the
// heuristics (heuristics.cc), the register tile (contraction_tile.cc) and the producer-following
// task split (split_affinity.cc); the applier (opts.h) has its own checks, for legality.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/uop.h"
#include "compiler/opt/opts.h"

namespace kiln {

// A range's size; for a symbolic range, its upper bound.
int64_t size_of(const UOp* r);
// True for a range whose size is known at run time only.
bool is_symbolic(const UOp* r);
// Whether padding n elements to groups of `lanes` wastes at most a quarter of the lanes.
bool worth_padding(int64_t n, int64_t lanes);
// The share of n's elements that are not padding when covered by groups of `amount`.
double used_share(int64_t n, int64_t amount);
// The largest divisor of n that is at most `cap`, preferring powers of two.
int64_t pick_divisor(int64_t n, int64_t cap);
// Lanes for a lane axis of n elements, at most cap (a divisor, or cap padded where masks are
// cheap).
int64_t lane_count(int64_t n, int64_t cap, int item, bool masked, bool masked_bytes = false);
// The loads of a contraction's products (the operands of the MUL under a REDUCE(ADD)).
std::vector<const UOp*> product_loads(const UOp* ast);

// The coefficient of range `r` in an index that is a sum of (range * constant) terms (a packed
// panel's lanes count as contiguous): 0 if the index does not use r, -1 if it uses it in some
// other way.
int64_t stride_of(const UOp* idx, const UOp* r);
// stride_of of a load's index.
int64_t load_stride(const UOp* load, const UOp* r);
bool depends_on(const UOp* u, const UOp* range);
// The block a load's index takes range `r` in: c when r occurs in it only as r / c (a grouped
// convolution's input, its group r / c of the output channels), the gcd of such c when there are
// several; 0 when r does not occur, -1 when it occurs otherwise.
int64_t block_of(const UOp* load, const UOp* r);
// True if every load that varies along `r` stays inside its buffer with r run to `padded`.
bool loads_fit_padded(const std::vector<const UOp*>& loads, const UOp* r, int64_t padded);
// The kernel's STORE (the AST's first source), or nullptr.
const UOp* store_of(const UOp* ast);
// The loop range that the store's index walks with stride 1 (the last output axis).
const UOp* contiguous_loop(const UOp* ast, const KernelRanges& kr);
// The bytes of its buffer a load can touch over the whole kernel (its index's bounds).
int64_t load_extent(const UOp* load);

// Iterations of loop r left after the opts' upcasts.
int64_t remaining_of(const UOp* r, const std::vector<Opt>& opts);
// The first of `loops` with iterations left after the opts' upcasts: the loop tasks split.
const UOp* outermost_loop(const std::vector<const UOp*>& loops, const std::vector<Opt>& opts);
// The bytes of each row a task stores when loop r, n iterations left after upcasts and `stride`
// elements of `item` bytes apart in the store, is split into max_tasks tasks: at 256 and more,
// neighbouring tasks do not write the same cache line of every plane.
int64_t row_share_bytes(const UOp* r, int64_t n, int64_t stride, int item, int max_tasks);

}  // namespace kiln
