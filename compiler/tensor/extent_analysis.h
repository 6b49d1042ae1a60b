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

#include <unordered_map>
#include <vector>

#include "compiler/ir/uop.h"
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

  friend std::vector<const UOp*> extents_now(Graph& g, const UOp* node);
  friend class ExtentAnalysis;
  Context* ctx_ = nullptr;
  std::unordered_map<const UOp*, std::vector<const UOp*>> dynamic_;
  std::unordered_map<const UOp*, const UOp*> mean_counts_;
};

// The value of extent `e` with the symbols at `vars` (slot order).
int64_t eval_extent(const UOp* e, const std::vector<int64_t>& vars);

// The extents of every node of `g` (after constant folding). Throws kiln::Error naming the node
// (and its model origin) for a shape the rules refuse. A graph without symbols has none.
Extents compute_extents(Graph& g);

// The extents of `node`'s axes in the graph built so far: an importer's question while it builds
// (a recurrence over a symbolic sequence runs as many steps as its time axis holds). Throws as
// compute_extents does.
std::vector<const UOp*> extents_now(Graph& g, const UOp* node);

}  // namespace kiln
