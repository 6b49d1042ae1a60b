#include "compiler/schedule/fusion_policy.h"

#include "compiler/support/error.h"

namespace kiln {

namespace {

// A broadcast constant (EXPAND/RESHAPE of a CONST).
bool is_splat(const UOp* u) {
  while (u->op == Op::EXPAND || u->op == Op::RESHAPE) u = u->src[0];
  return u->op == Op::CONST;
}

// A step of dequantizing an 8-bit value: CAST(float32, 8-bit integer), or that plus or times a
// broadcast constant (narrow_quantized_pads.h).
bool is_dequantize_step(const UOp* u) {
  if (u->op == Op::CAST)
    return u->dtype == dtypes::float32 && u->src[0]->dtype.itemsize() == 1 &&
           u->src[0]->dtype.is_int();
  if (u->op != Op::ADD && u->op != Op::MUL) return false;
  return (is_dequantize_step(u->src[0]) && is_splat(u->src[1])) ||
         (is_dequantize_step(u->src[1]) && is_splat(u->src[0]));
}

}  // namespace

FusionDecision DefaultFusionPolicy::decide(const FusionQuery& q) const {
  if (is_dequantize_step(q.node))
    return {true,
            "dequantizes an 8-bit value: recomputed where it is read, so the 8-bit value is "
            "what is stored"};
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
