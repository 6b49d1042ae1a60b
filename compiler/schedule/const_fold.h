// Ahead-of-time constant folding: every subgraph that depends only on weights and constants is
// evaluated at compile time (by the eager evaluator) and replaced by a new weight, so that at
// run time only input-dependent work remains (batch-norm parameters, weight transposes, ...).
//
// Folding never makes the package much larger: a folded value may hold at most
// max(4096, 2 x the elements of the weights it reads) elements; a larger one (an expand, an
// outer product) is not folded, its sources are. Folding's work is bounded too: a subgraph that
// would compute more than max(2^22, 16 per weight element it reads) elements (a product of two
// weight matrices) stays a kernel, sources included, and folding stops when the graph's total
// reaches that bound for all its weights, so that compile time stays proportional to the model.
// Every walk is iterative (an unrolled loop's constant chain can be thousands deep). A subgraph of
// constants alone (no weights) that is a broadcast of one value becomes that scalar constant,
// broadcast.
#pragma once

#include <cstdint>

#include "compiler/tensor/graph.h"

namespace kiln {

struct ConstFoldStats {
  int folded = 0;            // subgraphs replaced by a weight
  int splats = 0;            // subgraphs replaced by a broadcast constant
  int64_t folded_bytes = 0;  // bytes of the new weights
  int too_costly = 0;        // subgraphs left to run-time kernels: folding them was too much work
  int narrowed_pads = 0;     // quantized padded maps stored in 8 bits (narrow_quantized_pads.h)
  // Elementwise nodes done in concatenations' parts (elementwise_through_concat.h).
  int through_concats = 0;
};

ConstFoldStats fold_constants(Graph& g);

}  // namespace kiln
