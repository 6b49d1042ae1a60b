// Slice with starts, ends, axes or steps read at run time (docs/symbolic-shapes.md, "Shape
// operands at run time"): the declared output; along each axis the kernel gathers input index
// start + i * step, start and step read from the inputs (selected by the run-time axes), and the
// package checks that the operands give the declared size on every axis.
#include <algorithm>
#include <numeric>

#include "compiler/frontend/onnx/run_time_operands.h"
#include "compiler/ir/symbolic.h"
#include "compiler/support/error.h"

namespace kiln::onnxfe {

namespace {

// An operand's elements: its run-time symbols, or its constants as index constants, or `fill`
// (k of them) when the node omits it.
std::vector<const UOp*> operand_symbols(NodeContext& n, size_t i, size_t k,
                                        const std::function<int64_t(size_t)>& fill) {
  std::vector<const UOp*> v;
  if (n.has_input(i)) v = n.run_time_ints(i);
  if (!v.empty()) return v;
  Context& c = n.graph().ctx();
  if (n.has_input(i)) {
    for (int64_t x : n.const_ints(i)) v.push_back(c.const_index(x));
  } else {
    for (size_t j = 0; j < k; ++j) v.push_back(c.const_index(fill(j)));
  }
  return v;
}

// The operand as an int64 tensor of k elements for the kernel (`fill` when omitted).
Tensor operand_tensor(NodeContext& n, size_t i, size_t k,
                      const std::function<int64_t(size_t)>& fill) {
  if (n.has_input(i)) return n.input(i).cast(dtypes::int64).reshape({static_cast<int64_t>(k)});
  std::vector<double> v;
  for (size_t j = 0; j < k; ++j) v.push_back(static_cast<double>(fill(j)));
  return n.constant(make_array(dtypes::int64, {static_cast<int64_t>(k)}, v));
}

const UOp* clamp(const UOp* x, int64_t lo, int64_t hi) {
  return x->maximum(x->const_like(lo))->minimum(x->const_like(hi));
}

// ONNX's element count of a slice of an axis of size `dim`, over symbols (a negative start or end
// counts from the end, both clamped; the step's sign chooses the clamping).
const UOp* slice_count(const UOp* s, const UOp* e, const UOp* st, int64_t dim) {
  const UOp* zero = s->const_like(int64_t{0});
  auto from_end = [&](const UOp* x) { return x->add(x->lt(zero)->cast(dtypes::index)->mul(dim)); };
  const UOp *s1 = from_end(s), *e1 = from_end(e);
  const UOp* up = clamp(e1, 0, dim)->sub(clamp(s1, 0, dim))->add(st)->sub(1)->idiv(st);
  const UOp* down =
      clamp(s1, 0, dim - 1)->sub(clamp(e1, -1, dim - 1))->sub(st)->sub(1)->idiv(st->neg());
  bool known = st->op == Op::CONST;
  if (known) return (st->cval().i > 0 ? up : down)->maximum(zero);
  const UOp* pos = zero->lt(st)->cast(dtypes::index);
  const UOp* neg = st->lt(zero)->cast(dtypes::index);
  return pos->mul(up->maximum(zero))->add(neg->mul(down->maximum(zero)));
}

}  // namespace

Tensor run_time_slice(NodeContext& n) {
  Tensor x = n.input(0);
  int64_t r = x.ndim();
  size_t first = 1;  // the first operand read at run time names the errors
  while (first < 5 && (!n.has_input(first) || n.input_is_const(first))) ++first;
  size_t k = static_cast<size_t>(n.input(1).numel());
  if (static_cast<size_t>(n.input(2).numel()) != k) n.invalid("starts and ends differ in length");
  auto index = [](size_t j) { return static_cast<int64_t>(j); };
  auto one = [](size_t) { return int64_t{1}; };
  std::vector<const UOp*> S = operand_symbols(n, 1, k, index), E = operand_symbols(n, 2, k, index),
                          A = operand_symbols(n, 3, k, index), T = operand_symbols(n, 4, k, one);
  if (A.size() != k || T.size() != k) n.invalid("starts, axes and steps differ in length");
  if (static_cast<int64_t>(k) > r) n.invalid("more starts than axes");
  bool axes_known = A.empty() || A[0]->op == Op::CONST;
  std::vector<const UOp*> all = S;
  for (const auto* v : {&E, &A, &T}) all.insert(all.end(), v->begin(), v->end());
  // In a loop group's body, starts and ends computed from the iteration number (x[i : i + 1]):
  // a slice whose length every iteration shares, moving along the axis.
  Shape d = n.loop_values(all) ? x.shape() : n.declared_shape(0, first);
  if (n.loop_values(all)) {
    for (size_t j = 0; j < k; ++j) {
      const UOp* len = nullptr;
      if (axes_known && T[j]->op == Op::CONST && T[j]->cval().i != 0) {
        int64_t a = A[j]->cval().i < 0 ? A[j]->cval().i + r : A[j]->cval().i;
        if (a >= 0 && a < r) {
          len = simplify(slice_count(S[j], E[j], T[j], x.dim(a)));
          if (len->op == Op::CONST) d[static_cast<size_t>(a)] = len->cval().i;
        }
      }
      if (!len || len->op != Op::CONST)
        n.unsupported("a Slice in a loop body whose length varies with the iteration number");
    }
  }
  if (static_cast<int64_t>(d.size()) != r)
    n.invalid("the declared output " + shape_str(d) + " differs from the input in rank");
  if (k == 0) {
    if (d != x.shape()) n.invalid("an empty slice keeps the input's shape, not " + shape_str(d));
    return x;
  }
  std::string what = "must give the shape " + shape_str(d) +
                     " the package was compiled for (the model's declared output shape)";

  // Element j names axis a (a in [0, r), axes in [-r, r)).
  auto names = [&](size_t j, int64_t a) {
    return A[j]->eq(A[j]->const_like(a))->logical_or(A[j]->eq(A[j]->const_like(a - r)));
  };
  std::vector<int64_t> known_axis(k, -1);
  if (axes_known)
    for (size_t j = 0; j < k; ++j) {
      int64_t a = A[j]->cval().i;
      if (a < -r || a >= r) n.invalid("axis " + std::to_string(a) + " is out of range");
      known_axis[j] = a < 0 ? a + r : a;
    }
  size_t checks = 0;
  auto require = [&](const UOp* holds, const std::string& why, size_t operand) {
    if (++checks > 48)
      n.unsupported(
          "a Slice of this rank with operands read at run time needs more checks than "
          "a package holds");
    n.require(holds, operand, why);
  };
  int64_t changed = 0;
  for (int64_t a = 0; a < r; ++a) changed += d[a] != x.dim(a);
  if (changed > static_cast<int64_t>(k))
    n.invalid("the declared output " + shape_str(d) + " changes " + std::to_string(changed) +
              " axes of the input " + shape_str(x.shape()) + "; the slice names " +
              std::to_string(k));
  for (size_t j = 0; j < k; ++j) {
    if (!axes_known) {
      const UOp* any = nullptr;
      for (int64_t a = 0; a < r; ++a) any = any ? any->logical_or(names(j, a)) : names(j, a);
      require(any, "must name axes of the rank-" + std::to_string(r) + " input", 3);
      for (size_t i = 0; i < j; ++i)
        require(A[i]->sub(A[j])->mod(r)->ne(A[j]->const_like(int64_t{0})),
                "must name each axis once", 3);
    }
    if (T[j]->op == Op::CONST && T[j]->cval().i == 0) n.invalid("a step is 0");
    for (int64_t a = 0; a < r; ++a) {
      if (axes_known && known_axis[j] != a) continue;
      const UOp* holds = slice_count(S[j], E[j], T[j], x.dim(a))->eq(A[j]->const_like(d[a]));
      if (!axes_known) holds = names(j, a)->logical_not()->logical_or(holds);
      require(holds, what, first);
    }
  }
  // An axis no element names keeps its size.
  for (int64_t a = 0; a < r; ++a) {
    if (d[a] == x.dim(a)) continue;
    if (axes_known) {
      if (std::find(known_axis.begin(), known_axis.end(), a) == known_axis.end())
        n.invalid("the declared output " + shape_str(d) + " changes axis " + std::to_string(a) +
                  ", which the slice keeps");
      continue;
    }
    const UOp* any = nullptr;
    for (size_t j = 0; j < k; ++j) any = any ? any->logical_or(names(j, a)) : names(j, a);
    require(any, what, 3);
  }

  // The kernel: per axis, start and step of the element naming it (0 and 1 if none), the start
  // counted from the end when negative and clamped as the step's sign says.
  Tensor st = operand_tensor(n, 1, k, index), sp = operand_tensor(n, 4, k, one),
         ax = operand_tensor(n, 3, k, index);
  auto elem = [&](const Tensor& t, size_t j) {
    return t.gather(Tensor::full(n.graph(), {}, static_cast<double>(j), dtypes::int64), 0);
  };
  Tensor y = x;
  for (int64_t a = 0; a < r; ++a) {
    if (axes_known && std::find(known_axis.begin(), known_axis.end(), a) == known_axis.end())
      continue;
    if (d[a] == 0) {
      std::vector<std::pair<int64_t, int64_t>> b;
      for (int64_t i = 0; i < r; ++i) b.push_back({0, i == a ? 0 : y.dim(i)});
      y = y.shrink(b);
      continue;
    }
    Tensor start = Tensor::full(n.graph(), {}, 0, dtypes::int64);
    Tensor step = Tensor::full(n.graph(), {}, 1, dtypes::int64);
    for (size_t j = 0; j < k; ++j) {
      if (axes_known && known_axis[j] != a) continue;
      Tensor aj = elem(ax, j);
      Tensor hit = axes_known ? Tensor::full(n.graph(), {}, 1, dtypes::bool_)
                              : aj.eq(aj.like(static_cast<double>(a)))
                                    .logical_or(aj.eq(aj.like(static_cast<double>(a - r))));
      start = hit.where(elem(st, j), start);
      step = hit.where(elem(sp, j), step);
    }
    double len = static_cast<double>(x.dim(a));
    Tensor s1 = start.lt(start.like(0.0)).where(start.add(start.like(len)), start);
    Tensor lo = s1.maximum(0.0);
    Tensor s2 = step.gt(step.like(0.0)).where(lo.minimum(len), lo.minimum(len - 1));
    std::vector<double> iv(static_cast<size_t>(d[a]));
    std::iota(iv.begin(), iv.end(), 0.0);
    Tensor i = n.constant(make_array(dtypes::int64, {d[a]}, iv));
    y = y.gather(i.mul(step).add(s2), a);
  }
  return y;
}

}  // namespace kiln::onnxfe
