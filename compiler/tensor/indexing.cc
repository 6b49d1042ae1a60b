#include "compiler/tensor/indexing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compiler/support/error.h"

namespace kiln {

Tensor concat(const std::vector<Tensor>& parts, int64_t axis) {
  if (parts.empty()) throw Error("concat: no inputs");
  const Tensor& first = parts[0];
  int64_t a = first.norm_axis(axis, "concat");
  int64_t total = 0;
  for (const Tensor& t : parts) {
    if (t.ndim() != first.ndim() || t.dtype() != first.dtype())
      throw Error("concat: inputs " + shape_str(first.shape()) + " " + first.dtype().str() +
                  " and " + shape_str(t.shape()) + " " + t.dtype().str() +
                  " differ in rank or dtype");
    for (int64_t i = 0; i < t.ndim(); ++i)
      if (i != a && t.shape()[static_cast<size_t>(i)] != first.shape()[static_cast<size_t>(i)])
        throw Error("concat: inputs " + shape_str(first.shape()) + " and " + shape_str(t.shape()) +
                    " differ outside axis " + std::to_string(a));
    total += t.dim(a);
  }
  std::vector<Tensor> nonempty;
  for (const Tensor& t : parts)
    if (t.dim(a) > 0) nonempty.push_back(t);
  if (nonempty.size() == 1) return nonempty[0];
  Tensor acc;
  int64_t off = 0;
  for (const Tensor& t : parts) {
    if (t.dim(a) == 0) continue;
    std::vector<std::pair<int64_t, int64_t>> pads(static_cast<size_t>(t.ndim()), {0, 0});
    pads[static_cast<size_t>(a)] = {off, total - off - t.dim(a)};
    Tensor p = t.pad(pads, 0.0);
    off += t.dim(a);
    acc = acc.valid() ? (t.dtype().is_bool() ? acc.logical_or(p) : acc.add(p)) : p;
  }
  if (!acc.valid()) {  // every input empty
    Shape s = first.shape();
    s[static_cast<size_t>(a)] = 0;
    return Tensor::full(*first.graph(), s, 0, first.dtype());
  }
  return acc;
}

std::optional<ConcatParts> concat_parts(const UOp* s,
                                        const std::function<bool(const UOp*)>& taken) {
  Op join = s->dtype.is_bool() ? Op::OR : Op::ADD;
  if (s->op != join || !s->has_shape()) return std::nullopt;
  ConcatParts c;
  std::optional<size_t> axis;
  // Right operands first: concat() adds each part to the sum so far, so a sum that is not a
  // concatenation (a long chain of additions) shows a leaf that is no PAD at once.
  std::vector<const UOp*> stack{s};
  while (!stack.empty()) {
    const UOp* t = stack.back();
    stack.pop_back();
    if (t->op == join && t->shape() == s->shape() && (t == s || !taken || taken(t))) {
      stack.push_back(t->src[0]);
      stack.push_back(t->src[1]);
      continue;
    }
    if (t->op != Op::PAD || t->src[1]->op != Op::CONST || !t->src[1]->is_const(0) ||
        (taken && !taken(t)))
      return std::nullopt;
    const std::vector<int64_t>& p = t->varg();
    std::optional<size_t> padded;
    for (size_t i = 0; i < t->shape().size(); ++i)
      if (p[2 * i] != 0 || p[2 * i + 1] != 0) {
        if (padded) return std::nullopt;
        padded = i;
      }
    if (!padded || (axis && *padded != *axis)) return std::nullopt;
    axis = padded;
    c.parts.push_back({p[2 * *axis], t->src[0]});
  }
  if (c.parts.size() < 2) return std::nullopt;
  c.axis = *axis;
  std::sort(c.parts.begin(), c.parts.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t next = 0;
  for (const auto& [offset, part] : c.parts) {
    if (offset != next) return std::nullopt;
    next += part->shape()[c.axis];
  }
  if (next != s->shape()[c.axis]) return std::nullopt;
  return c;
}

std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  int64_t a = x.norm_axis(axis, "split");
  int64_t sum = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  if (sum != x.dim(a))
    throw Error(str_cat("split: sizes ", shape_str(sizes), " add up to ", sum, ", axis ", a, " of ",
                        shape_str(x.shape()), " has ", x.dim(a)));
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw Error("split: negative size in " + shape_str(sizes));
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t i = 0; i < x.ndim(); ++i) b.push_back({0, x.shape()[static_cast<size_t>(i)]});
    b[static_cast<size_t>(a)] = {off, off + s};
    out.push_back(x.shrink(b));
    off += s;
  }
  return out;
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             const std::vector<int64_t>& axes_in, const std::vector<int64_t>& steps_in) {
  size_t n = starts.size();
  if (ends.size() != n) throw Error("slice: starts and ends differ in length");
  std::vector<int64_t> axes = axes_in;
  if (axes.empty()) {
    axes.resize(n);
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<int64_t> steps = steps_in.empty() ? std::vector<int64_t>(n, 1) : steps_in;
  if (axes.size() != n || steps.size() != n)
    throw Error("slice: starts, ends, axes and steps differ in length");
  Tensor r = x;
  std::vector<bool> seen(static_cast<size_t>(x.ndim()), false);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = x.norm_axis(axes[i], "slice");
    if (seen[static_cast<size_t>(a)])
      throw Error("slice: axis " + std::to_string(a) + " listed twice");
    seen[static_cast<size_t>(a)] = true;
    int64_t d = x.dim(a), step = steps[i];
    if (step == 0) throw Error("slice: step 0 on axis " + std::to_string(a));
    // Python slice semantics, with starts/ends clamped.
    auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(hi, v)); };
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t first, count;
    if (step > 0) {
      s = clamp(s, 0, d);
      e = clamp(e, 0, d);
      count = e > s ? (e - s + step - 1) / step : 0;
      first = s;
    } else {
      s = clamp(s, -1, d - 1);
      e = clamp(e, -1, d - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
      first = s;
    }
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t k = 0; k < r.ndim(); ++k) b.push_back({0, r.shape()[static_cast<size_t>(k)]});
    if (count == 0) {
      b[static_cast<size_t>(a)] = {0, 0};
      r = r.shrink(b);
      continue;
    }
    int64_t st = step > 0 ? step : -step;
    // Take elements first, first+step, ... (count of them): flip for negative steps, then a
    // contiguous shrink, then a stride via reshape (count, st) and keeping column 0.
    int64_t lo = step > 0 ? first : (d - 1 - first);
    Tensor t = step > 0 ? r : r.flip({a});
    int64_t span = (count - 1) * st + 1;
    b[static_cast<size_t>(a)] = {lo, lo + span};
    t = t.shrink(b);
    if (st > 1) {
      std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(t.ndim()), {0, 0});
      p[static_cast<size_t>(a)] = {0, count * st - span};
      t = t.pad(p, 0.0);
      Shape s2 = t.shape();
      s2[static_cast<size_t>(a)] = count;
      s2.insert(s2.begin() + a + 1, st);
      t = t.reshape(s2);
      std::vector<std::pair<int64_t, int64_t>> b2;
      for (int64_t k = 0; k < t.ndim(); ++k) b2.push_back({0, t.shape()[static_cast<size_t>(k)]});
      b2[static_cast<size_t>(a + 1)] = {0, 1};
      t = t.shrink(b2).squeeze({a + 1});
    }
    r = t;
  }
  return r;
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats) {
  if (static_cast<int64_t>(repeats.size()) != x.ndim())
    throw Error(str_cat("tile: ", repeats.size(), " repeats for shape ", shape_str(x.shape())));
  Shape inter, expanded, out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0) throw Error("tile: negative repeat");
    inter.push_back(1);
    inter.push_back(x.shape()[i]);
    expanded.push_back(repeats[i]);
    expanded.push_back(x.shape()[i]);
    out.push_back(repeats[i] * x.shape()[i]);
  }
  return x.reshape(inter).expand(expanded).reshape(out);
}

