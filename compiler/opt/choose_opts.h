// The choice of every kernel's optimizations, in one place (pipeline stage `optimize`):
//
//   forced opts (tests)  >  the tuning cache (if still valid for the kernel)
//                        >  beam search (--beam N, contraction kernels, host target only)
//                        >  the heuristics at the optimization level
//
// Then the heuristics' kernels whose producer split their input along another axis are split
// like it (split_affinity.h).
//
// Whatever proposes, the applier (opts.h) decides: a proposed opt it refuses is dropped. Task
// counts come out with the optimized kernels and go into the plan's launches, which is all the
// package writer needs to know of the optimizations.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/opt/beam_search.h"
#include "compiler/opt/heuristics.h"
#include "compiler/opt/opts.h"
#include "compiler/schedule/plan.h"
#include "compiler/support/pass_timer.h"

namespace kiln {

class TargetInfo;
class TuningCache;

struct TuningOptions {
  OptLevel opt_level = OptLevel::Tiles;
  int beam = 0;                           // > 0: beam search with this width (needs `timer`)
  TuningCache* cache = nullptr;           // reused, and extended by beam search
  const CandidateTimer* timer = nullptr;  // times candidates on the host (jit/kernel_timer.h)
  // Opts by program name, applied as given (tests force tiles through this).
  const std::map<std::string, std::vector<Opt>>* forced = nullptr;
  PassTimes* times = nullptr;  // progress lines during beam search
  // The threads the package's sessions will run (LoweringOptions::threads, kilnc --threads):
  // task splits that only pay where tasks run on several cores apply above 1
  // (split_affinity.h).
  int64_t threads = 1;
};

// What tuning did (counted when beam search or a cache is in use).
struct TuneStats {
  int kernels = 0;     // contraction kernels considered
  int from_cache = 0;  // taken from the cache
  int searched = 0;    // timed now
  int candidates = 0;  // candidates compiled and timed
  int improved = 0;    // searched kernels where a candidate beat the heuristic
};

// One kernel's opts, applied. Throws OptionError for beam search on a target that is not the
// host (kernels are timed here).
OptimizedKernel choose_opts(const KernelProgram& p, const TargetInfo& t, const TuningOptions& o,
                            TuneStats* stats = nullptr);

// Every program of `plan`, in program order.
std::vector<OptimizedKernel> optimize_programs(const Plan& plan, const TargetInfo& t,
                                               const TuningOptions& o, TuneStats* stats = nullptr);

// Sets each launch's task count to its program's.
void set_launch_tasks(Plan& plan, const std::vector<OptimizedKernel>& kernels);

}  // namespace kiln
