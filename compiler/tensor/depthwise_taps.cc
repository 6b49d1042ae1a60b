#include "compiler/tensor/depthwise_taps.h"

#include <algorithm>
#include <unordered_set>

#include "compiler/tensor/channels_last.h"
#include "compiler/tensor/weight_layout.h"

namespace kiln {

namespace {

bool all_ones(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t e) { return e == 1; });
}

}  // namespace

// Measured as whole models against the padded-map lowering (tools/bench/ab_bench,
// docs/performance.md): mobilenet_v2, whose 14x14 and 7x7 layers this takes, 0.96 (AVX2 code)
// and 0.99 (AVX-512) at 1 thread, 0.94 and 0.96 at 2. Not larger maps: with its 28x28 and
// 56x56 layers too mobilenet_v2 ran 1.02-1.05x at 1 thread, where the padded rows are long
// enough for the producer's tiles and the window's loads shared between neighbouring positions
// matter more. Not 5x5 windows: efficientnet_b0's 25 gated taps per output ran its 14x14 and
// 7x7 layers at a quarter of the reduction's speed (the model 1.05-1.09x); with its 3x3 ones
// only it is unchanged (1.005 / 1.009, copies 1.007 / 1.011).
bool depthwise_taps_pay(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& dilation) {
  if (!x.graph()->lowering().depthwise_taps) return false;
  if (x.ndim() != 4 || w.ndim() != 4 || x.dtype() != dtypes::float32) return false;
  if (w.dim(0) != x.dim(1) || w.dim(1) != 1 || x.dim(1) % kWeightPanel != 0) return false;
  if (!all_ones(stride) || !all_ones(dilation) || w.dim(2) * w.dim(3) > 9) return false;
  if (x.graph()->has_symbolic_axis_from(2)) return false;
  return x.dim(2) * x.dim(3) <= 196;
}

Tensor depthwise_by_taps(const Tensor& x, const Tensor& w, const Tensor* bias,
                         const std::vector<std::pair<int64_t, int64_t>>& pads) {
  int64_t n = x.dim(0), c = x.dim(1), kh = w.dim(2), kw = w.dim(3);
  // The map stored channels-last, then padded: the pad is a view, its border read through
  // gated loads.
  Tensor padded = stored_channels_last(x).pad({{0, 0}, {0, 0}, pads[0], pads[1]});
  Tensor windows = padded.window({kh, kw}, {1, 1}, {1, 1});  // (N, C, oh, ow, kh, kw)
  int64_t oh = windows.dim(2), ow = windows.dim(3);
  // Each tap's weights as one contiguous channel vector: (kh * kw, C).
  Tensor tap_weights = w.reshape({c, kh * kw}).permute({1, 0}).contiguous();
  Tensor sum;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      Tensor tap = windows.shrink({{0, n}, {0, c}, {0, oh}, {0, ow}, {i, i + 1}, {j, j + 1}})
                       .reshape({n, c, oh, ow});
      int64_t t = i * kw + j;
      Tensor term = tap.mul(tap_weights.shrink({{t, t + 1}, {0, c}}).reshape({1, c, 1, 1}));
      sum = t == 0 ? term : sum.add(term);
    }
  if (bias) sum = sum.add(bias->reshape({1, c, 1, 1}));
  // Stored here, channels-last: a map that several kernels read (a squeeze-excitation block's
  // pool and scale) is summed once, and its activation is recomputed where it is read.
  return stored_channels_last(sum);
}

bool reads_channels_last_map(const Tensor& t) {
  std::vector<const UOp*> stack{t.uop()};
  std::unordered_set<const UOp*> seen;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    if (is_stored_channels_last(u)) return true;
    if (u->op == Op::CONTIGUOUS) continue;
    if (u->op == Op::REDUCE_AXIS || u->op == Op::GATHER) continue;
    stack.insert(stack.end(), u->src.begin(), u->src.end());
  }
  return false;
}

}  // namespace kiln
