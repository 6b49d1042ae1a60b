// Signal ops (opset 17): DFT, STFT, MelWeightMatrix and the Hann, Hamming and Blackman windows.
//
// A DFT over a static length is a matrix product: the signal's real and imaginary parts times
// cos/sin tables computed at compile time (double precision, stored as the signal's type), so it
// runs as GEMM kernels. STFT frames the signal with a sliding window (a movement op), multiplies
// by the window function and takes the DFT of every frame at once. Complex tensors are ONNX's
// trailing axis of 2 (real, imaginary).
#include <cmath>
#include <numbers>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/run_time_operands.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// The DFT of (re, im) over their last axis (length n; im may be invalid: a real signal), bins
// 0..k-1: (re, im) of the result.
std::pair<Tensor, Tensor> dft_last(NodeContext& n, const Tensor& re, const Tensor& im, int64_t len,
                                   int64_t bins, bool inverse) {
  std::vector<double> c, s;
  double sign = inverse ? 1.0 : -1.0, norm = inverse ? 1.0 / static_cast<double>(len) : 1.0;
  for (int64_t t = 0; t < len; ++t)
    for (int64_t k = 0; k < bins; ++k) {
      // Reduced modulo len first: exact angles for large t*k.
      double th =
          2 * std::numbers::pi * static_cast<double>((t * k) % len) / static_cast<double>(len);
      c.push_back(std::cos(th) * norm);
      s.push_back(sign * std::sin(th) * norm);
    }
  Tensor cm = n.constant(make_array(re.dtype(), {len, bins}, c));
  Tensor sm = n.constant(make_array(re.dtype(), {len, bins}, s));
  // (re + i im)(c + i s) = (re c - im s) + i (re s + im c)
  Tensor out_re = matmul(re, cm), out_im = matmul(re, sm);
  if (im.valid()) {
    out_re = out_re.sub(matmul(im, sm));
    out_im = out_im.add(matmul(im, cm));
  }
  return {out_re, out_im};
}

// The real and imaginary parts of a (..., 1 or 2) tensor, without that axis.
std::pair<Tensor, Tensor> parts(NodeContext& n, const Tensor& x, const char* what) {
  if (x.ndim() < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2))
    n.invalid(std::string(what) + " must end in an axis of 1 (real) or 2 (complex), got " +
              shape_str(x.shape()));
  auto part = [&](int64_t k) {
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t d = 0; d + 1 < x.ndim(); ++d) b.push_back({0, x.dim(d)});
    b.push_back({k, k + 1});
    return x.shrink(b).squeeze({-1});
  };
  return {part(0), x.dim(-1) == 2 ? part(1) : Tensor()};
}

Tensor complex_of(const Tensor& re, const Tensor& im) {
  return concat({re.unsqueeze(-1), im.unsqueeze(-1)}, -1);
}

V dft(NodeContext& n) {
  Tensor x = n.input(0);
  if (!x.dtype().is_float()) n.invalid("the signal must be floating point");
  int64_t rank = x.ndim();
  int64_t axis = norm_axis(n.attr_int("axis", 1), rank, n);
  if (axis == rank - 1) n.invalid("axis cannot be the last (complex) axis");
  bool inverse = n.attr_int("inverse", 0) != 0, onesided = n.attr_int("onesided", 0) != 0;
  auto [re, im] = parts(n, x, "the signal");
  if (onesided && im.valid()) n.invalid("onesided needs a real signal");
  if (onesided && inverse) n.invalid("onesided and inverse together are not defined");
  // The DFT axis last: (..., len).
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  re = re.permute(perm);
  if (im.valid()) im = im.permute(perm);
  int64_t len = re.dim(-1);
  if (n.has_input(1)) {
    std::vector<int64_t> l = n.const_ints(1);
    if (l.size() != 1 || l[0] < 1) n.invalid("dft_length must be one positive value");
    // Zero-padded or truncated to dft_length.
    auto fit = [&](const Tensor& t) {
      std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(t.ndim()), {0, 0});
      p.back() = {0, l[0] - len};
      return t.pad(p, 0.0);
    };
    re = fit(re);
    if (im.valid()) im = fit(im);
    len = l[0];
  }
  int64_t bins = onesided ? len / 2 + 1 : len;
  auto [yr, yi] = dft_last(n, re, im, len, bins, inverse);
  std::vector<int64_t> back(static_cast<size_t>(rank - 1));
  for (size_t i = 0; i < perm.size(); ++i)
    back[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return V{complex_of(yr.permute(back), yi.permute(back))};
}

