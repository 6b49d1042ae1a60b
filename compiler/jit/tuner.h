// Kernel tuning (--beam N, --tuning-cache PATH). For each contraction kernel of a plan, a beam
// search over the register-tile heuristic's knobs (vectors on the lane axis, accumulators,
// which lane axis, reduce unroll): every candidate is compiled for the host with the JIT and
// timed on random data; candidates whose output differs from the default heuristic's are
// discarded; the `beam` fastest tiles of the first round are refined in the second (unroll).
// Choices go into the tuning cache, keyed by the kernel's structural digest and the target, so a
// second compile reuses them without timing anything. Kernels that are not contractions keep
// the heuristics.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/opt/opts.h"
#include "compiler/schedule/plan.h"
#include "compiler/support/pass_timer.h"

namespace kiln {

class Target;
class TuningCache;

struct TuneOptions {
  int beam = 0;                 // 0: use the cache only
  TuningCache* cache = nullptr;
  PassTimes* times = nullptr;   // progress lines
};

struct TuneStats {
  int kernels = 0;     // contraction kernels considered
  int from_cache = 0;  // taken from the cache
  int searched = 0;    // timed now
  int candidates = 0;  // candidates compiled and timed
  int improved = 0;    // searched kernels where a candidate beat the heuristic
};

// The identity of a target for the cache: triple, CPU and features.
std::string target_id(const Target& t);

// Opts per program name, for LowerOptions::tuned. Timing needs the host: `t` must be the host
// target when beam > 0 (kiln::Error otherwise).
std::map<std::string, std::vector<Opt>> tune_plan(const Plan& plan, const Target& t,
                                                  const TuneOptions& o, TuneStats* stats);

}  // namespace kiln
