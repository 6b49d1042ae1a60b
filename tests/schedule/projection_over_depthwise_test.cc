// A 1x1 layer over a depthwise layer that read its padded map channels-last reads the depthwise
// layer's output channels-last (compiler/tensor/nn.cc, conv): in a package for one thread, where
// the 1x1 layer's output channels are whole 16-lane tiles. The planned block computes what the
// eager graph does, and the depthwise layer's output is a dense channels-last buffer exactly
// where the rule says.
#include <gtest/gtest.h>

#include <random>

#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

struct Block {
  int64_t threads = 1;
  int64_t stride = 1;    // the depthwise layer's
  int64_t outputs = 16;  // the 1x1 projection's channels
};

NDArray random_weight(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return testing::random_array(dtypes::float32, s, rng);
}

ConvParams params(int64_t stride, std::vector<std::pair<int64_t, int64_t>> pads, int64_t groups) {
  return {{stride, stride}, std::move(pads), {1, 1}, groups};
}

constexpr int64_t kChannels = 32, kSide = 16;  // 256 positions: not summed as taps

// mobilenet_v2's inverted residual block at a small size: a 1x1 expansion, the 3x3 depthwise
// layer with its bias, ReLU6-like clamps between, and the 1x1 projection. Returns whether the
// plan has the depthwise layer's output as a dense channels-last buffer.
bool depthwise_output_channels_last(const Block& b) {
  Graph g;
  g.lowering().threads = b.threads;
  Tensor in = Tensor::input(g, "x", dtypes::float32, {1, 8, kSide, kSide});
  Tensor we = Tensor::weight(g, "we", random_weight({kChannels, 8, 1, 1}, 1));
  Tensor wd = Tensor::weight(g, "wd", random_weight({kChannels, 1, 3, 3}, 2));
  Tensor bd = Tensor::weight(g, "bd", random_weight({kChannels}, 3));
  Tensor wp = Tensor::weight(g, "wp", random_weight({b.outputs, kChannels, 1, 1}, 4));
  Tensor e = relu(conv(in, we, nullptr, params(1, {}, 1)));
  Tensor d = relu(conv(e, wd, &bd, params(b.stride, {{1, 1}, {1, 1}}, kChannels)));
  g.add_output("y", conv(d, wp, nullptr, params(1, {}, 1)).uop());
  Plan p = testing::plan_and_check(g);  // values against the eager graph
  int64_t side = kSide / b.stride;
  return testing::buffer_shaped(p, {1, side, side, kChannels}) >= 0;
}

TEST(ProjectionOverDepthwise, ReadsTheDepthwiseOutputChannelsLastAtOneThread) {
  EXPECT_TRUE(depthwise_output_channels_last({1, 1, 16}));
  EXPECT_TRUE(depthwise_output_channels_last({1, 1, 32}));
  EXPECT_TRUE(depthwise_output_channels_last({1, 2, 16}));  // a strided depthwise layer
}

// 24 output channels are not whole 16-lane tiles; at 2 threads the depthwise layer's output
// stays NCHW (an unstrided one reads NCHW there, a strided one reads its map channels-last).
TEST(ProjectionOverDepthwise, KeepsNchwForPartialTilesAndTwoThreads) {
  EXPECT_FALSE(depthwise_output_channels_last({1, 1, 24}));
  EXPECT_FALSE(depthwise_output_channels_last({2, 1, 16}));
  EXPECT_FALSE(depthwise_output_channels_last({2, 2, 16}));
}

}  // namespace
}  // namespace kiln
