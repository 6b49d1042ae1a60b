// narrow_quantized_pads: a quantized map padded for a float layer (a QDQ model's expansion feeding
// a depthwise convolution) is stored in 8 bits when it is large, with the same values.
#include "compiler/schedule/narrow_quantized_pads.h"

#include <gtest/gtest.h>

#include "compiler/schedule/const_fold.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

NDArray filled(const Shape& s, double step) {
  NDArray a(dtypes::float32, s);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, ConstValue::of_float(step * static_cast<double>(i % 7 - 3)));
  return a;
}

NDArray one(double v) {
  NDArray a(dtypes::float32, {1, 1, 1, 1});
  a.set(0, ConstValue::of_float(v));
  return a;
}

// A 1x1 layer over x (1, 4, side, side) into 64 channels, quantized to uint8 and dequantized as
// the ONNX frontend folds the pair ((clamp(round(y / s) + zp) - zp) x s), then a 3x3 depthwise
// layer over it, padded by 1: the padded map is 64 x (side + 2)^2 floats.
void build(Graph& g, int64_t side, double zero_point) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, side, side});
  Tensor y = conv(x, Tensor::weight(g, "w", filled({64, 4, 1, 1}, 0.1)), nullptr,
                  {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1});
  Tensor s = Tensor::weight(g, "scale", one(0.05));
  Tensor zp = Tensor::weight(g, "zero_point", one(zero_point));
  Tensor v = y.div(s).round().add(zp).maximum(0).minimum(255);
  Tensor dq = v.sub(zp).mul(s);
  g.add_output("y", conv(dq, Tensor::weight(g, "dw", filled({64, 1, 3, 3}, 0.2)), nullptr,
                         {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 64})
                        .uop());
}

TEST(NarrowQuantizedPads, ALargePaddedMapIsStoredInEightBitsWithTheSameValues) {
  Graph g;
  build(g, 128, 7);  // 64 x 130 x 130 floats: 4.3 MB
  auto inputs = testing::random_inputs(g, 5);
  NDArray want = EagerEvaluator(g, inputs).eval(g.outputs()[0].node);
  Plan p = plan_graph(g, {});  // const_fold narrows
  // The padded map is one uint8 buffer; the depthwise layer dequantizes what it loads (the
  // fusion policy inlines the dequantize), so no float32 copy of the map is stored. (Channels
  // last: the graph's package is for one thread, nn.cc's padded_channels_last.)
  int narrow = 0, wide = 0;
  for (const PlanBuffer& b : p.buffers) {
    narrow += b.dtype == dtypes::uint8 && b.shape == Shape{1, 130, 130, 64};
    wide += b.dtype == dtypes::float32 && shape_numel(b.shape) >= 64 * 128 * 128;
  }
  EXPECT_EQ(narrow, 1);
  EXPECT_EQ(wide, 1);  // the output
  // Exact: the stored values are the clamped integers, a padded position dequantizes to 0.
  EXPECT_TRUE(testing::arrays_close(want, interpret(p, g, inputs).at("y"), 0.0));
}

TEST(NarrowQuantizedPads, SmallMapsAndZeroPointsOffTheIntegersStayFloat) {
  {
    Graph g;
    build(g, 32, 7);  // 64 x 34 x 34 floats: stays in cache
    fold_constants(g);
    EXPECT_EQ(narrow_quantized_pads(g), 0);
  }
  {
    Graph g;
    build(g, 128, 7.5);  // not a quantized value: the clamp's input is not an integer
    fold_constants(g);
    EXPECT_EQ(narrow_quantized_pads(g), 0);
  }
  for (int64_t threads : {1, 2}) {  // the map padded channels-last, and in NCHW
    Graph g;
    g.lowering().threads = threads;
    build(g, 128, 7);
    fold_constants(g);
    EXPECT_EQ(narrow_quantized_pads(g), 1) << threads;
  }
}

}  // namespace
}  // namespace kiln
