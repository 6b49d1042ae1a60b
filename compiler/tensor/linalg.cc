#include "compiler/tensor/linalg.h"

#include "compiler/support/error.h"
#include "compiler/tensor/weight_layout.h"

namespace kiln {

Tensor matmul(const Tensor& a0, const Tensor& b0) {
  if (a0.ndim() == 0 || b0.ndim() == 0) throw Error("matmul: operands must have at least one axis");
  if (a0.dtype() != b0.dtype())
    throw Error("matmul: operand dtypes differ: " + a0.dtype().str() + " vs " + b0.dtype().str());
  Tensor a = a0.ndim() == 1 ? a0.unsqueeze(0) : a0;
  Tensor b = b0.ndim() == 1 ? b0.unsqueeze(-1) : b0;
  int64_t k = a.dim(-1);
  if (b.dim(-2) != k)
    throw Error(str_cat("matmul: shapes ", shape_str(a0.shape()), " and ", shape_str(b0.shape()),
                        " do not match (inner dims ", k, " vs ", b.dim(-2), ")"));
  // A constant B (a layer's weights) is packed in column panels, (N/8, K, 8), read back as
  // (K, N): a kernel's vector of N lanes walks one panel, contiguous across K.
  if (b.ndim() == 2 && is_constant(b) && b.dim(1) % kWeightPanel == 0 && b.dim(1) > kWeightPanel &&
      b.dim(0) >= kWeightPanel)
    b = packed_in_panels(b, 1);
  // (..., m, k) -> (..., m, 1, k);  (..., k, n) -> (..., 1, n, k);  product summed over k.
  Tensor x = a.unsqueeze(-2);
  Tensor y = b.transpose(-1, -2).unsqueeze(-3);
  Tensor r = x.mul(y).sum({-1});
  if (a0.ndim() == 1) r = r.squeeze({-2});
  if (b0.ndim() == 1) r = r.squeeze({-1});
  return r;
}

Tensor linear(const Tensor& a, const Tensor& b_nk, const Tensor* bias) {
  if (a.ndim() != 2 || b_nk.ndim() != 2 || a.dim(1) != b_nk.dim(1))
    throw Error(str_cat("linear: shapes ", shape_str(a.shape()), " and ", shape_str(b_nk.shape()),
                        " do not match (need (m,k) and (n,k))"));
  Tensor r = a.unsqueeze(1).mul(b_nk.unsqueeze(0)).sum({-1});
  return bias ? r.add(*bias) : r;
}

bool is_contraction(const UOp* u) {
  if (u->op != Op::REDUCE_AXIS || u->reduce_arg().op != Op::ADD) return false;
  const UOp* s = u->src[0];
  if (s->op == Op::CAST) s = s->src[0];
  return s->op == Op::MUL;
}

}  // namespace kiln
