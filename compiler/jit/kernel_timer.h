// The JIT's side of beam search: a CandidateTimer (opt/beam_search.h) that compiles every
// candidate of a kernel into one JIT module, runs each on the same random buffers (floats in
// [-1, 1], integers 0, which are safe as indices), discards those whose output differs from
// candidate 0's (1e-4 of the largest value for floats, exact otherwise), and reports the best of
// several runs (at least three, and about 20 ms of runs in total).
#pragma once

#include "compiler/opt/beam_search.h"

namespace kiln {

class TargetInfo;

CandidateTimer jit_candidate_timer(const TargetInfo& host);

}  // namespace kiln
