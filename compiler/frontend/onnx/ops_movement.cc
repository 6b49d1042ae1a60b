// Shape and data-movement ONNX ops: reshapes, transposes, slices, concatenation, gathers and
// scatters, padding, tiling.
#include <algorithm>
#include <limits>
#include <numeric>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/run_time_operands.h"
#include "compiler/tensor/indexing.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// `v` (1-D) shaped to broadcast along `axis` of a rank-`rank` tensor.
Tensor along(const Tensor& v, int64_t axis, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[static_cast<size_t>(axis)] = v.dim(0);
  return v.reshape(s);
}

// Negative indices count from the end of an axis of length `len`.
Tensor wrap_index(const Tensor& idx, int64_t len) {
  Tensor i = idx.cast(dtypes::int64);
  return i.lt(i.like(0.0)).where(i.add(i.like(static_cast<double>(len))), i);
}

// The axis moved to the end.
Tensor axis_last(const Tensor& x, int64_t axis) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != axis) p.push_back(i);
  p.push_back(axis);
  return x.permute(p);
}

// GatherElements: out[p] = data[p with p[axis] replaced by idx[p]] (idx and out share a shape).
Tensor gather_elements(NodeContext& n, const Tensor& data, const Tensor& idx, int64_t axis) {
  int64_t len = data.dim(axis);
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d = 0; d < data.ndim(); ++d) b.push_back({0, d == axis ? len : idx.dim(d)});
  Tensor ds = data.shrink(b);                                   // idx's shape, but len along axis
  Tensor de = axis_last(ds, axis).unsqueeze(axis).expand([&] {  // (idx shape..., len)
    Shape s = idx.shape();
    s.push_back(len);
    return s;
  }());
  Tensor k = iota(n, len);
  Tensor hit = wrap_index(idx, len).unsqueeze(-1).eq(k.reshape([&] {
    Shape s(static_cast<size_t>(idx.ndim()) + 1, 1);
    s.back() = len;
    return s;
  }()));
  return hit.where(de, de.like(0.0)).sum({-1});
}

// Scatter along an axis: the data positions each update lands on, as a mask over (data..., j).
struct ScatterMasks {
  Tensor mask;     // bool (data shape..., J): update j of this row lands here
  Tensor updates;  // (data shape..., J)
};

ScatterMasks scatter_masks(NodeContext& n, const Tensor& data, const Tensor& idx, const Tensor& upd,
                           int64_t axis) {
  int64_t len = data.dim(axis), j = idx.dim(axis);
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (int64_t d = 0; d < data.ndim(); ++d)
    pads.push_back({0, d == axis ? 0 : data.dim(d) - idx.dim(d)});
  Tensor ip = wrap_index(idx, len).pad(pads, -1.0);  // rows outside the updates never match
  Tensor up = upd.pad(pads, 0.0);
  Shape full = data.shape();
  full.push_back(j);
  Tensor ie = axis_last(ip, axis).unsqueeze(axis).expand(full);
  Tensor ue = axis_last(up, axis).unsqueeze(axis).expand(full);
  Tensor k = along(iota(n, len), axis, data.ndim()).unsqueeze(-1);
  return {ie.eq(k), ue};
}

Tensor scatter(NodeContext& n, const Tensor& data, const ScatterMasks& m,
               const std::string& reduction) {
  Tensor any = m.mask.cast(dtypes::int32).sum({-1}).gt(m.mask.like(0.0).cast(dtypes::int32));
  if (reduction == "mul") return data.mul(m.mask.where(m.updates, m.updates.like(1.0)).prod({-1}));
  Tensor sum = m.mask.where(m.updates, m.updates.like(0.0)).sum({-1});
  if (reduction == "add") return data.add(sum);
  if (reduction == "none" || reduction.empty()) return any.where(sum, data);
  n.unsupported("reduction '" + reduction + "'");
}

std::vector<int64_t> axes_input_or_attr(NodeContext& n, int opset_input) {
  if (n.opset() >= opset_input) return n.has_input(1) ? n.const_ints(1) : std::vector<int64_t>{};
  return n.attr_ints("axes", std::vector<int64_t>{});
}

