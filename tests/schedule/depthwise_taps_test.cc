// Small depthwise layers as the sum of their taps over a dense channels-last map
// (compiler/tensor/depthwise_taps.h): taken only where the rule says, equal to the padded-map
// lowering within float32 rounding (eagerly and as the planned kernels, interpreted), with no
// padded copy, and summed once where several kernels read the layer (a squeeze-excitation
// block).
#include <gtest/gtest.h>

#include <random>

#include "compiler/driver/compile.h"
#include "compiler/schedule/interpreter.h"
#include "compiler/tensor/depthwise_taps.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

struct Case {
  Shape x;  // (N, C, H, W) of the depthwise layer's input
  std::vector<std::pair<int64_t, int64_t>> pads;
};

NDArray random_weight(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return testing::random_array(dtypes::float32, s, rng);
}

ConvParams params(std::vector<std::pair<int64_t, int64_t>> pads, int64_t groups) {
  return {{1, 1}, std::move(pads), {1, 1}, groups};
}

// A 1x1 expansion, the depthwise 3x3 layer with its bias, and a 1x1 projection, ReLUs between
// (mobilenet_v2's inverted residual block); the lowering's choice as `taps` says.
void build_block(Graph& g, const Case& c, bool taps) {
  g.lowering().depthwise_taps = taps;
  int64_t ch = c.x[1];
  Tensor in = Tensor::input(g, "x", dtypes::float32, {c.x[0], 4, c.x[2], c.x[3]});
  Tensor we = Tensor::weight(g, "we", random_weight({ch, 4, 1, 1}, 1));
  Tensor wd = Tensor::weight(g, "wd", random_weight({ch, 1, 3, 3}, 2));
  Tensor bd = Tensor::weight(g, "bd", random_weight({ch}, 3));
  Tensor wp = Tensor::weight(g, "wp", random_weight({8, ch, 1, 1}, 4));
  Tensor e = relu(conv(in, we, nullptr, params({}, 1)));
  Tensor d = relu(conv(e, wd, &bd, params(c.pads, ch)));
  g.add_output("y", conv(d, wp, nullptr, params({}, 1)).uop());
}

using testing::buffer_shaped;

// Maps of 14x14 and 7x7, odd and asymmetric padding, no padding, a batch of 2: the taps equal
// the padded map's reduction within 1e-5 of the largest output, eagerly and in the planned
// kernels. The planned taps store the expansion's map dense and channels-last, where the
// padded-map lowering of a padded layer stores it with its border, and have no padded copy.
TEST(DepthwiseTaps, MatchesThePaddedMapLowering) {
  const Case cases[] = {
      {{1, 16, 14, 14}, {{1, 1}, {1, 1}}},
      {{1, 24, 7, 7}, {{1, 1}, {1, 1}}},
      {{2, 8, 5, 6}, {{1, 1}, {0, 2}}},
      {{1, 16, 10, 10}, {}},
  };
  for (const Case& c : cases) {
    Graph padded, taps;
    build_block(padded, c, false);
    build_block(taps, c, true);
    auto inputs = testing::random_inputs(padded, 3);
    NDArray want = EagerEvaluator(padded, inputs).eval(padded.outputs()[0].node);
    NDArray eager = EagerEvaluator(taps, inputs).eval(taps.outputs()[0].node);
    EXPECT_TRUE(testing::arrays_close(want, eager, 1e-5)) << shape_str(c.x);
    Plan p = plan_graph(taps, {});
    EXPECT_EQ(check_memory_plan(p), "");
    EXPECT_TRUE(testing::arrays_close(want, interpret(p, taps, inputs).at("y"), 1e-5))
        << shape_str(c.x);
    Shape dense_cl = {c.x[0], c.x[2], c.x[3], c.x[1]};
    EXPECT_GE(buffer_shaped(p, dense_cl), 0) << shape_str(c.x) << ": no channels-last map";
    if (!c.pads.empty()) {
      EXPECT_LT(buffer_shaped(plan_graph(padded, {}), dense_cl), 0) << shape_str(c.x);
      Shape padded_cl = {c.x[0], c.x[2] + c.pads[0].first + c.pads[0].second,
                         c.x[3] + c.pads[1].first + c.pads[1].second, c.x[1]};
      Shape padded_nchw = {c.x[0], c.x[1], padded_cl[1], padded_cl[2]};
      EXPECT_LT(buffer_shaped(p, padded_cl), 0) << shape_str(c.x);
      EXPECT_LT(buffer_shaped(p, padded_nchw), 0) << shape_str(c.x);
    }
  }
}

