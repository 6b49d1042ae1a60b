// The kernel graph of a plan in Graphviz DOT (`kilnc plan MODEL --dot OUT.dot`): one node per
// launch, labelled with the model nodes it fuses, its kernel and task count, boxed by parallel
// group; model inputs and outputs as ellipses; one edge per buffer a launch reads from another
// launch or an input, labelled with the buffer's dtype, shape and bytes. Weights are counted in
// the node they feed, not drawn.
#pragma once

#include <string>

#include "compiler/schedule/plan.h"

namespace kiln {

std::string plan_dot(const Plan& plan, const std::string& title);

}  // namespace kiln
