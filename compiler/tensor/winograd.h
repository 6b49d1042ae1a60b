// Winograd F(4x4, 3x3) convolutions (F(2x2, 3x3) on maps too small for 4x4 tiles): a stride-1
// 3x3 layer computed as 36 (16) GEMMs over 6x6 (4x4) input tiles transformed by Bᵀ d B, with the
// weights transformed at compile time (G g Gᵀ) and the products transformed back to output
// tiles (Aᵀ M A): 4x (2.25x) fewer multiplies than the direct convolution, at the price of
// memory-bound transform kernels and weights 4x (1.8x) larger.
// (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2015.)
#pragma once

#include "compiler/tensor/tensor.h"

namespace kiln {

// True when conv(x, w) with these parameters takes winograd_conv3x3: 2-D, float32, one group, a
// constant 3x3 weight, stride and dilation 1, and enough channels and tiles for the GEMMs to pay
// for the transforms (see docs/performance.md for the measured line).
// Off when the graph's lowering options say so (kilnc --no-winograd).
bool winograd_pays(const Tensor& x, const Tensor& w, int64_t groups,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation,
                   const std::vector<std::pair<int64_t, int64_t>>& pads);

// The convolution of x (N, C, H, W), already padded, with the constant w (K, C, 3, 3): (N, K,
// H - 2, W - 2). The largest error against the direct sum is a few float32 ulps of the largest
// input-weight product sum (the transforms' coefficients are at most 8 in magnitude: docs).
Tensor winograd_conv3x3(const Tensor& padded_x, const Tensor& w);

}  // namespace kiln
