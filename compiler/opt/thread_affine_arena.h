// Arena offsets chosen so that a line's next tenant is written by the thread whose core holds it
// (part of the optimize stage, in packages for several threads).
//
// The memory plan (schedule/memory_plan.h) reuses the arena's bytes by lifetimes alone. At T
// threads each line of a buffer is written by a known thread (the runtime's pool gives thread t
// the same share of every group's tasks; opt/cross_core_traffic.h), so when a buffer takes
// bytes whose previous tenant another core wrote or read, each of its writes must first take the
// line from that core: on a host whose vCPUs are far apart, the most expensive access there is
// (tools/bench/cross_core_read). With no reuse at all, U-Net's 2-thread package ran 0.83 of its
// time with the vCPUs far apart but 1.18 with them near (an arena 4.5x larger, out of cache).
//
// place_arena_for_threads places the slots again as the memory plan does (largest first, into
// the gaps among the slots live with each), but each at the offset where the fewest of its lines
// change cores between it and the tenants before and after it, rather than in the smallest gap;
// then moves each to its best offset among all the others, three times, keeping the placement
// the model rates best. The new offsets are kept only where the arena is no larger and the whole
// run, modelled as cross_core_traffic does (two runs, the second counted), moves fewer lines
// between cores: U-Net 8% fewer, resnet18 8% (6% as AVX2 code), resnet50 5%. tools/bench/ab_bench
// on an AMD EPYC Zen 4, 2 threads: U-Net 0.972 with the vCPUs far apart and 0.987 near,
// resnet18 as AVX2 code 0.972-0.985 near.
#pragma once

#include <vector>

#include "compiler/opt/opts.h"
#include "compiler/schedule/plan.h"

namespace kiln {

// What place_arena_for_threads did: the slots it moved (0: the plan stands) and the lines the
// model moves between cores per run before and after.
struct ArenaPlacement {
  int64_t slots_moved = 0;
  int64_t lines_before = 0, lines_after = 0;
};

// Re-places plan.memory's slots for `threads` threads (kernels: the optimized programs, their
// splits). Does nothing at one thread, or where an index cannot be walked at compile time.
ArenaPlacement place_arena_for_threads(Plan& plan, const std::vector<OptimizedKernel>& kernels,
                                       int threads);

}  // namespace kiln
