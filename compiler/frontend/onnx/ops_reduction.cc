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
  // Axes read at run time that several sets could be: the others, each computed too and
  // selected by the kernel when the run-time axes are that set (`axes_input` holds them).
  std::vector<std::vector<int64_t>> alternatives;
};

// Axes read at run time: the sets that give the declared output, one per distinct reduction
// (sets that differ only in axes of size 1, which reducing leaves as they are, are one).
std::vector<std::vector<int64_t>> run_time_reduce_axes(NodeContext& n,
                                                       const std::vector<const UOp*>& v) {
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
  std::vector<std::vector<int64_t>> distinct;
  for (const auto& axes : c) {
    bool seen = false;
    for (const auto& o : distinct) seen |= wide(o) == wide(axes);
    if (!seen) distinct.push_back(axes);
  }
  if (distinct.size() > 4)
    n.needs_freeze(1, std::to_string(distinct.size()) + " reductions (of axes " +
                          shape_str(distinct[0]) + ", " + shape_str(distinct[1]) +
                          ", ...) give the declared output " + shape_str(d) +
                          "; kiln computes at most 4 and selects at run time");
  return distinct;
}

Axes reduce_axes(NodeContext& n, bool axes_as_input) {
  Axes a;
  if (axes_as_input) {
    std::vector<const UOp*> v = n.has_input(1) ? n.run_time_ints(1) : std::vector<const UOp*>{};
    if (!v.empty()) {
      std::vector<std::vector<int64_t>> sets = run_time_reduce_axes(n, v);
      a.axes = sets[0];
      a.alternatives.assign(sets.begin() + 1, sets.end());
    } else if (n.has_input(1))
      a.axes = n.const_ints(1);
  } else {
    a.axes = n.attr_ints("axes", std::vector<int64_t>{});
  }
  a.noop = a.axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0;
  return a;
}

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// Reduction k of x over `axes` (negative ones counting from the end).
Tensor reduce_over(const Tensor& x, Kind k, std::vector<int64_t> axes, bool keep, NodeContext& n);

OpHandler reduce(Kind k, int axes_input_opset) {
  return [k, axes_input_opset](NodeContext& n) {
    Tensor x = n.input(0);
    Axes a = reduce_axes(n, n.opset() >= axes_input_opset);
    bool keep = n.attr_int("keepdims", 1) != 0;
    if (a.noop) return V{x};
    auto one = [&](std::vector<int64_t> axes) { return reduce_over(x, k, axes, keep, n); };
    Tensor y = one(a.axes);
    // Run-time axes that are one of several sets: each set's reduction, the kernel picks the one
    // whose axes the input names (the checks make them distinct members of one set).
    for (const std::vector<int64_t>& alt : a.alternatives) {
      Tensor ax = n.input(1).cast(dtypes::int64).reshape({n.input(1).numel()});
      Tensor is;
      for (int64_t j = 0; j < ax.numel(); ++j) {
        Tensor e = ax.gather(Tensor::full(n.graph(), {}, static_cast<double>(j), dtypes::int64), 0);
        Tensor in;
        for (int64_t p : alt) {
          Tensor m = e.eq(e.like(static_cast<double>(p)))
                         .logical_or(e.eq(e.like(static_cast<double>(p - x.ndim()))));
          in = in.valid() ? in.logical_or(m) : m;
        }
        is = is.valid() ? is.logical_and(in) : in;
      }
      y = is.where(one(alt), y);
    }
    return V{y};
  };
}

Tensor reduce_over(const Tensor& x, Kind k, std::vector<int64_t> axes, bool keep, NodeContext& n) {
  for (int64_t& ax : axes) ax = norm_axis(ax, x.ndim(), n);
  switch (k) {
    case Kind::Sum:
      return x.sum(axes, keep);
    case Kind::Mean:
      return x.mean(axes, keep);
    case Kind::Max:
      return x.max(axes, keep);
    case Kind::Min:
      return x.min(axes, keep);
    case Kind::Prod:
      return x.prod(axes, keep);
    case Kind::L1:
      return x.abs().sum(axes, keep);
    case Kind::L2:
      return x.mul(x).sum(axes, keep).sqrt();
    case Kind::SumSquare:
      return x.mul(x).sum(axes, keep);
    case Kind::LogSum:
      return x.sum(axes, keep).log();
    case Kind::LogSumExp: {
      Tensor m = x.max(axes, true);
      Tensor s = x.sub(m).exp().sum(axes, true).log().add(m);
      return keep ? s : s.squeeze(axes.empty() ? std::vector<int64_t>{} : axes);
    }
  }
  return x;
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
