// Linear and cubic Resize by a rational factor as windows over the input (resize.h).
//
// With out / in = p / q in lowest terms, the outputs come in groups of p that read from groups
// of q inputs: output o's taps lie within a few inputs of q * (o / p), so o reads
// x[q * (o / p) + d] for d in [dmin, dmax] (the clamped taps at the borders too) with weight
// W[d][o], 0 where o has no tap there. As movement ops: x padded with zeros, sliding windows of
// m = dmax - dmin + 1 inputs at a stride of q, each window repeated p times, times W, summed
// over the window. A kernel then reads the input at q * (o / p) + d: lanes along o, in whole
// groups of p, are one contiguous load and a shuffle (the expander's span load where q > 1),
// where the gather of a tap table loaded an index per lane, checked it and assembled the lanes
// one by one (unet's 2x bilinear upsampling 48x64 -> 96x128 ran at 3.7 GFLOP/s, 0.64 of its
// 5.2 ms; its final 5 / 4 resize 0.18 -> 0.05 ms). The padded map is read in a reduction, so
// its producer stores straight into its interior (rangeify's realize_padding), as for a
// convolution.
#include <algorithm>
#include <climits>
#include <numeric>

#include "compiler/frontend/onnx/resize.h"

namespace kiln::onnxfe {

namespace {

// Wider windows are left to the gather. A group's window spans about q inputs plus the taps:
// by an integer factor up or down 2 to 5 inputs, by 5 / 4 6 (linear) or 8 (cubic); a group of
// p outputs from many inputs (37 / 23: 23) spans more.
constexpr int64_t kMaxWindow = 8;

}  // namespace

std::optional<Tensor> resize_by_windows(NodeContext& n, const Tensor& x, int64_t axis,
                                        const Taps& t, int64_t out) {
  int64_t in = x.dim(axis);
  if (t.n < 2 || in <= 0 || out <= 0 || !x.dtype().is_float()) return std::nullopt;
  int64_t groups = std::gcd(in, out), p = out / groups, q = in / groups;
  if (std::find(t.outside.begin(), t.outside.end(), true) != t.outside.end()) return std::nullopt;
  auto start = [&](int64_t o) { return q * (o / p); };  // o's group's first input
  auto tap = [&](int64_t o, int64_t k) { return static_cast<size_t>(o * t.n + k); };
  int64_t dmin = INT64_MAX, dmax = INT64_MIN;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < t.n; ++k) {
      if (t.w[tap(o, k)] == 0) continue;
      int64_t d = t.idx[tap(o, k)] - start(o);
      dmin = std::min(dmin, d);
      dmax = std::max(dmax, d);
    }
  if (dmin > dmax || dmax - dmin + 1 > kMaxWindow) return std::nullopt;
  int64_t m = dmax - dmin + 1;
  // W as (m, out): the weights of one window position are contiguous along o (the lanes).
  std::vector<double> w(static_cast<size_t>(m * out), 0.0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < t.n; ++k)
      if (double wk = t.w[tap(o, k)]; wk != 0)
        w[static_cast<size_t>((t.idx[tap(o, k)] - start(o) - dmin) * out + o)] += wk;

  // Position j of window g reads x[q * g + dmin + j]: x padded by -dmin before, and after to
  // q * (groups - 1) + m in all; padded in place (the padded map is stored, in x's layout), then
  // the axis moved last for the window.
  int64_t r = x.ndim();
  std::vector<std::pair<int64_t, int64_t>> pads(static_cast<size_t>(r), {0, 0});
  pads[static_cast<size_t>(axis)] = {-dmin, dmax + 1 - q};
  std::vector<int64_t> order;
  for (int64_t i = 0; i < r; ++i)
    if (i != axis) order.push_back(i);
  order.push_back(axis);
  Tensor windows = x.pad(pads).permute(order).window({m}, {q}, {1});  // (..., groups, m)
  Shape repeated = windows.shape();
  repeated.insert(repeated.end() - 1, p);  // (..., groups, p, m)
  Shape merged = windows.shape();
  merged[static_cast<size_t>(r - 1)] = out;  // (..., out, m)
  Tensor taps = windows.unsqueeze(r).expand(repeated).reshape(merged);
  // The window before the outputs, as W is stored (a permuted constant is folded into one of
  // that layout: its lanes would lie m apart).
  std::vector<int64_t> window_first;
  for (int64_t i = 0; i < r - 1; ++i) window_first.push_back(i);
  window_first.push_back(r);
  window_first.push_back(r - 1);
  Tensor weights = n.constant(make_array(x.dtype(), {m, out}, w));
  Tensor y = taps.permute(window_first).mul(weights).sum({r - 1});
  std::vector<int64_t> back(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) back[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
  return y.permute(back);
}

}  // namespace kiln::onnxfe
