// Resize's attributes, shared by the compile-time tables (ops_resize.cc) and the coordinate math
// a kernel does when a scale or the roi is read at run time (run_time_resize.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_context.h"

namespace kiln::onnxfe {

struct ResizeMode {
  std::string mode = "nearest";                // nearest, linear, cubic
  std::string transform = "half_pixel";        // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";  // nearest_mode ("simple" below opset 11)
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

// One axis: for output position o, taps idx[o*n + k] of the input with weights w[o*n + k];
// outside[o] when tf_crop_and_resize maps o outside the input (the extrapolation value).
struct Taps {
  int64_t n = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<bool> outside;
};

// Linear or cubic taps along `axis` (no extrapolated positions) as sliding windows over x padded
// with zeros, a window per group of outputs (out / in = p / q: p outputs per q inputs;
// resize_windows.cc); nullopt when the taps spread too wide for a window.
std::optional<Tensor> resize_by_windows(NodeContext& n, const Tensor& x, int64_t axis,
                                        const Taps& t, int64_t out);

// Resize x to `out` when a scale or the roi is only known when the package runs: per axis,
// `scale[k]` and (tf_crop_and_resize) `roi_start[k]`, `roi_end[k]` are float64 scalars, each a
// constant or read from a model input, and the kernel computes the source coordinates, taps and
// weights from them. Every axis is resized (a scale read at run time may shift the coordinates
// of an axis whose size it keeps).
Tensor run_time_resize(NodeContext& n, const Tensor& x, const ResizeMode& m, const Shape& out,
                       const std::vector<Tensor>& scale, const std::vector<Tensor>& roi_start,
                       const std::vector<Tensor>& roi_end);

// The positive float32 scales s with floor(in * s) == out (as ONNX sizes the output from
// scales, in double): [lo, hi]; lo > hi when there are none.
std::pair<float, float> scales_giving(int64_t in, int64_t out);

}  // namespace kiln::onnxfe