Tensor pad_mode(NodeContext& n, const Tensor& x, const std::vector<int64_t>& pads,
                const std::string& mode, double value) {
  int64_t r = x.ndim();
  if (static_cast<int64_t>(pads.size()) != 2 * r)
    n.invalid("pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(r));
  std::vector<std::pair<int64_t, int64_t>> pp;
  for (int64_t i = 0; i < r; ++i)
    pp.push_back({pads[static_cast<size_t>(i)], pads[static_cast<size_t>(i + r)]});
  if (mode == "constant") return x.pad(pp, value);
  if (mode != "reflect" && mode != "edge") n.unsupported("pad mode '" + mode + "'");
  Tensor y = x;
  for (int64_t a = 0; a < r; ++a) {
    auto [lo, hi] = pp[static_cast<size_t>(a)];
    if (lo < 0 || hi < 0) n.unsupported("negative pads with mode '" + mode + "'");
    int64_t len = y.dim(a);
    auto part = [&](int64_t b, int64_t e) {
      std::vector<std::pair<int64_t, int64_t>> bd;
      for (int64_t d = 0; d < r; ++d)
        bd.push_back(d == a ? std::make_pair(b, e) : std::make_pair(int64_t{0}, y.dim(d)));
      return y.shrink(bd);
    };
    std::vector<Tensor> parts;
    if (lo > 0) {
      if (mode == "edge")
        parts.push_back(part(0, 1).expand([&] {
          Shape s = y.shape();
          s[static_cast<size_t>(a)] = lo;
          return s;
        }()));
      else {
        if (lo >= len) n.invalid("reflect padding larger than the axis");
        parts.push_back(part(1, lo + 1).flip({a}));
      }
    }
    parts.push_back(y);
    if (hi > 0) {
      if (mode == "edge")
        parts.push_back(part(len - 1, len).expand([&] {
          Shape s = y.shape();
          s[static_cast<size_t>(a)] = hi;
          return s;
        }()));
      else {
        if (hi >= len) n.invalid("reflect padding larger than the axis");
        parts.push_back(part(len - 1 - hi, len - 1).flip({a}));
      }
    }
    if (parts.size() > 1) y = concat(parts, a);
  }
  return y;
}

using V0 = std::vector<const UOp*>;

// Reshape to a shape read at run time (v): the declared output shape, each element checked to
// give its dim (the dim itself; 0 where it copies the input's equal dim; -1, at most once, whose
// inferred size is then the dim).
Shape run_time_reshape(NodeContext& n, const Tensor& x, const V0& v, bool allowzero) {
  Shape d = n.declared_shape(0, 1);
  if (d.size() != v.size())
    n.invalid("the shape input has " + std::to_string(v.size()) +
              " elements, the declared output rank " + std::to_string(d.size()));
  if (shape_numel(d) != x.numel())
    n.invalid("the declared output " + shape_str(d) + " does not hold the input's " +
              std::to_string(x.numel()) + " elements");
  std::vector<std::vector<int64_t>> allowed;
  const UOp* minus_ones = nullptr;
  for (size_t j = 0; j < d.size(); ++j) {
    allowed.push_back({d[j]});
    if (!allowzero && static_cast<int64_t>(j) < x.ndim() && x.dim(static_cast<int64_t>(j)) == d[j])
      allowed.back().push_back(0);
    if (x.numel() > 0) allowed.back().push_back(-1);
    const UOp* m = v[j]->eq(v[j]->const_like(int64_t{-1}))->cast(dtypes::index);
    minus_ones = minus_ones ? minus_ones->add(m) : m;
  }
  std::string what = "must give the shape " + shape_str(d) +
                     " the package was compiled for (the model's declared output shape)";
  require_values(n, 1, v, allowed, what);
  n.require(minus_ones->lt(minus_ones->const_like(int64_t{2})), 1, what + " (one -1 at most)");
  return d;
}

// Unsqueeze or Squeeze with axes read at run time: the declared output, its axes checked.
Tensor run_time_squeeze(NodeContext& n, const Tensor& x, const V0& v, bool unsqueeze) {
  Shape d = n.declared_shape(0, 1);
  int64_t rank = unsqueeze ? x.ndim() + static_cast<int64_t>(v.size()) : x.ndim();
  auto gives = [&](const std::vector<int64_t>& axes) {
    Shape s;
    for (int64_t i = 0, src = 0; i < rank; ++i) {
      bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
      if (unsqueeze) {
        s.push_back(listed ? 1 : x.dim(src++));
      } else if (!listed) {
        s.push_back(x.dim(i));
      } else if (x.dim(i) != 1) {
        return false;
      }
    }
    return s == d;
  };
  run_time_axes(n, 1, v, rank, gives,
                "must give the shape " + shape_str(d) + " the package was compiled for");
  return x.reshape(d);
}

// Pad with pads read at run time: the declared output; along each axis the kernel gathers
// input index i - begin (begin read from `pads` by the kernel), out of range the value
// (constant), the nearest edge (edge) or the mirror (reflect). The run fails unless begin + dim
// + end is the declared size on every axis.
Tensor run_time_pad(NodeContext& n, const Tensor& x, const V0& v, const std::string& mode) {
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    n.unsupported("pad mode '" + mode + "'");
  Shape d = n.declared_shape(0, 1);
  int64_t r = x.ndim();
  if (static_cast<int64_t>(v.size()) != 2 * r || static_cast<int64_t>(d.size()) != r)
    n.invalid("pads has " + std::to_string(v.size()) + " values for rank " + std::to_string(r));
  Tensor pads = n.input(1).cast(dtypes::int64);
  Tensor value = n.has_input(2) ? n.input(2).reshape({}).cast(x.dtype()) : x.like(0.0).reshape({});
  Tensor y = x;
  for (int64_t a = 0; a < r; ++a) {
    size_t ua = static_cast<size_t>(a);
    int64_t len = x.dim(a);
    n.require(v[ua]
                  ->add(v[ua + static_cast<size_t>(r)])
                  ->add(v[ua]->const_like(len))
                  ->eq(v[ua]->const_like(d[ua])),
              1,
              "must pad axis " + std::to_string(a) + " to " + std::to_string(d[ua]) +
                  ", the size the package was compiled for (the model's declared output)");
    if (d[ua] == 0 || len == 0) {
      if (d[ua] != 0 && mode != "constant")
        n.invalid("mode '" + mode + "' pads an empty axis " + std::to_string(a));
      Shape s = y.shape();
      s[ua] = d[ua];
      y = value.expand(s);
      continue;
    }
    Tensor begin = pads.gather(Tensor::full(n.graph(), {}, a, dtypes::int64), 0);
    Tensor i = iota(n, d[ua]).sub(begin);
    Tensor inside = i.ge(i.like(0.0)).logical_and(i.lt(i.like(static_cast<double>(len))));
    Tensor at = i.maximum(0.0).minimum(static_cast<double>(len - 1));  // constant and edge
    if (mode == "reflect" && len > 1) {
      double period = static_cast<double>(2 * (len - 1));
      Tensor m = i.mod(i.like(period)).add(i.like(period)).mod(i.like(period));
      at = m.lt(m.like(static_cast<double>(len))).where(m, m.like(period).sub(m));
    }
    Tensor g = y.gather(at, a);
    if (mode == "constant") {
      Shape s(static_cast<size_t>(r), 1);
      s[ua] = d[ua];
      g = inside.reshape(s).where(g, value);
    }
    y = g;
  }
  return y;
}

}  // namespace

