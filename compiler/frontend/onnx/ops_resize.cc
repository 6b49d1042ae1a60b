// Resize (opsets 10-13) and Upsample (7-9): nearest, linear and cubic, every
// coordinate_transformation_mode and nearest_mode, scales or sizes.
//
// With constant scales (or sizes) and roi every output position's source taps and weights are
// known at compile time; a scale or roi read at run time is run_time_resize.cc's. Resize is
// separable: each resized axis is one gather of the taps (an index table, a constant) and a
// weighted sum over them (a weight table), so an n-D linear resize is n small fusable steps. An
// axis whose table is the identity is skipped; nearest by an integer factor is a repeat, and
// linear or cubic taps are windows over the input (resize_windows.cc): movement ops only, no
// gather, unless the taps spread too wide.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/resize.h"
#include "compiler/frontend/onnx/run_time_operands.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

double source_coordinate(const ResizeMode& m, int64_t o, int64_t in, double scale, double roi_start,
                         double roi_end) {
  double x = static_cast<double>(o), len = static_cast<double>(in);
  double out = scale * len;  // as the spec's reference: a float when scales are given
  const std::string& t = m.transform;
  if (t == "align_corners") return out == 1 ? 0.0 : x * (len - 1) / (out - 1);
  if (t == "asymmetric") return x / scale;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (t == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
  if (t == "tf_crop_and_resize") {
    double span = (roi_end - roi_start) * (len - 1);
    return roi_start * (len - 1) + (out == 1 ? span / 2 : x * span / (out - 1));
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const ResizeMode& m, double x, double scale) {
  const std::string& r = m.nearest;
  if (r == "floor") return static_cast<int64_t>(std::floor(x));
  if (r == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (r == "simple") return static_cast<int64_t>(scale < 1 ? std::ceil(x) : std::floor(x));
  double f = std::floor(x);
  if (x - f == 0.5) return static_cast<int64_t>(r == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

std::vector<double> cubic_coeffs(double r, double a) {
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < d < 2
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // d <= 1
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

Taps axis_taps(const ResizeMode& m, int64_t in, int64_t out, double scale, double roi_start,
               double roi_end) {
  Taps t;
  t.n = m.mode == "nearest" ? 1 : m.mode == "linear" ? 2 : 4;
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coordinate(m, o, in, scale, roi_start, roi_end);
    bool outside =
        m.transform == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1));
    t.outside.push_back(outside);
    if (t.n == 1) {
      t.idx.push_back(std::clamp<int64_t>(nearest_index(m, x, scale), 0, in - 1));
      t.w.push_back(outside ? 0.0 : 1.0);
      continue;
    }
    // The taps left of x (x itself counts as right of its left neighbour: ratio in (0, 1]).
    double f = std::floor(x);
    double ratio = x - f;
    int64_t left = static_cast<int64_t>(f);
    if (ratio == 0) {
      ratio = 1;
      left -= 1;
    }
    std::vector<double> c =
        t.n == 2 ? std::vector<double>{1 - ratio, ratio} : cubic_coeffs(ratio, m.cubic_a);
    int64_t first = t.n == 2 ? left : left - 1;
    double sum = 0;
    for (int64_t k = 0; k < t.n; ++k) {
      int64_t i = first + k;
      if (m.exclude_outside && (i < 0 || i >= in)) c[static_cast<size_t>(k)] = 0;
      sum += c[static_cast<size_t>(k)];
    }
    for (int64_t k = 0; k < t.n; ++k) {
      double wk = c[static_cast<size_t>(k)];
      if (m.exclude_outside) wk /= sum;
      t.idx.push_back(std::clamp<int64_t>(first + k, 0, in - 1));
      t.w.push_back(outside ? 0.0 : wk);
    }
  }
  return t;
}

// Output o reads input o with weight 1 (nothing to do on this axis).
bool is_identity(const Taps& t, int64_t in, int64_t out) {
  if (in != out) return false;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < t.n; ++k) {
      size_t j = static_cast<size_t>(o * t.n + k);
      if (t.outside[static_cast<size_t>(o)]) return false;
      if (t.w[j] != 0 && (t.idx[j] != o || t.w[j] != 1)) return false;
    }
  return true;
}

// Nearest taps that read input o / k for an integer k: a repeat.
int64_t repeat_factor(const Taps& t, int64_t in, int64_t out) {
  if (t.n != 1 || out % in) return 0;
  int64_t k = out / in;
  for (int64_t o = 0; o < out; ++o)
    if (t.idx[static_cast<size_t>(o)] != o / k || t.outside[static_cast<size_t>(o)]) return 0;
  return k;
}

Tensor resize_axis(NodeContext& n, const Tensor& x, int64_t axis, const Taps& t, int64_t out,
                   double extrapolation) {
  int64_t in = x.dim(axis);
  if (is_identity(t, in, out)) return x;
  if (int64_t k = repeat_factor(t, in, out)) {
    Shape up = x.shape();
    up.insert(up.begin() + axis + 1, k);
    Shape merged = x.shape();
    merged[static_cast<size_t>(axis)] = out;
    return x.unsqueeze(axis + 1).expand(up).reshape(merged);
  }
  if (std::optional<Tensor> r = resize_by_windows(n, x, axis, t, out)) return *r;
  std::vector<double> idx(t.idx.begin(), t.idx.end());
  Tensor table = n.constant(make_array(dtypes::int64, {out, t.n}, idx));
  Tensor taps = x.gather(table, axis);  // (..., out, n, ...)
  int64_t trailing = x.ndim() - 1 - axis;
  Shape wshape = {out, t.n};
  for (int64_t d = 0; d < trailing; ++d) wshape.push_back(1);
  Tensor r = taps;
  bool any_outside = std::find(t.outside.begin(), t.outside.end(), true) != t.outside.end();
  if (t.n > 1 || any_outside) {
    if (!x.dtype().is_float())
      n.unsupported("a " + std::string(t.n > 1 ? "linear or cubic" : "tf_crop_and_resize") +
                    " Resize of a non-float tensor");
    Tensor w = n.constant(make_array(x.dtype(), wshape, t.w));
    r = taps.mul(w);
  }
  r = r.sum({axis + 1});
  if (any_outside) {
    Shape mshape = {out};
    for (int64_t d = 0; d < trailing; ++d) mshape.push_back(1);
    std::vector<double> mask(t.outside.begin(), t.outside.end());
    r = n.constant(make_array(dtypes::bool_, mshape, mask)).where(r.like(extrapolation), r);
  }
  return r;
}

// Resize x to `out` with per-axis `scale`s (as the coordinate transform sees them).
Tensor resize(NodeContext& n, const Tensor& x, const ResizeMode& m, const Shape& out,
              const std::vector<double>& scales, const std::vector<double>& roi) {
  Tensor r = x;
  int64_t rank = x.ndim();
  for (int64_t a = 0; a < rank; ++a) {
    size_t k = static_cast<size_t>(a);
    if (out[k] <= 0) n.invalid("output axis " + std::to_string(a) + " would be empty");
    double start = roi.empty() ? 0.0 : roi[k], end = roi.empty() ? 1.0 : roi[k + rank];
    Taps t = axis_taps(m, x.dim(a), out[k], scales[k], start, end);
    r = resize_axis(n, r, a, t, out[k], m.extrapolation);
  }
  return r;
}

ResizeMode resize_mode(NodeContext& n) {
  ResizeMode m;
  m.mode = n.attr_string("mode", "nearest");
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    n.invalid("mode '" + m.mode + "' (nearest, linear or cubic)");
  if (n.opset() < 11) {  // Resize-10 and Upsample: asymmetric, nearest by truncation
    m.transform = "asymmetric";
    m.nearest = "simple";
    return m;
  }
  m.transform = n.attr_string("coordinate_transformation_mode", "half_pixel");
  static const std::vector<std::string> kTransforms = {
      "half_pixel", "pytorch_half_pixel",   "align_corners",
      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(kTransforms.begin(), kTransforms.end(), m.transform) == kTransforms.end())
    n.invalid("coordinate_transformation_mode '" + m.transform + "'");
  m.nearest = n.attr_string("nearest_mode", "round_prefer_floor");
  if (m.nearest != "round_prefer_floor" && m.nearest != "round_prefer_ceil" &&
      m.nearest != "floor" && m.nearest != "ceil")
    n.invalid("nearest_mode '" + m.nearest + "'");
  m.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
  m.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  m.extrapolation = n.attr_float("extrapolation_value", 0.0);
  if (n.has_attr("antialias") || n.has_attr("axes") || n.has_attr("keep_aspect_ratio_policy"))
    n.unsupported("the opset-18 attributes antialias, axes and keep_aspect_ratio_policy");
  return m;
}

// The output shape and per-axis scales from `scales` or `sizes` (exactly one of them).
std::pair<Shape, std::vector<double>> target(NodeContext& n, const Tensor& x,
                                             const std::vector<double>& scales,
                                             const std::vector<int64_t>& sizes) {
  size_t rank = static_cast<size_t>(x.ndim());
  if (!scales.empty() && !sizes.empty()) n.invalid("both scales and sizes are given (one only)");
  if (scales.empty() && sizes.empty()) n.invalid("neither scales nor sizes is given");
  Shape out(rank);
  std::vector<double> s(rank);
  if (!scales.empty()) {
    if (scales.size() != rank)
      n.invalid("scales has " + std::to_string(scales.size()) + " values for a rank-" +
                std::to_string(rank) + " input");
    for (size_t k = 0; k < rank; ++k) {
      if (!(scales[k] > 0)) n.invalid("scales must be positive, got " + std::to_string(scales[k]));
      s[k] = scales[k];
      out[k] = static_cast<int64_t>(std::floor(static_cast<double>(x.shape()[k]) * scales[k]));
    }
  } else {
    if (sizes.size() != rank)
      n.invalid("sizes has " + std::to_string(sizes.size()) + " values for a rank-" +
                std::to_string(rank) + " input");
    for (size_t k = 0; k < rank; ++k) {
      out[k] = sizes[k];
      s[k] = static_cast<double>(sizes[k]) / static_cast<double>(x.shape()[k]);
    }
  }
  return {out, s};
}

std::string float_str(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// Resize (or Upsample) with its scales or roi read at run time: compiled for the declared output
// shape; each scale read at run time is checked to give it (and, for Upsample, to be at least 1).
Tensor resize_at_run_time(NodeContext& n, const Tensor& x, const ResizeMode& m, size_t scales_at,
                          bool upsample) {
  size_t rank = static_cast<size_t>(x.ndim());
  Graph& g = n.graph();
  auto element = [&](const Tensor& t, size_t k) {
    return t.gather(Tensor::full(g, {}, static_cast<double>(k), dtypes::int64), 0);
  };
  Shape out;
  std::vector<Tensor> scale, roi_start, roi_end;
  if (n.has_input(scales_at) && !n.input_is_const(scales_at)) {
    if (!upsample && n.opset() >= 11 && n.has_input(3))
      n.invalid("both scales and sizes are given (one only)");
    std::vector<const UOp*> bits = n.run_time_float_bits(scales_at);
    if (bits.size() != rank)
      n.invalid("scales has " + std::to_string(bits.size()) + " values for a rank-" +
                std::to_string(rank) + " input");
    out = n.declared_shape(0, scales_at);
    if (out.size() != rank) n.invalid("the declared output's rank differs from the input's");
    Tensor s = n.input(scales_at).cast(dtypes::float64).reshape({static_cast<int64_t>(rank)});
    for (size_t k = 0; k < rank; ++k) {
      auto [lo, hi] = scales_giving(x.shape()[k], out[k]);
      if (upsample) lo = std::max(lo, 1.0f);
      if (!(lo <= hi))
        n.invalid("no scale gives axis " + std::to_string(k) + " the declared size " +
                  std::to_string(out[k]) + " from " + std::to_string(x.shape()[k]));
      n.require(float_between(bits[k], lo, hi), scales_at,
                "must give the output shape " + shape_str(out) +
                    " the package was compiled for (the model's declared output shape): scale " +
                    std::to_string(k) + " in [" + float_str(lo) + ", " + float_str(hi) + "]");
      scale.push_back(element(s, k));
    }
  } else {
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    if (n.has_input(scales_at)) scales = n.const_floats(scales_at);
    if (n.has_input(3))
      sizes = ints_or_declared(n, 3, 0, [](const Shape& d) { return d; }, "the output sizes");
    auto [o, sv] = target(n, x, scales, sizes);
    out = o;
    for (double v : sv) scale.push_back(Tensor::full(g, {}, v, dtypes::float64));
  }
  if (m.transform == "tf_crop_and_resize") {
    Tensor roi = n.input(1).cast(dtypes::float64);
    if (roi.numel() != static_cast<int64_t>(2 * rank))
      n.invalid("roi must have 2 values per axis, got " + std::to_string(roi.numel()));
    roi = roi.reshape({roi.numel()});
    for (size_t k = 0; k < rank; ++k) {
      roi_start.push_back(element(roi, k));
      roi_end.push_back(element(roi, k + rank));
    }
  }
  return run_time_resize(n, x, m, out, scale, roi_start, roi_end);
}

V resize_op(NodeContext& n) {
  Tensor x = n.input(0);
  ResizeMode m = resize_mode(n);
  size_t scales_at = n.opset() < 11 ? 1 : 2;
  bool crop = m.transform == "tf_crop_and_resize";
  if ((n.has_input(scales_at) && !n.input_is_const(scales_at)) ||
      (crop && n.has_input(1) && !n.input_is_const(1)))
    return V{resize_at_run_time(n, x, m, scales_at, false)};
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (n.opset() < 11) {
    scales = n.const_floats(1);
  } else {
    if (n.has_input(2)) scales = n.const_floats(2);
    if (n.has_input(3))
      sizes = ints_or_declared(n, 3, 0, [](const Shape& d) { return d; }, "the output sizes");
    if (m.transform == "tf_crop_and_resize") {
      if (!n.has_input(1)) n.invalid("tf_crop_and_resize needs roi");
      roi = n.const_floats(1);
      if (roi.size() != 2 * static_cast<size_t>(x.ndim()))
        n.invalid("roi must have 2 values per axis, got " + std::to_string(roi.size()));
    }
  }
  auto [out, s] = target(n, x, scales, sizes);
  return V{resize(n, x, m, out, s, roi)};
}

V upsample_op(NodeContext& n) {
  Tensor x = n.input(0);
  ResizeMode m;
  m.mode = n.attr_string("mode", "nearest");
  if (m.mode != "nearest" && m.mode != "linear")
    n.invalid("mode '" + m.mode + "' (nearest or linear)");
  m.transform = "asymmetric";
  m.nearest = "simple";
  if (n.opset() >= 9 && !n.input_is_const(1)) return V{resize_at_run_time(n, x, m, 1, true)};
  std::vector<double> scales = n.opset() < 9 ? n.attr_floats("scales") : n.const_floats(1);
  for (double v : scales)
    if (v < 1) n.invalid("Upsample scales must be at least 1");
  auto [out, s] = target(n, x, scales, {});
  return V{resize(n, x, m, out, s, {})};
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  r["Resize"] = resize_op;
  r["Upsample"] = upsample_op;
}

}  // namespace kiln::onnxfe
