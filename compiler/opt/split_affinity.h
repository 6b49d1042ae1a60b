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
// buffer each launch's tasks split (its stride and the elements it spans), and gives a later
// kernel the loop that walks the same span of that buffer in every access (the same axis, a
// stride-2 window's, or the rows of positions its producer walked as one loop) as its split:
// depthwise layers and global pools of a product (2-D windows), pooling windows (in bands of
// rows), padded copies, elementwise kernels, and a padded map's border (which follows the writer
// of the interior). Contractions over one reduce range (1x1 layers, matmuls, Winograd passes and
// products) follow only when their launch (a program launched more than once: its first) is
// alone in its parallel group and every later kernel reading its output already splits along
// that axis, alone in its group too: resnet50's 64 -> 256 layers with the residual added, read by
// the next block's 1x1 layers split by rows (a group of several launches runs as one list of
// tasks, not in per-launch shares). Otherwise they keep their split: theirs is a trade of re-read
// weights and inputs that the heuristics weigh (heuristics.cc, streaming_order), and following
// unconditionally lost whole models time (split_affinity.cc, free_to_follow). Forced and tuned
// kernels keep theirs. In a package for several threads a batched product split along an axis
// its readers sum over (a Winograd product's points) splits along its output channels where the
// readers keep them, and the readers along them (split_where_readers_keep).
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
// In a package for several `threads`, a batched product whose tasks split an axis that every
// reader sums over (a Winograd product's points) splits along an output loop its readers keep
// (its output channels), and they along it too (split_where_readers_keep in the .cc).
void follow_producer_splits(const Plan& plan, const OptTarget& t,
                            const std::vector<bool>& heuristic,
                            std::vector<OptimizedKernel>& kernels, int64_t threads = 1);

}  // namespace kiln
