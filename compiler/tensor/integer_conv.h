// Integer convolutions on the dot-product kernels (vpdpbusd, sdot): uint8 activations, constant
// int8 weights, int32 accumulation, built so that after rangeify each 32-bit lane the kernel
// multiplies holds four consecutive input channels of both operands.
#pragma once

#include "compiler/tensor/nn.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

// Σ (x − zx) · w over each window, exactly, as int32 (N, Co, OH, OW): x uint8 (N, C, H, W),
// w a constant int8 (Co, C, KH, KW), groups 1, padding with the value zx (a zero of x − zx).
//
// The input is stored channel-blocked, (N, C/4, H', W', 4) — its padded copy, which a
// convolution makes anyway, is written in that layout — and the weight as (Co/16, C/4, KH, KW,
// 16, 4); the reduction runs over (C/4, KH, KW, 4), the four channels innermost. C is padded
// to a multiple of 4 (x with zx, w with zeros) and Co to a multiple of 16 (zero filters, not
// part of the result). The zero point is applied after the product: − zx · Σ w per filter,
// folded at compile time.
Tensor conv_u8s8(const Tensor& x, int64_t zx, const Tensor& w, const ConvParams& p);

}  // namespace kiln
