#include "compiler/schedule/fusion_policy.h"

#include "compiler/support/error.h"

namespace kiln {

FusionDecision DefaultFusionPolicy::decide(const FusionQuery& q) const {
  bool reduction = q.node->op == Op::REDUCE_AXIS || q.above_reduction;
  if (reduction && q.consumers > 1)
    return {false, str_cat("computes a reduction and has ", q.consumers,
                           " consumers: kept so it is computed once")};
  if (reduction && q.broadcast_apart)
    return {false,
            "broadcast into a larger consumer that reads none of its inputs: kept so the consumer "
            "is tiled as elementwise work"};
  if (q.node->op != Op::REDUCE_AXIS) {
    if (q.above_reduction && q.recompute > 1)
      return {false, str_cat("epilogue of a reduction, would be recomputed ", q.recompute,
                             " times: kept with its reduction")};
    return {true, "elementwise: recomputed in the consumer"};
  }
  if (q.recompute > 1)
    return {false, str_cat("reduction would be recomputed ", q.recompute,
                           " times (its index skips an enclosing loop or revisits values)")};
  if (q.under_reduce)
    return {false,
            "reduction walked by the consumer's reduce loops: kept so its loops can be tiled"};
  return {true, "reduction computed once per value in the consumer's loops"};
}

FusionDecision KernelPerOpPolicy::decide(const FusionQuery&) const {
  return {false, "kernel-per-op policy"};
}

}  // namespace kiln
