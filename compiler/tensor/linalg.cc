#include "compiler/tensor/linalg.h"

#include "compiler/support/error.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/view_strides.h"
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
  // A constant B (a layer's weights) is packed in column panels of P lanes (panel_lanes),
  // (N/P, K, P), read back as (K, N): a kernel's vector of N lanes walks one panel, contiguous
  // across K.
  // N not a whole number of vector pairs (a classifier's 1000 on 16 lanes) gets zero columns up
  // to one (packed_in_vector_pairs), as a convolution's channels do.
  int64_t panel = b.ndim() == 2 ? panel_lanes(*b.graph(), b.dim(1)) : 0;
  if (panel != 0 && is_constant(b) && b.dim(1) > panel && b.dim(0) >= kWeightPanel)
    b = packed_in_vector_pairs(b, 1);
  // A computed B read through a view that is contiguous along K and steps across rows along N
  // (attention scores Q K^T: the keys are rows of the projection, 768 floats apart) is copied
  // in its own layout first: a kernel's vector of N lanes then loads one contiguous run where it
  // gathered a float per lane (the transformer's scores, 128 x 128 x 64 per head, ran at 36
  // GFLOP/s as AVX2 code, 57 as AVX-512). The copy reads each element once.
  else if (b.dim(-1) >= kWeightPanel && !is_constant(b))
    if (std::optional<std::vector<int64_t>> st = view_strides(b);
        st && st->at(st->size() - 2) == 1 && st->back() != 0 && st->back() != 1)
      b = b.contiguous();
  // (..., m, k) -> (..., m, 1, k);  (..., k, n) -> (..., 1, n, k);  product summed over k.
  Tensor x = a.unsqueeze(-2);
  Tensor y = b.transpose(-1, -2).unsqueeze(-3);
  Tensor r = x.mul(y).sum({-1});
  if (a0.ndim() == 1) r = r.squeeze({-2});
  if (b0.ndim() == 1) r = r.squeeze({-1});
  return r;
}

Tensor matmul_u8s8(const Tensor& a, const Tensor& b) {
  if (a.dtype() != dtypes::uint8 || b.dtype() != dtypes::int8 || a.ndim() < 2 || b.ndim() != 2 ||
      a.dim(-1) != b.dim(0) || !is_constant(b))
    throw Error(str_cat("matmul_u8s8: needs uint8 (..., M, K) and constant int8 (K, N), got ",
                        a.dtype().str(), " ", shape_str(a.shape()), " and ", b.dtype().str(), " ",
                        shape_str(b.shape())));
  // a is materialized: computed inline (a DynamicQuantizeLinear's output), each element would be
  // recomputed once per tile of N (a 128x256x1024 layer ran at 22 GMAC/s instead of ~190).
  Tensor x = materialized(a).cast(dtypes::int32).unsqueeze(-2);  // (..., M, 1, K)
  Tensor y = packed_for_dot(b).cast(dtypes::int32).transpose(-1, -2).unsqueeze(-3);  // (1, N, K)
  return x.mul(y).sum({-1});
}

Tensor linear(const Tensor& a, const Tensor& b_nk, const Tensor* bias) {
  if (a.ndim() != 2 || b_nk.ndim() != 2 || a.dim(1) != b_nk.dim(1))
    throw Error(str_cat("linear: shapes ", shape_str(a.shape()), " and ", shape_str(b_nk.shape()),
                        " do not match (need (m,k) and (n,k))"));
  Tensor r = a.unsqueeze(1).mul(b_nk.unsqueeze(0)).sum({-1});
  return bias ? r.add(*bias) : r;
}

Tensor det(const Tensor& a) {
  if (a.ndim() < 2 || a.dim(-1) != a.dim(-2))
    throw Error("det: needs (..., M, M), got " + shape_str(a.shape()));
  if (!a.dtype().is_float()) throw Error("det: needs a float tensor, got " + a.dtype().str());
  int64_t m = a.dim(-1);
  Graph& g = *a.graph();
  Tensor iota = arange(g, 0, static_cast<double>(m), 1, dtypes::int64);  // (M,)
  Tensor work = a, sign = a.like(1.0), prod = a.like(1.0);
  Shape lead(a.shape().begin(), a.shape().end() - 2);
  auto column = [&](const Tensor& t, int64_t k) {  // (..., M)
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t d : lead) b.push_back({0, d});
    b.push_back({0, m});
    b.push_back({k, k + 1});
    return t.shrink(b).squeeze({-1});
  };
  auto row = [&](const Tensor& t, int64_t k) {  // (..., M)
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t d : lead) b.push_back({0, d});
    b.push_back({k, k + 1});
    b.push_back({0, m});
    return t.shrink(b).squeeze({-2});
  };
  for (int64_t k = 0; k < m; ++k) {
    // Partial pivoting: the row at or below k with the largest |entry| in column k (the first
    // such row on ties), swapped into row k by one-hot masks.
    Tensor below = iota.ge(iota.like(static_cast<double>(k)));
    Tensor mag = below.where(column(work, k).abs(), a.like(-1.0));
    Tensor is_max = mag.eq(mag.max({-1}, true));
    Tensor p = is_max.where(iota, iota.like(static_cast<double>(m))).min({-1}, true);  // (..., 1)
    Tensor at_p = iota.eq(p).cast(a.dtype());                                          // (..., M)
    Tensor at_k = iota.eq(iota.like(static_cast<double>(k))).cast(a.dtype());          // (M,)
    Tensor row_p = at_p.unsqueeze(-1).mul(work).sum({-2});                             // (..., M)
    Tensor row_k = row(work, k);
    Tensor diff = row_p.sub(row_k).unsqueeze(-2);
    work = work.add(at_k.unsqueeze(-1).mul(diff)).sub(at_p.unsqueeze(-1).mul(diff));
    sign = p.squeeze({-1}).eq(iota.like(static_cast<double>(k))).where(sign, sign.neg());
    Tensor pivot = row_p.mul(at_k).sum({-1});  // (...)
    prod = prod.mul(pivot);
    if (k + 1 == m) break;
    // Eliminate below row k (a zero pivot means a zero column below it: nothing to do).
    Tensor safe = pivot.eq(pivot.like(0.0)).where(pivot.like(1.0), pivot);
    Tensor under = iota.gt(iota.like(static_cast<double>(k))).cast(a.dtype());
    Tensor factor = column(work, k).div(safe.unsqueeze(-1)).mul(under);  // (..., M)
    work = work.sub(factor.unsqueeze(-1).mul(row_p.unsqueeze(-2)));
  }
  return sign.mul(prod);
}

bool is_contraction(const UOp* u) {
  if (u->op != Op::REDUCE_AXIS || u->reduce_arg().op != Op::ADD) return false;
  const UOp* s = u->src[0];
  if (s->op == Op::CAST) s = s->src[0];
  return s->op == Op::MUL;
}

}  // namespace kiln
