// Fusion policy: which tensor nodes are computed inside the kernel that consumes them (inlined)
// and which are materialized in a buffer of their own (kept). Rangeify asks the policy about
// every computing node it reaches while building a kernel.
//
// The default policy (DefaultFusionPolicy):
//  - elementwise ops, casts and movement ops are always inlined: recomputing them is cheaper
//    than a round trip through memory, and the linearizer hoists loop-invariant work;
//  - a reduction is inlined when every value it produces is computed once in the consumer's loop
//    nest, i.e. its index depends on an outer prefix of the enclosing loops (the linearizer places
//    it at the depth of its innermost dependency, so no enclosing loop repeats it) and the loops
//    it depends on do not revisit its values (a sliding window does: more iterations than
//    values). Otherwise it is kept: inlining would recompute it `recompute` times.
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
