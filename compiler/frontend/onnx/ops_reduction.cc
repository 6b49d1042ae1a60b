// Reductions, arg-reductions, softmax and friends, cumulative sums.
#include <algorithm>
#include <limits>
#include <numeric>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/run_time_operands.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/nn.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// The axes of a Reduce* node: the `axes` attribute, or (ReduceSum from opset 13, the others
// from 18) the optional second input; empty means all axes unless noop_with_empty_axes.
struct Axes {
  std::vector<int64_t> axes;
  bool noop = false;
};

// Axes read at run time: the candidates that give the declared output must reduce the same
// axes (they may differ in axes of size 1, which reducing leaves as they are).
std::vector<int64_t> run_time_reduce_axes(NodeContext& n, const std::vector<const UOp*>& v) {
  const Tensor& x = n.input(0);
  bool keep = n.attr_int("keepdims", 1) != 0;
  Shape d = n.declared_shape(0, 1);
  auto reduced = [&](const std::vector<int64_t>& axes) {
    Shape s;
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (std::find(axes.begin(), axes.end(), i) == axes.end())
        s.push_back(x.dim(i));
      else if (keep)
        s.push_back(1);
    return s;
  };
  auto wide = [&](const std::vector<int64_t>& axes) {
    std::vector<int64_t> w;
    for (int64_t a : axes)
      if (x.dim(a) != 1) w.push_back(a);
    return w;
  };
  std::vector<std::vector<int64_t>> c = run_time_axes(
      n, 1, v, x.ndim(), [&](const std::vector<int64_t>& axes) { return reduced(axes) == d; },
      "must give the axes that reduce to " + shape_str(d) +
          ", the shape the package was "
          "compiled for");
  for (const auto& axes : c)
    if (wide(axes) != wide(c[0]))
      n.needs_freeze(1, "reducing axes " + shape_str(c[0]) + " or " + shape_str(axes) +
                            " both give the declared output " + shape_str(d));
  return c[0];
}

Axes reduce_axes(NodeContext& n, bool axes_as_input) {
  Axes a;
  if (axes_as_input) {
    std::vector<const UOp*> v = n.has_input(1) ? n.run_time_ints(1) : std::vector<const UOp*>{};
    if (!v.empty())
      a.axes = run_time_reduce_axes(n, v);
    else if (n.has_input(1))
      a.axes = n.const_ints(1);
  } else {
    a.axes = n.attr_ints("axes", std::vector<int64_t>{});
  }
  a.noop = a.axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0;
  return a;
}

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

OpHandler reduce(Kind k, int axes_input_opset) {
  return [k, axes_input_opset](NodeContext& n) {
    Tensor x = n.input(0);
    Axes a = reduce_axes(n, n.opset() >= axes_input_opset);
    bool keep = n.attr_int("keepdims", 1) != 0;
    if (a.noop) return V{x};
    std::vector<int64_t> axes = a.axes;
    for (int64_t& ax : axes) ax = norm_axis(ax, x.ndim(), n);
    switch (k) {
      case Kind::Sum:
        return V{x.sum(axes, keep)};
      case Kind::Mean:
        return V{x.mean(axes, keep)};
      case Kind::Max:
        return V{x.max(axes, keep)};
      case Kind::Min:
        return V{x.min(axes, keep)};
      case Kind::Prod:
        return V{x.prod(axes, keep)};
      case Kind::L1:
        return V{x.abs().sum(axes, keep)};
      case Kind::L2:
        return V{x.mul(x).sum(axes, keep).sqrt()};
      case Kind::SumSquare:
        return V{x.mul(x).sum(axes, keep)};
      case Kind::LogSum:
        return V{x.sum(axes, keep).log()};
      case Kind::LogSumExp: {
        Tensor m = x.max(axes, true);
        Tensor s = x.sub(m).exp().sum(axes, true).log().add(m);
        return V{keep ? s : s.squeeze(axes.empty() ? std::vector<int64_t>{} : axes)};
      }
    }
    return V{x};
  };
}

