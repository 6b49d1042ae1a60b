// Task splits that follow the producer's (part of the optimize stage).
//
// The runtime's pool gives every thread the same share of each launch's tasks (thread 0 the
// first half of a 2-thread split, ...), so a kernel split along the axis its producer split
// reads, and overwrites, lines its own core wrote. Split along another axis, half of what each
// thread touches comes from the other core's cache, at a third of the bandwidth or less
// (tools/bench/cross_core_read) — on a host whose two vCPUs are far apart, mobilenet_v2's
// stride-2 depthwise layer at 112x112 ran 1.7x slower on 2 threads than split like its input.
//
// follow_producer_splits walks the launches in order, records along which axis of its output
// buffer each launch's tasks split (as that axis's stride in elements), and gives a later kernel
// the loop with the same stride (or twice it: a stride-2 window) as its split, when the kernel
// reads that buffer only where it writes (a depthwise convolution or a global pool of a product,
// over a 2-D window: every load of the buffer moves with every output loop, so no task re-reads
// another's inputs) or writes without reading (a padded map's border). Kernels that combine
// positions or channels (1x1 convolutions, matmuls) keep their split: theirs is a trade of
// re-read weights and inputs that the heuristics weigh (heuristics.cc, streaming_order). So do
// Winograd transform passes (free_to_follow says why).
#pragma once

#include <vector>

#include "compiler/opt/heuristics.h"
#include "compiler/opt/opts.h"
#include "compiler/schedule/plan.h"

namespace kiln {

// Re-optimizes, in launch order, the programs that should split along their producer's axis
// (default_opts' split_along), so that a consumer's new split is what the next kernel follows.
// `kernels` are the programs' current choices (their PARALLEL opts say how each producer split);
// `heuristic[i]` is false for a program whose opts were not the heuristics' (forced, tuned),
// which keeps them. A program launched more than once follows its first launch's producer.
void follow_producer_splits(const Plan& plan, const OptTarget& t,
                            const std::vector<bool>& heuristic,
                            std::vector<OptimizedKernel>& kernels);

}  // namespace kiln
