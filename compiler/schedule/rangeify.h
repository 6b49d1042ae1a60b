// Rangeify: the lazy tensor graph becomes kernels. Movement ops become index arithmetic over
// explicit RANGE loops (PAD becomes gated loads, RESHAPE div/mod index math cleaned by the
// simplifier); the fusion policy decides which nodes are materialized; every materialized node
// is one kernel that ends in a STORE (the kernel split). A materialized node may store into a
// region of another's buffer instead: a concatenation's parts into their regions of it, a padded
// map's interior (the kernel computing a convolution's output stores it into the padded map the
// next window reads; one kernel per padded axis then stores the fill value into its slab of the
// border, labelled "(border)").
//
// A kernel AST is SINK(STORE(INDEX(DEFINE_GLOBAL 0, idx), value)). DEFINE_GLOBAL i is the
// kernel's argument i (0 = the output, then the buffers it reads, in order of first use).
// Output loops are RANGE ids 0..n-1 (one per output axis of size > 1), reduction loops follow
// in order of creation, so identical kernels have identical ASTs.
//
// Loop groups (Graph::loops): a loop is scheduled when something after it reads its results.
// Its states and stacked outputs get buffers; before the loop, one kernel per state writes its
// initial value; the body's kernels are those whose value varies with the iteration (reads a
// state or the iteration number) — a value that does not is computed once, before the loop
// (hoisted where it holds a reduction); each state whose next value is not itself gets a carry
// kernel copying the next value in after the rest of the body; each stacked value is stored at
// row `iteration` of its buffer. Loops do not nest.
//
// Sizes computed from data (Graph::counts): each count is realized into a buffer the runtime reads
// into its symbol; a counted value is computed into its buffer, laid out at the count's bound.
#pragma once

#include <string>
#include <vector>

#include "compiler/schedule/fusion_policy.h"
#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"

namespace kiln {

struct RangeifiedKernel {
  const UOp* ast = nullptr;
  std::vector<int> args;  // buffer ids by argument index
  std::string what;       // the tensor node computed
  // The model nodes it fuses (Graph::origin of every node computed inline), producers first.
  std::vector<std::string> origins;
  int loop = -1;       // Launch::loop
  bool carry = false;  // Launch::carry
};

struct RangeifyResult {
  std::vector<PlanBuffer> buffers;
  std::vector<int> inputs, outputs;
  std::vector<PlanLoop> loops;    // by GraphLoop index
  std::vector<PlanCount> counts;  // by GraphCount index
  std::vector<RangeifiedKernel> kernels;
  std::vector<std::string> fusion_log;
};

RangeifyResult rangeify(Graph& g, const FusionPolicy& policy);

}  // namespace kiln
