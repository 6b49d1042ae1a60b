// Symbolic extents in the schedule and the package (docs/symbolic-shapes.md): an extent as the
// package's postfix program, and the symbols bound from a run's input shapes and values as the
// runtime binds them. The analysis itself is the tensor layer's (tensor/extent_analysis.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/schedule/plan.h"
#include "compiler/tensor/extent_analysis.h"

namespace kiln {

// Extent `e` as the package's postfix program (kiln_abi.h KILN_ABI_EXTENT_*). Throws
// kiln::InternalError for an op the format has no opcode for.
std::vector<int64_t> extent_program(const UOp* e);

// Binds the symbols from the shapes of a plan's inputs: `shapes[i]` is input i's run-time
// shape, `extents[i]` its axes' extents (empty: static). Checks every axis against the input's
// static size or its symbol's bounds, and a symbol met twice against its first value. Throws
// kiln::Error naming the input, the axis, the value and the bounds. Returns the vars.
std::vector<int64_t> bind_symbols(const std::vector<Symbol>& symbols,
                                  const std::vector<std::string>& names,
                                  const std::vector<Shape>& static_shapes,
                                  const std::vector<std::vector<const UOp*>>& extents,
                                  const std::vector<Shape>& shapes);

// Shape operands fed as inputs: sets vars[value symbol] from the inputs' values, checks each
// against its symbol's bounds and then the plan's checks. Throws kiln::Error naming the input
// and element, or with the check's message, as the runtime does.
void bind_value_symbols(const Plan& plan, const std::map<std::string, NDArray>& inputs,
                        std::vector<int64_t>& vars);

}  // namespace kiln
