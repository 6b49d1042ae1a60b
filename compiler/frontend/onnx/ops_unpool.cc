// MaxUnpool (opsets 9-11): each pooled value written back at the index MaxPool recorded.
//
// A scatter, built as a gather: the spec's indices come from MaxPool, so the element written at
// output position o can only come from a pooled position whose window covers o — at most
// ceil(k/s) per axis. For each such candidate (compile-time index tables per axis) the pooled
// value is taken where its recorded index equals o's flat index (over N, C and the output's
// spatial axes), and zero where none does. With output_shape, the result keeps its coordinates
// and is padded at the end (as ONNX's reference places it).
#include <limits>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/run_time_operands.h"
#include "compiler/tensor/indexing.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

V max_unpool(NodeContext& n) {
  Tensor x = n.input(0), idx = n.input(1);
  if (x.ndim() < 3) n.invalid("X must be (N, C, spatial...), got " + shape_str(x.shape()));
  if (idx.shape() != x.shape() || !idx.dtype().is_int())
    n.invalid("I must be integers of X's shape " + shape_str(x.shape()));
  size_t ns = static_cast<size_t>(x.ndim() - 2);
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  if (kernel.size() != ns || strides.size() != ns || pads.size() != 2 * ns)
    n.invalid("kernel_shape, strides and pads need a value (pads two) per spatial axis");
  Shape out = {x.dim(0), x.dim(1)};
  for (size_t d = 0; d < ns; ++d) {
    if (kernel[d] < 1 || strides[d] < 1) n.invalid("kernel_shape and strides must be positive");
    out.push_back((x.dim(static_cast<int64_t>(2 + d)) - 1) * strides[d] + kernel[d] - pads[d] -
                  pads[d + ns]);
    if (out.back() < 1) n.invalid("the output would be empty");
  }
  Graph& g = n.graph();
  // o's flat index over (N, C, spatial...), from per-axis aranges.
  Shape nc1 = {x.dim(0), x.dim(1)};
  nc1.insert(nc1.end(), ns, 1);
  int64_t plane = 1;
  for (size_t d = 0; d < ns; ++d) plane *= out[2 + d];
  Tensor flat = arange(g, 0, static_cast<double>(x.dim(0) * x.dim(1) * plane),
                       static_cast<double>(plane), dtypes::int64)
                    .reshape(nc1);
  int64_t stride = 1;
  for (size_t d = ns; d-- > 0;) {
    Shape s(ns + 2, 1);
    s[2 + d] = out[2 + d];
    flat = flat.add(arange(g, 0, static_cast<double>(out[2 + d]), 1, dtypes::int64)
                        .mul(Tensor::scalar(g, ConstValue::of_int(stride), dtypes::int64))
                        .reshape(s));
    stride *= out[2 + d];
  }
  Tensor id64 = idx.cast(dtypes::int64);
  // Candidates: per axis t = 0..ceil(k/s)-1, pooled position floor((o + pad) / s) - t.
  std::vector<int64_t> per_axis(ns);
  int64_t combos = 1;
  for (size_t d = 0; d < ns; ++d) {
    per_axis[d] = (kernel[d] + strides[d] - 1) / strides[d];
    combos *= per_axis[d];
  }
  Tensor best, any;
  for (int64_t c = 0; c < combos; ++c) {
    Tensor xv = x, iv = id64, valid;
    int64_t rest = c;
    for (size_t d = 0; d < ns; ++d) {
      int64_t t = rest % per_axis[d];
      rest /= per_axis[d];
      int64_t in = x.dim(static_cast<int64_t>(2 + d));
      std::vector<double> take, ok;
      for (int64_t o = 0; o < out[2 + d]; ++o) {
        int64_t p = o + pads[d];
        int64_t j = p / strides[d] - t;
        bool covers = j >= 0 && j < in && p - j * strides[d] < kernel[d];
        take.push_back(static_cast<double>(covers ? j : 0));
        ok.push_back(covers ? 1.0 : 0.0);
      }
      Tensor table = n.constant(make_array(dtypes::int64, {out[2 + d]}, take));
      xv = xv.gather(table, static_cast<int64_t>(2 + d));
      iv = iv.gather(table, static_cast<int64_t>(2 + d));
      Shape s(ns + 2, 1);
      s[2 + d] = out[2 + d];
      Tensor m = n.constant(make_array(dtypes::bool_, s, ok));
      valid = valid.valid() ? valid.logical_and(m) : m;
    }
    Tensor hit = valid.logical_and(iv.eq(flat));
    Tensor v = hit.where(xv, x.like(-std::numeric_limits<double>::infinity()));
    best = best.valid() ? best.maximum(v) : v;  // overlapping windows record equal values
    any = any.valid() ? any.logical_or(hit) : hit;
  }
  Tensor y = any.where(best, x.like(0.0));
  if (n.has_input(2)) {
    std::vector<int64_t> want =
        ints_or_declared(n, 2, 0, [](const Shape& d) { return d; }, "the output shape");
    if (want.size() != out.size())
      n.invalid("output_shape has " + std::to_string(want.size()) + " values for a rank-" +
                std::to_string(out.size()) + " output");
    std::vector<std::pair<int64_t, int64_t>> grow;
    for (size_t d = 0; d < out.size(); ++d) {
      if (want[d] < out[d] || (d < 2 && want[d] != out[d]))
        n.invalid("output_shape " + shape_str(Shape(want.begin(), want.end())) +
                  " is smaller than the unpooled " + shape_str(out));
      grow.push_back({0, want[d] - out[d]});
    }
    y = y.pad(grow, 0.0);
  }
  return V{y};
}

}  // namespace

void register_unpool_ops(OpRegistry& r) {
  r["MaxUnpool"] = max_unpool;
}

}  // namespace kiln::onnxfe