// ArgMax/ArgMin: the first (or last) index of the extreme along `axis`, as int64.
OpHandler arg_reduce(bool is_max) {
  return [is_max](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t axis = norm_axis(n.attr_int("axis", 0), x.ndim(), n);
    bool keep = n.attr_int("keepdims", 1) != 0, last = n.attr_int("select_last_index", 0) != 0;
    int64_t len = x.dim(axis);
    Tensor m = is_max ? x.max({axis}, true) : x.min({axis}, true);
    std::vector<double> iota(static_cast<size_t>(len));
    std::iota(iota.begin(), iota.end(), 0.0);
    Shape s(static_cast<size_t>(x.ndim()), 1);
    s[static_cast<size_t>(axis)] = len;
    Tensor idx = n.constant(make_array(dtypes::int64, {len}, iota)).reshape(s);
    Tensor none = idx.like(last ? -1.0 : static_cast<double>(len));
    Tensor cand = x.eq(m).where(idx, none);
    Tensor r = last ? cand.max({axis}, true) : cand.min({axis}, true);
    return V{keep ? r : r.squeeze({axis})};
  };
}

// Softmax family: from opset 13 along `axis`; before, over the flattened axes from `axis` on.
OpHandler softmax_like(int which) {
  return [which](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t axis = norm_axis(n.attr_int("axis", n.opset() >= 13 ? -1 : 1), x.ndim(), n);
    Tensor in = x;
    int64_t a = axis;
    if (n.opset() < 13) {
      in = x.reshape({shape_numel(Shape(x.shape().begin(), x.shape().begin() + axis)), -1});
      a = 1;
    }
    Tensor r;
    if (which == 0)
      r = softmax(in, a);
    else if (which == 1)
      r = log_softmax(in, a);
    else {
      // Hardmax: 1 at the first maximum along the axis.
      int64_t len = in.dim(a);
      std::vector<double> iota(static_cast<size_t>(len));
      std::iota(iota.begin(), iota.end(), 0.0);
      Shape s(static_cast<size_t>(in.ndim()), 1);
      s[static_cast<size_t>(a)] = len;
      Tensor idx = n.constant(make_array(dtypes::int64, {len}, iota)).reshape(s);
      Tensor first =
          in.eq(in.max({a}, true)).where(idx, idx.like(static_cast<double>(len))).min({a}, true);
      r = idx.eq(first).where(in.like(1.0), in.like(0.0));
    }
    return V{r.reshape(x.shape())};
  };
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  r["ReduceSum"] = reduce(Kind::Sum, 13);
  r["ReduceMean"] = reduce(Kind::Mean, 18);
  r["ReduceMax"] = reduce(Kind::Max, 18);
  r["ReduceMin"] = reduce(Kind::Min, 18);
  r["ReduceProd"] = reduce(Kind::Prod, 18);
  r["ReduceL1"] = reduce(Kind::L1, 18);
  r["ReduceL2"] = reduce(Kind::L2, 18);
  r["ReduceLogSum"] = reduce(Kind::LogSum, 18);
  r["ReduceLogSumExp"] = reduce(Kind::LogSumExp, 18);
  r["ReduceSumSquare"] = reduce(Kind::SumSquare, 18);
  r["ArgMax"] = arg_reduce(true);
  r["ArgMin"] = arg_reduce(false);
  r["Softmax"] = softmax_like(0);
  r["LogSoftmax"] = softmax_like(1);
  r["Hardmax"] = softmax_like(2);
  // A run-time axis (a model input) decides which axis is scanned, not the shape: the scan is
  // built along every axis and the kernel selects by the axis value (rank times the work; an
  // axis outside [-rank, rank) selects the last axis, as there is no run-time error path).
  r["CumSum"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    bool exclusive = n.attr_int("exclusive", 0) != 0, reverse = n.attr_int("reverse", 0) != 0;
    if (n.input_is_const(1)) {
      std::vector<int64_t> ax = n.const_ints(1);
      if (ax.size() != 1) n.invalid("axis must be a single value");
      return V{cumsum(x, norm_axis(ax[0], x.ndim(), n), exclusive, reverse)};
    }
    Tensor ax = n.input(1);
    if (!ax.dtype().is_int()) n.invalid("axis must be int32 or int64");
    if (ax.numel() != 1) n.invalid("axis must be a single value");
    if (x.ndim() == 0) n.invalid("input must have at least 1 dimension");
    ax = ax.reshape({}).cast(dtypes::int64);
    int64_t rank = x.ndim();
    Tensor out = cumsum(x, rank - 1, exclusive, reverse);
    for (int64_t a = rank - 2; a >= 0; --a) {
      Tensor is_a = ax.eq(ax.like(static_cast<double>(a)))
                        .logical_or(ax.eq(ax.like(static_cast<double>(a - rank))));
      out = is_a.where(cumsum(x, a, exclusive, reverse), out);
    }
    return V{out};
  };
}

}  // namespace kiln::onnxfe
