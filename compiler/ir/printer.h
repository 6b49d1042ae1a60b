// Readable text for UOp graphs: an infix rendering for expressions (index math, simplifier
// tests, error messages) and an SSA listing of whole graphs (what --dump-ir prints).
#pragma once

#include <string>

#include "compiler/ir/uop.h"

namespace kiln {

// Infix expression, e.g. "(r0*4)+r1", "where(r2<3, x, Invalid)". Depth-limited when
// `max_depth` >= 0 (deeper subexpressions print as "…").
std::string render(const UOp* u, int max_depth = -1);

// A readable name for a tensor node in messages: "%12 REDUCE_AXIS float32(4,8)".
std::string describe_node(const UOp* u);

// One line per node in topological order: "%3 = ADD float32 %1, %2".
std::string print_graph(const UOp* root);

}  // namespace kiln
