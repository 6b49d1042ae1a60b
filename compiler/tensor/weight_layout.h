// Compile-time weight layouts. A contraction kernel vectorizes along one output axis of its
// weight (a matmul's N, a convolution's output channels); storing that axis in panels of
// kWeightPanel lanes, innermost, with the panel index outermost, makes each vector load one
// contiguous run and each panel one contiguous stream across the reduction (no page-sized strides
// between consecutive loads). Constant folding performs the copy at compile time.
#pragma once

#include "compiler/tensor/tensor.h"

namespace kiln {

inline constexpr int64_t kWeightPanel = 8;
// Panels whose stride is a multiple of kSetAliasBytes are stored kCacheLineBytes apart more
// (see packed_in_panels).
inline constexpr int64_t kSetAliasBytes = 4096;
inline constexpr int64_t kCacheLineBytes = 64;

// True if the tensor's value is known at compile time (only weights and constants below it).
bool is_constant(const Tensor& t);

// `w` stored as (dim(axis) / kWeightPanel, the other axes in order, kWeightPanel) and read back
// with w's shape. Requires dim(axis) to be a multiple of kWeightPanel. A panel stride that is a
// multiple of 4 KiB gets one cache line of padding per panel (not part of the view).
Tensor packed_in_panels(const Tensor& w, int64_t axis);

// t itself if it is a buffer (a model input, a weight) or a reshape of one, else t materialized
// (CONTIGUOUS): an integer kernel's uint8 operand, read many times, must not be recomputed inline.
Tensor materialized(const Tensor& t);

// The layout of an int8 weight for the integer dot-product kernels (vpdpbusd, sdot): each
// 32-bit lane of a vector holds four consecutive elements of the reduction for one output
// column, so one 64-byte load feeds 16 columns x 4 products. w (K, N) is stored as
// (N/kDotPanel, K/4, kDotPanel, 4) and read back as (K, N); N is padded with zero columns to a
// multiple of kDotPanel (the padding is not part of the view). Requires K % 4 == 0.
inline constexpr int64_t kDotPanel = 16;
inline constexpr int64_t kDotGroup = 4;  // products per 32-bit lane
Tensor packed_for_dot(const Tensor& w);

}  // namespace kiln
