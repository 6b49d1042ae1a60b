// Compile-time weight layouts. A contraction kernel vectorizes along one output axis of its
// weight (a matmul's N, a convolution's output channels); storing that axis in panels of a
// vector's lanes, innermost, with the panel index outermost, makes each vector load one
// contiguous run and each panel one contiguous stream across the reduction (no page-sized strides
// between consecutive loads). Constant folding performs the copy at compile time.
#pragma once

#include "compiler/tensor/tensor.h"

namespace kiln {

// The narrowest panel: an axis that the target's panel width does not divide may still be
// stored in panels of 8 (24 channels on AVX-512: three).
inline constexpr int64_t kWeightPanel = 8;
// Panels whose stride is a multiple of kSetAliasBytes are stored kCacheLineBytes apart more
// (see packed_in_panels).
inline constexpr int64_t kSetAliasBytes = 4096;
inline constexpr int64_t kCacheLineBytes = 64;

// True if the tensor's value is known at compile time (only weights and constants below it).
bool is_constant(const Tensor& t);

// The panel width for a target with vector registers of `vector_bytes`: its float32 lanes, at
// least kWeightPanel (the panel width of a graph whose LoweringOptions::vector_bytes it is).
inline int64_t weight_panel_for(int vector_bytes) {
  return vector_bytes / 4 > kWeightPanel ? vector_bytes / 4 : kWeightPanel;
}

// The panel lanes for an axis of n elements in graph g: g's panel width
// (weight_panel_for its LoweringOptions::vector_bytes) when it divides n, else kWeightPanel when
// that does, else 0.
int64_t panel_lanes(const Graph& g, int64_t n);

// `w` stored as (dim(axis) / lanes, the other axes in order, lanes) and read back with w's
// shape, lanes = panel_lanes(dim(axis)). Requires dim(axis) to be a multiple of kWeightPanel. A
// panel stride that is a multiple of 4 KiB gets one cache line of padding per panel (not part
// of the view).
Tensor packed_in_panels(const Tensor& w, int64_t axis);

// A constant `w` packed in panels along `axis` (packed_in_panels) with zero elements appended
// to that axis up to a whole number of vector pairs, 2 x max(panel_lanes, the graph's panel
// width) (1000 classes: 1008 on an 8-lane target, 1024 on a 16-lane one), read back with w's
// shape: a tile two vectors wide then reads whole panels, its last lanes in bounds (they
// compute elements that are never stored). The padding is not part of the view.
Tensor packed_in_vector_pairs(const Tensor& w, int64_t axis);

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
