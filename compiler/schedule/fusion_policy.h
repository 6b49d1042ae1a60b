// Fusion policy: which tensor nodes are computed inside the kernel that consumes them (inlined)
// and which are materialized in a buffer of their own (kept). Rangeify asks the policy about
// every computing node it reaches while building a kernel.
//
// The default policy (DefaultFusionPolicy):
//  - a dequantize of an 8-bit value (CAST to float32, plus or times a broadcast constant) is
//    inlined wherever it is read, so the 8-bit value below it is what a kernel stores
//    (narrow_quantized_pads.h): two operations per load against 4x the bytes;
//  - elementwise ops, casts and movement ops are inlined: recomputing them is cheaper than a round
//    trip through memory, and the linearizer hoists loop-invariant work (but see below);
//  - a reduction is inlined when every value it produces is computed once in the consumer's loop
//    nest, i.e. its index depends on an outer prefix of the enclosing loops (the linearizer places
//    it at the depth of its innermost dependency, so no enclosing loop repeats it) and the loops
//    it depends on do not revisit its values (a sliding window does: more iterations than
//    values). Otherwise it is kept: inlining would recompute it `recompute` times. A reduction
//    whose values the consumer walks in its own reduce loops (a convolution feeding a global
//    average pool) is kept too: inlined, its output loops would run inside the consumer's
//    reduction, where they cannot be tiled or split into tasks;
//  - an elementwise node computed from such a reduction (a convolution's bias, batch norm and
//    ReLU; a residual add) that the consumer would recompute is kept, so it becomes the epilogue
//    of the reduction's kernel instead of being recomputed in the consumer's inner loop;
//  - a reduction, or an elementwise node computed from one, whose values are broadcast into a
//    consumer many times larger, elementwise apart from it, that reads none of the reduction's
//    inputs is kept: inlined, the
//    consumer is tiled as the reduction's contraction, with the reduction's output axis as its
//    vector lanes, where its own work is elementwise over a larger map (efficientnet's 7x7
//    squeeze-excitation scale stored its 1152 x 49 map with channel lanes, 49 floats apart);
//  - a reduction, or an elementwise node computed from one, with several consumers is kept, so
//    it is computed once (a residual block's output feeds the next block's convolution and its
//    skip connection). Uses that are all elementwise at the node's own index and end in one
//    node count as one (SiLU's x * sigmoid(x), GELU): the consumer reads the node at one index,
//    which hash-consing makes one value, so the activation becomes the reduction's epilogue
//    (rangeify's merged_uses).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/uop.h"

namespace kiln {

struct FusionQuery {
  const UOp* node = nullptr;      // the tensor node reached
  std::vector<const UOp*> loops;  // enclosing loops of the consumer, outermost first
  std::vector<const UOp*> used;   // the loops the node's index (and gate) depend on
  int64_t recompute = 1;          // times each value would be recomputed if inlined
  bool under_reduce = false;      // its index walks one of the consumer's reduce loops
  bool above_reduction = false;   // elementwise, computed from a reduction not yet materialized
  // Its values are broadcast into an elementwise consumer at least 8 times its size that reads
  // none of the tensors its reduction reads (a squeeze-excitation's channel scales, multiplying the
  // feature map; not a softmax's row sums, whose consumer reads the rows again).
  bool broadcast_apart = false;
  int64_t consumers = 1;  // computing nodes that read it (through movement ops)
};

struct FusionDecision {
  bool inline_it = true;
  std::string reason;
};

class FusionPolicy {
 public:
  virtual ~FusionPolicy() = default;
  virtual FusionDecision decide(const FusionQuery& q) const = 0;
  virtual const char* name() const = 0;
};

class DefaultFusionPolicy : public FusionPolicy {
 public:
  FusionDecision decide(const FusionQuery& q) const override;
  const char* name() const override { return "default"; }
};

// Materializes every computing node (one kernel per op; movement ops stay views). A test oracle.
class KernelPerOpPolicy : public FusionPolicy {
 public:
  FusionDecision decide(const FusionQuery& q) const override;
  const char* name() const override { return "kernel-per-op"; }
};

}  // namespace kiln