Tensor arange(Graph& g, double start, double stop, double step, DType dtype) {
  if (step == 0) throw Error("arange: step 0");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((stop - start) / step)));
  NDArray a(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    double v = start + static_cast<double>(i) * step;
    a.set(i,
          dtype.is_float() ? ConstValue::of_float(v) : ConstValue::of_int(static_cast<int64_t>(v)));
  }
  return Tensor::weight(g, g.fresh_name("arange"), std::move(a));
}

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  int64_t a = x.norm_axis(axis, "cumsum");
  int64_t n = x.dim(a);
  Tensor t = reverse ? x.flip({a}) : x;
  if (n == 0) return x;
  // Move the axis last, pad n-1 (n when exclusive) zeros in front, windowed sums of width n.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != a) perm.push_back(i);
  perm.push_back(a);
  t = t.permute(perm);
  std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(t.ndim()), {0, 0});
  p.back() = exclusive ? std::make_pair(n, int64_t{-1}) : std::make_pair(n - 1, int64_t{0});
  t = t.pad(p, 0.0).window({n}, {1}, {1}).sum({-1});
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  t = t.permute(inv);
  return reverse ? t.flip({a}) : t;
}

Tensor index_value(Graph& g, const UOp* e) {
  if (e->op == Op::CONST)
    return Tensor::full(g, {}, static_cast<double>(e->cval().i), dtypes::int64);
  if (e->op == Op::DEFINE_VAR) return Tensor(&g, e->cast(dtypes::int64));
  if (e->op == Op::CAST) return index_value(g, e->src[0]);
  if (e->src.size() != 2) throw InternalError(str_cat("index_value: ", op_name(e->op)));
  Tensor a = index_value(g, e->src[0]), b = index_value(g, e->src[1]);
  switch (e->op) {
    case Op::ADD:
      return a.add(b);
    case Op::MUL:
      return a.mul(b);
    case Op::IDIV:
      return a.div(b);
    case Op::MOD:
      return a.mod(b);
    case Op::MAX:
      return a.maximum(b);
    case Op::MIN:
      return a.minimum(b);
    default:
      throw InternalError(str_cat("index_value: ", op_name(e->op)));
  }
}

}  // namespace kiln
