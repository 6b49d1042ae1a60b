// Neural-network composites built from Tensor primitives: convolution, pooling, normalization,
// softmax and the common activations.
#pragma once

#include <vector>

#include "compiler/tensor/tensor.h"

namespace kiln {

struct ConvParams {
  std::vector<int64_t> stride;                       // per spatial axis (default 1)
  std::vector<std::pair<int64_t, int64_t>> padding;  // per spatial axis (before, after)
  std::vector<int64_t> dilation;                     // per spatial axis (default 1)
  int64_t groups = 1;
};

// x: (N, C, *spatial), w: (Co, C/groups, *kernel), bias: (Co) or nullptr. 1-D, 2-D, 3-D.
Tensor conv(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvParams& p);

struct PoolParams {
  std::vector<int64_t> kernel;
  std::vector<int64_t> stride;                       // default: 1
  std::vector<std::pair<int64_t, int64_t>> padding;  // default: 0
  std::vector<int64_t> dilation;                     // default: 1
  bool ceil_mode = false;
  bool count_include_pad = false;  // average pooling only
};

// x: (N, C, *spatial); pooling over the spatial axes.
Tensor max_pool(const Tensor& x, const PoolParams& p);
Tensor avg_pool(const Tensor& x, const PoolParams& p);
// Max pooling and each maximum's flat index into x (N, C, spatial...: ONNX MaxPool's Indices),
// spatial axes row-major, or column-major (storage_order 1); ties pick the first in scan order.
std::pair<Tensor, Tensor> max_pool_with_indices(const Tensor& x, const PoolParams& p,
                                                bool column_major);

// Inference batch norm over axis 1: (x - mean) / sqrt(var + eps) * scale + bias, written as
// x * a + b with a, b computed from the parameters (so constant folding removes them).
Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                  const Tensor& var, double eps);
// Normalizes over the axes from `axis` to the end; scale/bias broadcast against those axes.
Tensor layer_norm(const Tensor& x, int64_t axis, const Tensor* scale, const Tensor* bias,
                  double eps);
// Normalizes over the spatial axes of (N, C, *spatial) per (n, c); scale/bias: (C).
Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double eps);

Tensor softmax(const Tensor& x, int64_t axis);
Tensor log_softmax(const Tensor& x, int64_t axis);

Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, bool tanh_approximation);
Tensor silu(const Tensor& x);
Tensor hard_sigmoid(const Tensor& x, double alpha = 0.2, double beta = 0.5);
Tensor hard_swish(const Tensor& x);
Tensor clip(const Tensor& x, const Tensor* lo, const Tensor* hi);
Tensor leaky_relu(const Tensor& x, double alpha = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x);

}  // namespace kiln
