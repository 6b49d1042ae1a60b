// Resize with a scale or the roi read at run time (an ONNX node test feeds `scales` as a model
// input): the output shape is the model's declared one (ops_resize.cc checks the scales give it),
// and the source coordinate of each output position, its taps and their weights are computed by
// the kernel in float64 from the run-time scale, as the compile-time tables are (ops_resize.cc).
#include <bit>
#include <climits>
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/resize.h"

namespace kiln::onnxfe {

namespace {

// Output positions o (float64, [out]) to source coordinates, per coordinate_transformation_mode.
Tensor source_coordinates(const ResizeMode& m, const Tensor& o, double len, const Tensor& s,
                          const Tensor& r0, const Tensor& r1) {
  Tensor out = s.mul(len);  // the scaled length, a float as the spec's reference has it
  const std::string& t = m.transform;
  Tensor one = out.like(1.0);
  if (t == "align_corners") return out.eq(one).where(o.like(0.0), o.mul(len - 1).div(out.sub(one)));
  if (t == "asymmetric") return o.div(s);
  if (t == "tf_half_pixel_for_nn") return o.add(0.5).div(s);
  if (t == "pytorch_half_pixel") return out.gt(one).where(o.add(0.5).div(s).sub(0.5), o.like(-0.5));
  if (t == "tf_crop_and_resize") {
    Tensor span = r1.sub(r0).mul(len - 1);
    return r0.mul(len - 1).add(
        out.eq(one).where(span.div(2.0).expand(o.shape()), o.mul(span).div(out.sub(one))));
  }
  return o.add(0.5).div(s).sub(0.5);  // half_pixel
}

// Nearest source index of coordinate x, per nearest_mode ("simple": Resize-10 and Upsample).
Tensor nearest_index(const ResizeMode& m, const Tensor& x, const Tensor& s) {
  const std::string& r = m.nearest;
  if (r == "floor") return x.floor();
  if (r == "ceil") return x.ceil();
  if (r == "simple") return s.lt(1.0).where(x.ceil(), x.floor());
  if (r == "round_prefer_ceil") return x.add(0.5).floor();
  return x.sub(0.5).ceil();  // round_prefer_floor: halves go down
}

// The cubic convolution kernel at distance d (0 <= d): Keys' with parameter a, 0 from 2 on.
Tensor cubic_weight(const Tensor& d, double a) {
  Tensor near = d.mul(a + 2).sub(a + 3).mul(d).mul(d).add(1.0);
  Tensor far = d.mul(a).sub(5 * a).mul(d).add(8 * a).mul(d).sub(4 * a);
  return d.le(d.like(1.0)).where(near, d.lt(2.0).where(far, d.like(0.0)));
}

Tensor resize_axis(NodeContext& n, const Tensor& x, int64_t axis, const ResizeMode& m, int64_t out,
                   const Tensor& s, const Tensor& r0, const Tensor& r1) {
  int64_t in = x.dim(axis);
  double len = static_cast<double>(in);
  int64_t taps = m.mode == "nearest" ? 1 : m.mode == "linear" ? 2 : 4;
  Tensor o = iota(n, out, dtypes::float64).reshape({out, 1});
  Tensor c = source_coordinates(m, o, len, s, r0, r1);  // [out, 1]
  Tensor first;                                         // the first tap's index, [out, 1]
  if (taps == 1)
    first = nearest_index(m, c, s);
  else
    first = c.floor().sub(taps == 2 ? 0.0 : 1.0);
  Tensor k = iota(n, taps, dtypes::float64).reshape({1, taps});
  Tensor at = first.add(k);  // [out, taps]: each tap's index, before clamping
  Tensor w;
  if (taps == 2) w = at.sub(c).abs().neg().add(1.0).maximum(0.0);
  if (taps == 4) w = cubic_weight(at.sub(c).abs(), m.cubic_a);
  if (taps > 1 && m.exclude_outside) {  // as the compile-time tables: taps off the input weigh 0
    w = at.lt(0.0).logical_or(at.gt(len - 1)).where(w.like(0.0), w);
    w = w.div(w.sum({1}, true));
  }
  Tensor idx = at.maximum(0.0).minimum(len - 1).cast(dtypes::int64);
  bool crop = m.transform == "tf_crop_and_resize";
  if ((taps > 1 || crop) && !x.dtype().is_float())
    n.unsupported("a " + std::string(taps > 1 ? "linear or cubic" : "tf_crop_and_resize") +
                  " Resize of a non-float tensor");
  int64_t trailing = x.ndim() - 1 - axis;
  Shape wshape = {out, taps};
  for (int64_t d = 0; d < trailing; ++d) wshape.push_back(1);
  Tensor r = x.gather(idx, axis);  // (..., out, taps, ...)
  if (taps > 1) r = r.mul(w.cast(x.dtype()).reshape(wshape));
  r = r.sum({axis + 1});
  if (crop) {  // outside the input: the extrapolation value
    Shape mshape = {out};
    for (int64_t d = 0; d < trailing; ++d) mshape.push_back(1);
    Tensor outside = c.lt(0.0).logical_or(c.gt(len - 1)).reshape(mshape);
    r = outside.where(r.like(m.extrapolation), r);
  }
  return r;
}

}  // namespace

Tensor run_time_resize(NodeContext& n, const Tensor& x, const ResizeMode& m, const Shape& out,
                       const std::vector<Tensor>& scale, const std::vector<Tensor>& roi_start,
                       const std::vector<Tensor>& roi_end) {
  Tensor r = x;
  for (int64_t a = 0; a < x.ndim(); ++a) {
    size_t k = static_cast<size_t>(a);
    if (out[k] <= 0) n.invalid("output axis " + std::to_string(a) + " would be empty");
    Tensor r0 = roi_start.empty() ? scale[k].like(0.0) : roi_start[k];
    Tensor r1 = roi_end.empty() ? scale[k].like(1.0) : roi_end[k];
    r = resize_axis(n, r, a, m, out[k], scale[k], r0, r1);
  }
  return r;
}

std::pair<float, float> scales_giving(int64_t in, int64_t out) {
  // floor(in * s) grows with s, and positive floats order as their bit patterns: two searches.
  auto size = [in](int32_t bits) {  // in double: a huge scale's size stays comparable
    return std::floor(static_cast<double>(in) * static_cast<double>(std::bit_cast<float>(bits)));
  };
  const double want = static_cast<double>(out);
  auto first_bits = [&](auto pred) {  // the first positive finite bit pattern where pred holds
    int32_t lo = 1, hi = std::bit_cast<int32_t>(std::numeric_limits<float>::max());
    if (!pred(hi)) return hi + 1;
    while (lo < hi) {
      int32_t mid = lo + (hi - lo) / 2;
      if (pred(mid))
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  };
  int32_t lo = first_bits([&](int32_t b) { return size(b) >= want; });
  int32_t above = first_bits([&](int32_t b) { return size(b) > want; });
  return {std::bit_cast<float>(lo), std::bit_cast<float>(above - 1)};
}

}  // namespace kiln::onnxfe