V stft(NodeContext& n) {
  Tensor x = n.input(0);
  if (!x.dtype().is_float()) n.invalid("the signal must be floating point");
  if (x.ndim() != 3)
    n.invalid("the signal must be (batch, length, 1 or 2), got " + shape_str(x.shape()));
  bool onesided = n.attr_int("onesided", 1) != 0;
  Tensor window;
  int64_t frame = -1;
  if (n.has_input(2)) {
    window = n.input(2);
    if (window.ndim() != 1) n.invalid("window must be 1-D");
    frame = window.dim(0);
  }
  std::vector<const UOp*> step_v = n.run_time_ints(1), frame_v;
  if (n.has_input(3)) frame_v = n.run_time_ints(3);
  std::vector<int64_t> step;
  if (!step_v.empty() || !frame_v.empty()) {
    // Read at run time: the one (frame_length, frame_step) that gives the declared output
    // (batch, frames, bins, 2); the run fails unless the inputs hold it.
    Shape d = n.declared_shape(0, step_v.empty() ? 3 : 1);
    if (d.size() != 4) n.invalid("the declared output is not (batch, frames, bins, 2)");
    std::vector<int64_t> lens;
    if (frame >= 0 && frame_v.empty() && n.has_input(3)) frame = n.const_ints(3).at(0);
    if (frame >= 0)
      lens = {frame};
    else if (onesided)
      lens = {2 * (d[2] - 1), 2 * (d[2] - 1) + 1};
    else
      lens = {d[2]};
    std::vector<int64_t> steps = step_v.empty() ? n.const_ints(1) : std::vector<int64_t>{};
    std::vector<std::pair<int64_t, int64_t>> fits;
    for (int64_t l : lens)
      for (int64_t st = 1; l >= 1 && l <= x.dim(1) && st <= x.dim(1); ++st)
        if ((steps.empty() || steps.at(0) == st) && (x.dim(1) - l) / st + 1 == d[1] &&
            (onesided ? l / 2 + 1 : l) == d[2])
          fits.push_back({l, st});
    if (fits.size() != 1)
      n.needs_freeze(step_v.empty() ? 3 : 1,
                     std::to_string(fits.size()) +
                         " pairs of frame_length and frame_step give the declared output " +
                         shape_str(d));
    frame = fits[0].first;
    step = {fits[0].second};
    std::string what = "must give frame_length " + std::to_string(frame) + " and frame_step " +
                       std::to_string(step[0]) +
                       ", which the package was compiled for (the model's declared output " +
                       shape_str(d) + ")";
    if (!step_v.empty()) require_values(n, 1, step_v, {{step[0]}}, what);
    if (!frame_v.empty()) require_values(n, 3, frame_v, {{frame}}, what);
  } else {
    step = n.const_ints(1);
  }
  if (step.size() != 1 || step[0] < 1) n.invalid("frame_step must be one positive value");
  if (n.has_input(3) && frame_v.empty()) {
    std::vector<int64_t> f = n.const_ints(3);
    if (f.size() != 1 || f[0] < 1) n.invalid("frame_length must be one positive value");
    if (frame >= 0 && f[0] != frame)
      n.invalid("frame_length " + std::to_string(f[0]) + " differs from the window's length " +
                std::to_string(frame));
    frame = f[0];
  }
  if (frame < 0) n.invalid("STFT needs a window or a frame_length");
  if (frame > x.dim(1))
    n.invalid("frame_length " + std::to_string(frame) + " exceeds the signal's length " +
              std::to_string(x.dim(1)));
  auto [re, im] = parts(n, x, "the signal");
  if (onesided && im.valid()) n.invalid("onesided needs a real signal");
  // (batch, length) -> (batch, frames, frame)
  auto frames = [&](const Tensor& t) {
    Tensor f = t.window({frame}, {step[0]}, {1});
    return window.valid() ? f.mul(window.cast(t.dtype())) : f;
  };
  re = frames(re);
  if (im.valid()) im = frames(im);
  auto [yr, yi] = dft_last(n, re, im, frame, onesided ? frame / 2 + 1 : frame, false);
  return V{complex_of(yr, yi)};
}

// Hann, Hamming and Blackman windows of a compile-time size (or, read at run time, the
// declared output's).
V window_fn(NodeContext& n, const std::vector<double>& cosines) {
  std::vector<int64_t> size = ints_or_declared(
      n, 0, 0,
      [&](const Shape& d) {
        if (d.size() != 1) n.invalid("the declared output is not 1-D");
        return std::vector<int64_t>{d[0]};
      },
      "the size");
  if (size.size() != 1 || size[0] < 1) n.invalid("size must be one positive value");
  bool periodic = n.attr_int("periodic", 1) != 0;
  int64_t len = size[0];
  double denom = static_cast<double>(periodic ? len : len - 1);
  std::vector<double> w;
  for (int64_t i = 0; i < len; ++i) {
    double v = 0;
    for (size_t k = 0; k < cosines.size(); ++k)
      v += cosines[k] * (denom > 0 ? std::cos(2 * std::numbers::pi * static_cast<double>(k) *
                                              static_cast<double>(i) / denom)
                                   : 1.0);
    w.push_back(v);
  }
  DType d = dtype_of(static_cast<int>(n.attr_int("output_datatype", onnx::TensorProto::FLOAT)));
  return V{n.constant(make_array(d, {len}, w))};
}

