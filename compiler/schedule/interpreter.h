// The reference interpreter: executes a planned program's kernel ASTs on real data with scalar
// code, following the schedule and the memory plan (intermediates live at their planned offsets
// in one arena, so an unsound plan corrupts results). Slow and obviously correct: the oracle for
// code generation.
#pragma once

#include <map>
#include <string>

#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

// Runs `plan` with `inputs` (by input name); weights come from `g`. Returns outputs by name.
// Throws kiln::Error on a missing or mis-shaped input, or an out-of-bounds access (a compiler
// bug, reported with the kernel and index).
std::map<std::string, NDArray> interpret(const Plan& plan, const Graph& g,
                                         const std::map<std::string, NDArray>& inputs);

}  // namespace kiln
