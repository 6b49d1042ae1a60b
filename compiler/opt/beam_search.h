// Beam search (--beam N) over the register-tile heuristic's knobs for one contraction kernel:
// vectors on the lane axis, accumulators, which lane axis, the 3x3 window unroll (round 1), then
// the reduce unroll of the `beam` fastest tiles (round 2). Candidates are timed by a
// CandidateTimer, which the JIT supplies (opt/ does not compile or run code itself); a candidate
// whose output differs from the heuristic's is no candidate. The heuristic's choice is kept
// unless a candidate is clearly (3%) faster: timing noise is not a win.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "compiler/opt/heuristics.h"
#include "compiler/opt/opts.h"
#include "compiler/schedule/plan.h"

namespace kiln {

// Times candidate opt lists of one kernel on the host. Result i is the best time in ms of
// candidates[i], or nullopt when the applier refuses it or its output differs from candidate 0's.
using CandidateTimer = std::function<std::vector<std::optional<double>>(
    const KernelProgram& program, const std::vector<std::vector<Opt>>& candidates)>;

struct BeamStats {
  int candidates = 0;     // candidates timed
  bool improved = false;  // a candidate beat the heuristic
};

std::vector<Opt> beam_search(const KernelProgram& p, const OptTarget& base, int beam,
                             const CandidateTimer& timer, BeamStats* stats);

}  // namespace kiln