// MelWeightMatrix (opset 17): num_mel_bins triangular filters over dft_length / 2 + 1 spectrogram
// bins, their edges num_mel_bins + 2 points evenly spaced on the mel scale (2595 log10(1 + f /
// 700)) between the edge frequencies, converted back to hertz and to integer bins as the
// specification's reference does: floor((dft_length + 1) * f / sample_rate), in float64. Filter
// i rises from 0 at edge i to 1 at edge i + 1 (1 there alone when the two coincide) and falls to 0
// at edge i + 2. num_mel_bins and dft_length give the output's shape: constants, or read at run
// time and checked against the declared output; the other three are read as values.
V mel_weight_matrix(NodeContext& n) {
  auto declared = [&](const Shape& d) {
    if (d.size() != 2) n.invalid("the declared output is not 2-D");
    return d;
  };
  int64_t mels = ints_or_declared(
                     n, 0, 0, [&](const Shape& d) { return std::vector<int64_t>{declared(d)[1]}; },
                     "the number of mel bins")
                     .at(0);
  // dft_length: two values give one number of spectrogram bins, and the value itself places the
  // bins' edges, so it is read as a value too.
  int64_t spectrum = 0;
  if (n.input_is_const(1)) {
    std::vector<int64_t> d = n.const_ints(1);
    if (d.size() != 1 || d[0] < 0) n.invalid("dft_length must be one non-negative value");
    spectrum = d[0] / 2 + 1;
  } else {
    spectrum = declared(n.declared_shape(0, 1))[0];
    std::vector<const UOp*> v = n.run_time_ints(1);
    if (v.size() != 1) n.invalid("dft_length must be a scalar");
    require_values(n, 1, v, {{2 * spectrum - 2, 2 * spectrum - 1}},
                   str_cat("must be ", 2 * spectrum - 2, " or ", 2 * spectrum - 1,
                           " (the package was compiled for ", spectrum,
                           " spectrogram bins, from the model's declared output shape)"));
  }
  if (mels < 1 || spectrum < 1) n.invalid("num_mel_bins and dft_length must be positive");
  auto scalar = [&](size_t i) {
    Tensor t = n.input(i);
    if (t.numel() != 1) n.invalid(str_cat("input ", i, " must be a scalar"));
    return t.reshape({}).cast(dtypes::float64);
  };
  Tensor dft = scalar(1), rate = scalar(2), low = scalar(3), high = scalar(4);
  auto to_mel = [](const Tensor& hz) {
    return hz.div(700.0).add(1.0).log().mul(2595.0 / std::log(10.0));
  };
  Tensor low_mel = to_mel(low);
  Tensor step = to_mel(high).sub(low_mel).div(static_cast<double>(mels + 2));
  Tensor edges_mel = iota(n, mels + 2, dtypes::float64).mul(step).add(low_mel);
  Tensor edges_hz = edges_mel.mul(std::log(10.0) / 2595.0).exp().sub(1.0).mul(700.0);
  Tensor edges = dft.add(1.0).mul(edges_hz).div(rate).floor();  // integers, in float64
  auto part = [&](int64_t from) { return edges.shrink({{from, from + mels}}).reshape({1, mels}); };
  Tensor l = part(0), c = part(1), h = part(2);
  Tensor j = iota(n, spectrum, dtypes::float64).reshape({spectrum, 1});
  Tensor zero = Tensor::full(n.graph(), {}, 0.0, dtypes::float64);
  Tensor one = Tensor::full(n.graph(), {}, 1.0, dtypes::float64);
  Tensor rising = l.lt(c).logical_and(l.le(j)).logical_and(j.le(c));
  Tensor v = rising.where(j.sub(l).div(c.sub(l)), zero);
  v = c.eq(l).logical_and(j.eq(c)).where(one, v);
  Tensor falling = c.lt(h).logical_and(c.le(j)).logical_and(j.lt(h));
  v = falling.where(h.sub(j).div(h.sub(c)), v);
  DType d = dtype_of(static_cast<int>(n.attr_int("output_datatype", onnx::TensorProto::FLOAT)));
  return V{v.cast(d)};
}

}  // namespace

void register_signal_ops(OpRegistry& r) {
  r["MelWeightMatrix"] = mel_weight_matrix;
  r["DFT"] = dft;
  r["STFT"] = stft;
  r["HannWindow"] = [](NodeContext& n) { return window_fn(n, {0.5, -0.5}); };
  r["HammingWindow"] = [](NodeContext& n) { return window_fn(n, {25.0 / 46.0, -21.0 / 46.0}); };
  r["BlackmanWindow"] = [](NodeContext& n) { return window_fn(n, {0.42, -0.5, 0.08}); };
}

}  // namespace kiln::onnxfe