void register_movement_ops(OpRegistry& r) {
  r["Identity"] = [](NodeContext& n) { return V{n.input(0)}; };
  r["Reshape"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    bool allowzero = n.attr_int("allowzero", 0) != 0;
    if (std::vector<const UOp*> v = n.opset() >= 5 ? n.run_time_ints(1) : V0{}; !v.empty())
      return V{x.reshape(run_time_reshape(n, x, v, allowzero))};
    std::vector<int64_t> s = n.opset() >= 5 ? n.const_ints(1) : n.attr_ints("shape");
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == 0 && !allowzero) {
        if (static_cast<int64_t>(i) >= x.ndim()) n.invalid("shape has a 0 beyond the input's rank");
        s[i] = x.dim(static_cast<int64_t>(i));
      }
    return V{x.reshape(s)};
  };
  r["Flatten"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += x.ndim();
    if (axis < 0 || axis > x.ndim()) n.invalid("axis out of range");
    int64_t outer = shape_numel(Shape(x.shape().begin(), x.shape().begin() + axis));
    return V{x.reshape({outer, shape_numel(Shape(x.shape().begin() + axis, x.shape().end()))})};
  };
  r["Transpose"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
    std::iota(perm.rbegin(), perm.rend(), 0);
    return V{x.permute(n.attr_ints("perm", perm))};
  };
  r["Squeeze"] = [](NodeContext& n) {
    if (V0 v = n.opset() >= 13 && n.has_input(1) ? n.run_time_ints(1) : V0{}; !v.empty())
      return V{run_time_squeeze(n, n.input(0), v, false)};
    return V{n.input(0).squeeze(axes_input_or_attr(n, 13))};
  };
  r["Unsqueeze"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (V0 v = n.opset() >= 13 && n.has_input(1) ? n.run_time_ints(1) : V0{}; !v.empty())
      return V{run_time_squeeze(n, x, v, true)};
    std::vector<int64_t> axes = axes_input_or_attr(n, 13);
    int64_t out_rank = x.ndim() + static_cast<int64_t>(axes.size());
    for (int64_t& a : axes) a = norm_axis(a, out_rank, n);
    std::sort(axes.begin(), axes.end());
    Shape s;
    size_t k = 0, src = 0;
    for (int64_t i = 0; i < out_rank; ++i) {
      if (k < axes.size() && axes[k] == i) {
        s.push_back(1);
        ++k;
      } else {
        s.push_back(x.shape()[src++]);
      }
    }
    return V{x.reshape(s)};
  };
  r["Concat"] = [](NodeContext& n) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < n.num_inputs(); ++i) xs.push_back(n.input(i));
    return V{concat(xs, n.attr_int("axis"))};
  };
  r["Split"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t axis = norm_axis(n.attr_int("axis", 0), x.ndim(), n);
    std::vector<int64_t> sizes;
    if (V0 v = n.opset() >= 13 && n.has_input(1) ? n.run_time_ints(1) : V0{}; !v.empty()) {
      // The declared outputs' sizes along the axis, each element checked to be its part's.
      if (v.size() != n.num_outputs())
        n.invalid("split has " + std::to_string(v.size()) + " sizes for " +
                  std::to_string(n.num_outputs()) + " outputs");
      std::vector<std::vector<int64_t>> allowed;
      for (size_t o = 0; o < v.size(); ++o) {
        Shape d = n.declared_shape(o, 1);
        if (static_cast<int64_t>(d.size()) != x.ndim())
          n.invalid("output " + std::to_string(o) + " is declared " + shape_str(d));
        sizes.push_back(d[static_cast<size_t>(axis)]);
        allowed.push_back({sizes.back()});
      }
      require_values(n, 1, v, allowed,
                     "must split the input into the parts the package was compiled for (" +
                         shape_str(sizes) + " along axis " + std::to_string(axis) + ")");
      return split(x, axis, sizes);
    }
    sizes = n.opset() >= 13 ? (n.has_input(1) ? n.const_ints(1) : std::vector<int64_t>{})
                            : n.attr_ints("split", std::vector<int64_t>{});
    if (sizes.empty()) {
      int64_t parts = static_cast<int64_t>(n.num_outputs()), len = x.dim(axis);
      int64_t each = (len + parts - 1) / parts;
      for (int64_t p = 0; p < parts; ++p) sizes.push_back(std::min(each, len - p * each));
    }
    return split(x, axis, sizes);
  };
  r["Slice"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    std::vector<int64_t> starts, ends, axes, steps;
    if (n.opset() < 10) {
      starts = n.attr_ints("starts");
      ends = n.attr_ints("ends");
      axes = n.attr_ints("axes", std::vector<int64_t>{});
    } else {
      for (size_t i = 1; i < 5; ++i)
        if (n.has_input(i) && !n.input_is_const(i)) return V{run_time_slice(n)};
      starts = n.const_ints(1);
      ends = n.const_ints(2);
      if (n.has_input(3)) axes = n.const_ints(3);
      if (n.has_input(4)) steps = n.const_ints(4);
    }
    for (auto* v : {&starts, &ends})
      for (int64_t& e : *v) e = std::clamp<int64_t>(e, -(int64_t{1} << 40), int64_t{1} << 40);
    return V{slice(x, starts, ends, axes, steps)};
  };
  r["Gather"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    return V{x.gather(n.input(1), n.attr_int("axis", 0))};
  };
  r["GatherElements"] = [](NodeContext& n) {
    Tensor x = n.input(0), idx = n.input(1);
    if (idx.ndim() != x.ndim()) n.invalid("indices and data differ in rank");
    return V{gather_elements(n, x, idx, norm_axis(n.attr_int("axis", 0), x.ndim(), n))};
  };
  r["GatherND"] = [](NodeContext& n) {
    Tensor x = n.input(0), idx = n.input(1).cast(dtypes::int64);
    if (idx.ndim() < 1) n.invalid("indices must have rank 1 or more");
    int64_t b = n.attr_int("batch_dims", 0), m = idx.dim(-1);
    if (b < 0 || b >= idx.ndim() || b > x.ndim())
      n.invalid(str_cat("batch_dims=", b, " for data ", shape_str(x.shape()), " and indices ",
                        shape_str(idx.shape())));
    if (m > x.ndim() - b) n.invalid("index tuples longer than the data's rank");
    // The index tuple as one linear index over the m indexed axes (negative indices wrap).
    Tensor lin;
    int64_t stride = 1;
    for (int64_t j = m - 1; j >= 0; --j) {
      int64_t len = x.dim(b + j);
      std::vector<std::pair<int64_t, int64_t>> bd;
      for (int64_t d = 0; d < idx.ndim(); ++d)
        bd.push_back(d == idx.ndim() - 1 ? std::make_pair(j, j + 1)
                                         : std::make_pair(int64_t{0}, idx.dim(d)));
      Tensor part =
          wrap_index(idx.shrink(bd).squeeze({-1}), len).mul(idx.like(static_cast<double>(stride)));
      lin = lin.valid() ? lin.add(part) : part;
      stride *= len;
    }
    Shape bshape(x.shape().begin(), x.shape().begin() + b);
    int64_t nb = shape_numel(bshape);
    Shape rest(x.shape().begin() + b + m, x.shape().end());
    Shape flat = {nb * stride};
    flat.insert(flat.end(), rest.begin(), rest.end());
    if (b > 0) {
      // Offset each index by its batch.
      Shape ib(idx.shape().begin(), idx.shape().begin() + b);
      Tensor bid = iota(n, nb).reshape(ib);
      Shape s = ib;
      s.resize(static_cast<size_t>(idx.ndim() - 1), 1);
      lin = lin.add(bid.reshape(s).mul(bid.like(static_cast<double>(stride))));
    }
    return V{x.reshape(flat).gather(lin, 0)};
  };
  auto scatter_elems = [](NodeContext& n) {
    Tensor x = n.input(0), idx = n.input(1), upd = n.input(2);
    int64_t axis = norm_axis(n.attr_int("axis", 0), x.ndim(), n);
    return V{
        scatter(n, x, scatter_masks(n, x, idx, upd, axis), n.attr_string("reduction", "none"))};
  };
  r["ScatterElements"] = scatter_elems;
  r["Scatter"] = scatter_elems;
  r["ScatterND"] = [](NodeContext& n) {
    Tensor x = n.input(0), idx = n.input(1).cast(dtypes::int64), upd = n.input(2);
    if (idx.ndim() < 1) n.invalid("indices must have rank 1 or more");
    int64_t m = idx.dim(-1);
    if (m > x.ndim()) n.invalid(str_cat("index tuples of ", m, " for data of rank ", x.ndim()));
    Shape lead(x.shape().begin(), x.shape().begin() + m),
        rest(x.shape().begin() + m, x.shape().end());
    int64_t q = shape_numel(lead);
    Tensor lin;
    int64_t stride = 1;
    for (int64_t j = m - 1; j >= 0; --j) {
      std::vector<std::pair<int64_t, int64_t>> bd;
      for (int64_t d = 0; d < idx.ndim(); ++d)
        bd.push_back(d == idx.ndim() - 1 ? std::make_pair(j, j + 1)
                                         : std::make_pair(int64_t{0}, idx.dim(d)));
      Tensor part = wrap_index(idx.shrink(bd).squeeze({-1}), x.dim(j))
                        .mul(idx.like(static_cast<double>(stride)));
      lin = lin.valid() ? lin.add(part) : part;
      stride *= x.dim(j);
    }
    int64_t p = lin.numel();
    Shape xf = {q};
    xf.insert(xf.end(), rest.begin(), rest.end());
    Shape uf = {p};
    uf.insert(uf.end(), rest.begin(), rest.end());
    Tensor data = x.reshape(xf);
    Tensor u = upd.reshape(uf);
    // mask[q, p]: update p lands on row q.
    Tensor mask = iota(n, q).reshape({q, 1}).eq(lin.reshape({1, p}));
    Shape ms = {q, p};
    ms.resize(ms.size() + rest.size(), 1);
    Tensor mk = mask.reshape(ms);
    Shape us = {1, p};
    us.insert(us.end(), rest.begin(), rest.end());
    Tensor ue = u.reshape(us);
    std::string red = n.attr_string("reduction", "none");
    Tensor out;
    if (red == "mul")
      out = data.mul(mk.where(ue, ue.like(1.0)).prod({1}));
    else {
      Tensor sum = mk.where(ue, ue.like(0.0)).sum({1});
      if (red == "add")
        out = data.add(sum);
      else if (red == "none")
        out = mk.cast(dtypes::int32).sum({1}).gt(mk.like(0.0).cast(dtypes::int32)).where(sum, data);
      else
        n.unsupported("reduction '" + red + "'");
    }
    return V{out.reshape(x.shape())};
  };
  r["Expand"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (V0 v = n.run_time_ints(1); !v.empty()) {
      // Each element is the declared dim, or 1 where the input's aligned dim is the dim.
      Shape d = n.declared_shape(0, 1);
      if (d.size() < v.size() || d.size() < x.shape().size())
        n.invalid("the declared output " + shape_str(d) + " has too few dims");
      std::vector<std::vector<int64_t>> allowed;
      for (size_t j = 0; j < v.size(); ++j) {
        size_t at = d.size() - v.size() + j;  // the output axis
        int64_t xi = static_cast<int64_t>(at) - static_cast<int64_t>(d.size() - x.shape().size());
        allowed.push_back({d[at]});
        if (xi >= 0 && x.dim(xi) == d[at]) allowed.back().push_back(1);
      }
      require_values(n, 1, v, allowed,
                     "must broadcast the input to " + shape_str(d) +
                         ", the shape the package was compiled for");
      return V{x.expand(d)};
    }
    std::vector<int64_t> s = n.const_ints(1);
    return V{x.expand(broadcast_shapes(x.shape(), s, "Expand"))};
  };
  r["Tile"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (V0 v = n.run_time_ints(1); !v.empty()) {
      Shape d = n.declared_shape(0, 1);
      if (v.size() != x.shape().size() || d.size() != v.size())
        n.invalid("repeats, the input and the declared output differ in rank");
      std::vector<int64_t> reps;
      std::vector<std::vector<int64_t>> allowed;
      for (size_t j = 0; j < v.size(); ++j) {
        int64_t xi = x.shape()[j];
        if (xi == 0 ? d[j] != 0 : d[j] % xi != 0)
          n.invalid("the declared output " + shape_str(d) + " is no tiling of the input");
        reps.push_back(xi == 0 ? 0 : d[j] / xi);
        allowed.push_back({reps.back()});
      }
      require_values(
          n, 1, v, allowed,
          "must repeat the input to " + shape_str(d) + ", the shape the package was compiled for");
      return V{tile(x, reps)};
    }
    return V{tile(x, n.const_ints(1))};
  };
  r["Pad"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    std::string mode = n.attr_string("mode", "constant");
    if (n.opset() < 11)
      return V{pad_mode(n, x, n.attr_ints("pads"), mode, n.attr_float("value", 0.0))};
    if (V0 v = n.run_time_ints(1); !v.empty()) return V{run_time_pad(n, x, v, mode)};
    std::vector<int64_t> pads = n.const_ints(1);
    double value = 0.0;
    if (n.has_input(2)) {
      std::vector<double> v = n.const_floats(2);
      if (!v.empty()) value = v[0];
    }
    return V{pad_mode(n, x, pads, mode, value)};
  };
  r["DepthToSpace"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t b = n.attr_int("blocksize"), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    bool crd = n.attr_string("mode", "DCR") == "CRD";
    Tensor t = crd ? x.reshape({N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3})
                   : x.reshape({N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2});
    return V{t.reshape({N, C / (b * b), H * b, W * b})};
  };
  r["SpaceToDepth"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t b = n.attr_int("blocksize"), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    return V{x.reshape({N, C, H / b, b, W / b, b})
                 .permute({0, 3, 5, 1, 2, 4})
                 .reshape({N, C * b * b, H / b, W / b})};
  };
  r["ReverseSequence"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t ta = n.attr_int("time_axis", 0), ba = n.attr_int("batch_axis", 1);
    Tensor lens = n.input(1).cast(dtypes::int64);
    int64_t T = x.dim(ta);
    Tensor t = along(iota(n, T), ta, x.ndim());
    Tensor l = along(lens, ba, x.ndim());
    Tensor idx = t.lt(l).where(l.sub(t).sub(t.like(1.0)), t).expand(x.shape());
    return V{gather_elements(n, x, idx, ta)};
  };
}

}  // namespace kiln::onnxfe