// 3x3 windows, unstrided and undilated, on maps of at most 196 positions, channels in whole
// 8-lane panels, float32, and the lowering option on.
TEST(DepthwiseTaps, IsTakenOnlyForSmallUnstridedThreeByThreeLayers) {
  auto taken = [](const Shape& x, int64_t kernel, std::vector<int64_t> stride,
                  std::vector<int64_t> dilation, DType d, bool on) {
    Graph g;
    g.lowering().depthwise_taps = on;
    Tensor in = Tensor::input(g, "x", d, x);
    Tensor w = Tensor::input(g, "w", d, {x[1], 1, kernel, kernel});
    return depthwise_taps_pay(in, w, stride, dilation);
  };
  EXPECT_TRUE(taken({1, 96, 14, 14}, 3, {1, 1}, {1, 1}, dtypes::float32, true));
  EXPECT_TRUE(taken({1, 960, 7, 7}, 3, {1, 1}, {1, 1}, dtypes::float32, true));
  EXPECT_FALSE(taken({1, 96, 14, 15}, 3, {1, 1}, {1, 1}, dtypes::float32, true));  // 210
  EXPECT_FALSE(taken({1, 144, 28, 28}, 3, {1, 1}, {1, 1}, dtypes::float32, true));
  EXPECT_FALSE(taken({1, 672, 14, 14}, 5, {1, 1}, {1, 1}, dtypes::float32, true));
  EXPECT_FALSE(taken({1, 96, 14, 14}, 3, {2, 2}, {1, 1}, dtypes::float32, true));
  EXPECT_FALSE(taken({1, 96, 14, 14}, 3, {1, 1}, {2, 2}, dtypes::float32, true));
  EXPECT_FALSE(taken({1, 12, 14, 14}, 3, {1, 1}, {1, 1}, dtypes::float32, true));
  EXPECT_FALSE(taken({1, 96, 14, 14}, 3, {1, 1}, {1, 1}, dtypes::float16, true));
  EXPECT_FALSE(taken({1, 96, 14, 14}, 3, {1, 1}, {1, 1}, dtypes::float32, false));
}

// A squeeze-excitation block reads the depthwise layer's activation twice (its pool, and the
// scale that multiplies it before the projection): the taps are summed in one kernel, the only
// one that reads the expansion's map (1, 7, 7, 16), and both readers load the stored sum.
TEST(DepthwiseTaps, ASqueezeExcitationBlockSumsTheTapsOnce) {
  Graph g;
  Tensor in = Tensor::input(g, "x", dtypes::float32, {1, 4, 7, 7});
  Tensor we = Tensor::weight(g, "we", random_weight({16, 4, 1, 1}, 1));
  Tensor wd = Tensor::weight(g, "wd", random_weight({16, 1, 3, 3}, 2));
  Tensor w1 = Tensor::weight(g, "w1", random_weight({8, 16, 1, 1}, 3));
  Tensor w2 = Tensor::weight(g, "w2", random_weight({16, 8, 1, 1}, 4));
  Tensor wp = Tensor::weight(g, "wp", random_weight({8, 16, 1, 1}, 5));
  Tensor e = silu(conv(in, we, nullptr, params({}, 1)));
  Tensor d = silu(conv(e, wd, nullptr, params({}, 16)));  // (1, 16, 5, 5)
  Tensor pooled = d.mean({2, 3}, true);
  Tensor scale =
      relu(conv(relu(conv(pooled, w1, nullptr, params({}, 1))), w2, nullptr, params({}, 1)))
          .sigmoid();
  g.add_output("y", conv(d.mul(scale), wp, nullptr, params({}, 1)).uop());
  Plan p = testing::plan_and_check(g);
  int expanded = buffer_shaped(p, {1, 7, 7, 16});
  ASSERT_GE(expanded, 0);
  int readers = 0;
  for (const Launch& l : p.launches)
    for (size_t i = 1; i < l.args.size(); ++i) readers += l.args[i] == expanded;
  EXPECT_EQ(readers, 1);
}

}  // namespace
}  // namespace kiln
