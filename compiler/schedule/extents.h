// Symbolic extents (docs/symbolic-shapes.md): with `--dim seq=1..512` every tensor keeps its
// static shape, taken at the symbols' upper bounds (its layout and arena slot), and each axis
// has an extent — an index expression over the symbols' DEFINE_VARs saying how much of the axis
// holds values at run time. One analysis over the tensor graph computes them; rangeify uses
// them wherever a size bounds a loop (a size used as a stride stays the bound).
//
// A node whose graph shape depends on a symbol in a way the rules cannot follow (a dynamic axis
// merged inside a static one, a slice that does not run to the end of a dynamic axis) is refused
// with its name: a package that silently computed at the bound would give wrong answers.
#pragma once

#include <map>
#include <unordered_map>
#include <vector>

#include "compiler/ir/uop.h"
#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"

namespace kiln {

class Extents {
 public:
  // The extent of axis `i` of tensor node `n`: a symbolic one, or a constant of its size.
  const UOp* axis(const UOp* n, size_t i) const;
  // All axes of `n` (constants for a static node).
  std::vector<const UOp*> of(const UOp* n) const;
  // Whether some axis of `n` has a symbolic extent.
  bool symbolic(const UOp* n) const { return dynamic_.count(n) > 0; }
  bool any() const { return !dynamic_.empty(); }
  // A mean over a symbolic axis (Tensor::mean: a sum divided by a constant count, the count of
  // the bounds): the number of values it averages at run time, for the FDIV node `n`; nullptr
  // for any other node.
  const UOp* mean_count(const UOp* n) const {
    auto it = mean_counts_.find(n);
    return it == mean_counts_.end() ? nullptr : it->second;
  }

 private:
  friend Extents compute_extents(Graph& g);
  friend class ExtentAnalysis;
  Context* ctx_ = nullptr;
  std::unordered_map<const UOp*, std::vector<const UOp*>> dynamic_;
  std::unordered_map<const UOp*, const UOp*> mean_counts_;
};

// The value of extent `e` with the symbols at `vars` (slot order).
int64_t eval_extent(const UOp* e, const std::vector<int64_t>& vars);

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

// The extents of every node of `g` (after constant folding). Throws kiln::Error naming the node
// (and its model origin) for a shape the rules refuse. A graph without symbols has none.
Extents compute_extents(Graph& g);

}  // namespace kiln
