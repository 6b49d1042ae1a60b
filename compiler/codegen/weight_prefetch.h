// Weight-stream prefetch (part of the linearize stage): where a kernel re-reads one panel of a
// weight across a loop inside its task (the position tiles of a 1x1 layer or a GEMM read the
// task's channel tile of the weight once per tile), the panel's first pass comes from memory
// while the FMAs wait, and the later passes hit L2 while the memory idles: the stream's time
// adds to the compute's (docs/performance.md, "Weights streamed from memory"). The plan spreads
// one prefetch per cache line of the *next* task's panel over the reduce steps of the current
// panel's later passes, so that the next panel is in cache when its first pass starts.
//
// The emitter (kernel_emitter.cc) issues, at the top of each reduce step k of reuse iteration
// l >= 1 of parallel iteration p, `per_step` prefetches (prefetcht0) of the lines
//   ((l - 1) * reduce_trips + k) * per_step + j,  j < per_step
// of the panel that starts `stride_bytes` after the current one. The rate completes the next
// panel two thirds of the way through the current one's later passes; the rest run on into the
// panel after it. Measured on 40 chained 49-row matmuls (320 <-> 1280 channels, 64 MB of
// weights, the 320 -> 1280 layers prefetched): spread evenly over all the later passes the
// prefetched layers ran 0.953x, done two thirds of the way 0.84-0.92x of the whole chain; the
// same chain with its weights hot 1.007-1.029x. resnet50 0.971-0.979x / 0.983-0.998x at 1 / 2
// threads, efficientnet_b0 0.971-0.980x / 0.975-0.987x (docs/performance.md, fourteenth
// session). Layers that re-read their panel more than kMaxPrefetchReuseTrips times (resnet50's
// 14x14 1x1 layers, 49 position tiles) lost 9-23% with it: their weight is a few percent of their
// time and the prefetches compete with the activations' own misses. squeezenet1_1's classifier
// (13x13, 22 tiles of 8 positions) gained: its launch 0.95x / 0.92x at 1 / 2 threads, the model
// 0.97x / 0.99x against an identical copy of the package (fifteenth session).
#pragma once

#include <cstdint>

#include "compiler/ir/uop.h"

namespace kiln {

class TargetInfo;

struct WeightPrefetch {
  int arg = -1;                   // the weight's argument (its DEFINE_GLOBAL's slot); -1: none
  const UOp* parallel = nullptr;  // the task's range: one panel per iteration
  const UOp* reuse = nullptr;     // the loop that re-reads the panel
  const UOp* reduce = nullptr;    // the loop the prefetches are spread along
  int64_t reuse_trips = 0;
  int64_t reduce_trips = 0;
  int64_t stride_bytes = 0;  // the next panel starts this far after the current one
  int64_t lines = 0;         // 64-byte lines per panel
  int64_t per_step = 0;      // prefetches per reduce step
  explicit operator bool() const { return arg >= 0; }
};

// The plan for a lowered kernel (after late_lower), or an empty one. Taken only where the weight
// (vector loads of one argument, ungated, along the parallel range and a reduce range) is one
// contiguous panel per parallel iteration, re-read by a loop of 2 to kMaxPrefetchReuseTrips
// iterations, at least kMinPrefetchPanelBytes, and at most a quarter of the target's L2 (the
// current and the next panel in half of it, beside the activations).
WeightPrefetch plan_weight_prefetch(const UOp* lowered_ast, const TargetInfo& t);

inline constexpr int64_t kMinPrefetchPanelBytes = 16 << 10;
inline constexpr int64_t kMaxPrefetchesPerStep = 4;
inline constexpr int64_t kMaxPrefetchReuseTrips = 24;
inline constexpr int64_t kCacheLine = 64;

}  // namespace kiln
