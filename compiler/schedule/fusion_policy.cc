#include "compiler/schedule/fusion_policy.h"

#include "compiler/support/error.h"

namespace kiln {

FusionDecision DefaultFusionPolicy::decide(const FusionQuery& q) const {
  if (q.node->op != Op::REDUCE_AXIS) return {true, "elementwise: recomputed in the consumer"};
  if (q.recompute <= 1) return {true, "reduction computed once per value in the consumer's loops"};
  return {false, str_cat("reduction would be recomputed ", q.recompute,
                         " times (its index skips an enclosing loop)")};
}

FusionDecision KernelPerOpPolicy::decide(const FusionQuery&) const {
  return {false, "kernel-per-op policy"};
}

}  // namespace kiln
