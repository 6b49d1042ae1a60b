// A small depthwise layer as the sum of its window's taps over its input stored channels-last.
//
// The padded-map lowering (conv's padded_for_window) has the producing layer store its map into
// the interior of a padded copy, two border kernels fill the rest, and the depthwise kernel
// reduces over the window. On a small map that padded interior is what costs: a 7-wide row is
// the producer's tile axis (as AVX2 code, 4 positions x 16 channels in groups of 8 positions, one
// masked), and each border is a launch of its own. Here the producer stores a dense
// channels-last map (its positions one GEMM axis: 49 positions as 10 groups of 5), the layer
// reads each tap as a shifted view of it (gated loads at the border: no reduction walks the pad,
// so rangeify fuses it) and stores its own result channels-last, which the 1x1 layer after it
// reads as it is (reads_channels_last_map).
#pragma once

#include <utility>
#include <vector>

#include "compiler/tensor/tensor.h"

namespace kiln {

// Whether a depthwise layer with weight w (C, 1, kh, kw) over x (N, C, H, W) is computed by
// depthwise_by_taps: float32, 2-D, unstrided and undilated, a window of at most 9 taps, channels
// in whole weight panels, and an output of at most 196 positions (14x14). The caller also
// checks that x is computed by a kernel of its own (its store is then channels-last for free).
// Off when the graph's lowering options say so (kilnc --no-depthwise-taps).
bool depthwise_taps_pay(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& dilation);

// conv(x, w) + bias for such a layer: x stored channels-last, read through its taps, and the
// result (N, C, oh, ow) stored channels-last (seen as NCHW).
Tensor depthwise_by_taps(const Tensor& x, const Tensor& w, const Tensor* bias,
                         const std::vector<std::pair<int64_t, int64_t>>& pads);

// Whether t is computed, through elementwise ops and views only, from a map stored
// channels-last (a depthwise_by_taps result and the activation after it): a 1x1 layer over t
// stores t channels-last too, so the kernel computing t writes whole channel vectors and the
// layer's loads along its channels are contiguous.
bool reads_channels_last_map(const Tensor& t);

}  // namespace kiln
