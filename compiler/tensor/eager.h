// Eager evaluation of tensor-level nodes on real data: the direct meaning of the lazy graph.
// It is the oracle of the differential tests and the engine of ahead-of-time constant folding.
// Scalar code, exact kiln semantics (const_eval.h); slow but obviously correct.
#pragma once

#include <map>
#include <string>
#include <unordered_map>

#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

class EagerEvaluator {
 public:
  // `inputs` by input name; may be empty when only constant subgraphs are evaluated.
  EagerEvaluator(const Graph& g, std::map<std::string, NDArray> inputs = {});

  // The value of `u` (cached). Throws kiln::Error for a missing input or a wrong input shape.
  const NDArray& eval(const UOp* u);
  // The value of `u`, moved out, and every cached value forgotten: constant folding takes each
  // folded value into a new weight, and keeping the intermediates of every fold held resnet50's
  // compile at 1.5 GB.
  NDArray take(const UOp* u);
  // Forgets cached values (keeps inputs).
  void clear() { cache_.clear(); }
  // The value of symbol `slot` a loop set (its iteration count once it ran), or -1.
  int64_t symbol(int slot) const;

 private:
  NDArray compute(const UOp* u);
  // u's value where it is kept: a CONTIGUOUS is its source's value, a weight the graph's.
  const NDArray& value_of(const UOp* u) const;
  // Runs loop `l` of the graph (the loop groups' meaning): binds its final states and stacked
  // outputs (laid out at max_trips rows) and its count symbol.
  void run_loop(size_t l);

  const Graph& g_;
  std::map<std::string, NDArray> inputs_;
  std::unordered_map<const UOp*, NDArray> cache_;
  std::unordered_map<const UOp*, NDArray> bound_;  // loop buffers: states, stacked outputs
  std::map<int, int64_t> symbols_;                 // loop symbols' values
};

}  // namespace kiln
