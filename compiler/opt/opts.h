// Kernel optimizations as range substitutions. Each opt replaces one RANGE of a kernel AST by an
// expression of new ranges, and the simplifier cleans up the index math:
//
//   UPCAST   r -> r_o*k + r_u   r_u (kind Upcast) becomes vector lanes / registers
//   UNROLL   r -> r_o*k + r_u   on a reduce range; r_u (kind Unroll) is unrolled in the loop body;
//            on an output loop (taken whole), one copy of the store per iteration
//   TILE     r -> r_o*k + r_i   both loops; r_o becomes the outermost loop (cache blocking)
//   PARALLEL r (the outermost loop) is split across `k` tasks (kind Parallel)
//
// Loops nest in range-id order: after the opts, ranges are renumbered so that ids follow the
// loop order (loops, then reduce ranges, then upcast/unroll ranges).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/uop.h"
#include "compiler/support/error.h"

namespace kiln {

enum class OptKind : uint8_t { Upcast, Unroll, Tile, Parallel };
const char* opt_kind_name(OptKind k);

struct Opt {
  OptKind kind;
  int64_t range_id;  // the id of the range in the AST the opt is applied to (before renumbering)
  int64_t amount;
  bool operator==(const Opt&) const = default;
  std::string str() const;  // "UPCAST(r2,8)"
};

struct OptimizedKernel {
  const UOp* ast = nullptr;
  int64_t ntasks = 1;
  std::vector<Opt> opts;
};

// The applier is where legality lives: heuristics and beam search propose, and an opt it
// refuses is not applied (choose_opts drops it). `index` is the refused opt's position.
class OptRefused : public Error {
 public:
  OptRefused(size_t index, const std::string& msg) : Error(msg), index_(index) {}
  size_t index() const { return index_; }

 private:
  size_t index_;
};

// Applies `opts` in order. Throws OptRefused naming the opt if it is not valid for the kernel
// (unknown range, wrong range kind, an amount that neither divides the range nor pads it by at
// most kMaxUpcastPadding, too many lanes, a split that is not of the outermost loop).
OptimizedKernel apply_opts(const UOp* ast, const std::vector<Opt>& opts);

// Range ids and sizes of a kernel by kind, in loop order.
struct KernelRanges {
  std::vector<const UOp*> loops;    // Loop and Parallel ranges, outermost first
  std::vector<const UOp*> reduces;  // Reduce ranges
  std::vector<const UOp*> upcasts;  // Upcast and Unroll ranges
};
KernelRanges kernel_ranges(const UOp* ast);

// The maximum number of vector lanes (product of upcast sizes) a kernel may have: 18 AVX-512
// accumulators (9 positions x 32 channels, contraction_tile.cc's odd tile one position over the
// budget).
inline constexpr int64_t kMaxUpcastLanes = 288;
// The most copies of a store an output loop unrolled whole makes (UNROLL of an output loop:
// one store per iteration, each folding the gates that select its expression).
inline constexpr int64_t kMaxUnrolledOutputs = 64;
// An upcast may pad its range to whole groups (the extra lanes masked) by at most this fraction
// of the padded lanes: beyond it, most of a group would compute nothing.
inline constexpr int64_t kMaxUpcastPaddingDenominator = 3;  // a third

}  // namespace kiln
