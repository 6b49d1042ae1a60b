// Winograd F(4x4, 3x3) and F(2x2, 3x3) convolutions (compiler/tensor/winograd.h): taken only where
// the cost rule says, and equal to the direct convolution within float32 rounding, eagerly and as
// the planned kernels (interpreted).
#include <gtest/gtest.h>

#include <random>

#include "compiler/driver/compile.h"
#include "compiler/schedule/interpreter.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/nn.h"
#include "compiler/tensor/winograd.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

struct Case {
  Shape x;  // (N, C, H, W)
  int64_t k;
  std::vector<std::pair<int64_t, int64_t>> pads;
};

NDArray random_weight(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  NDArray a(dtypes::float32, s);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, ConstValue::of_float(u(rng)));
  return a;
}

// conv(x, w) + bias for the case, with Winograd allowed or not.
void build(Graph& g, const Case& c, bool winograd) {
  g.lowering().winograd = winograd;
  Tensor x = Tensor::input(g, "x", dtypes::float32, c.x);
  Tensor w = Tensor::weight(g, "w", random_weight({c.k, c.x[1], 3, 3}, 7));
  Tensor b = Tensor::weight(g, "b", random_weight({c.k}, 8));
  g.add_output("y", conv(x, w, &b, {{1, 1}, c.pads, {1, 1}, 1}).uop());
}

bool uses_winograd(const Graph& g) {
  for (const UOp* w : g.weight_nodes())
    if (w->buffer().name.rfind("winograd_u", 0) == 0) return true;
  return false;
}

// Odd map sizes (tiles cut off at the end), asymmetric padding, a batch of 2, few output
// channels: the transformed convolution equals the direct one within 1e-5 of the largest
// output, in the eager evaluator and in the planned kernels.
TEST(Winograd, MatchesTheDirectConvolution) {
  const Case cases[] = {
      {{1, 32, 14, 14}, 32, {{1, 1}, {1, 1}}},
      {{2, 24, 13, 17}, 40, {{1, 1}, {0, 2}}},
      {{1, 48, 28, 28}, 24, {}},
      {{1, 64, 7, 7}, 64, {{1, 1}, {1, 1}}},  // F(2x2, 3x3): 16 tiles of 2x2
      {{2, 96, 5, 6}, 64, {{1, 1}, {1, 1}}},  // F(2x2, 3x3), odd maps, a batch of 2
  };
  for (const Case& c : cases) {
    Graph direct, wino;
    build(direct, c, false);
    build(wino, c, true);
    ASSERT_FALSE(uses_winograd(direct));
    ASSERT_TRUE(uses_winograd(wino)) << shape_str(c.x);
    auto inputs = testing::random_inputs(direct, 3);
    NDArray want = EagerEvaluator(direct, inputs).eval(direct.outputs()[0].node);
    NDArray eager = EagerEvaluator(wino, inputs).eval(wino.outputs()[0].node);
    EXPECT_TRUE(testing::arrays_close(want, eager, 1e-5)) << shape_str(c.x);
    Plan p = plan_graph(wino, {});
    EXPECT_TRUE(testing::arrays_close(want, interpret(p, wino, inputs).at("y"), 1e-5))
        << shape_str(c.x);
  }
}

TEST(Winograd, IsTakenOnlyWhereItPays) {
  auto taken = [](const Shape& x, int64_t k, std::vector<int64_t> stride,
                  std::vector<int64_t> dilation, int64_t kernel, bool constant,
                  double balance = 6.4) {
    Graph g;
    g.lowering().machine_balance = balance;
    Tensor in = Tensor::input(g, "x", dtypes::float32, x);
    Shape ws = {k, x[1], kernel, kernel};
    Tensor w = constant ? Tensor::weight(g, "w", random_weight(ws, 1))
                        : Tensor::input(g, "w", dtypes::float32, ws);
    return winograd_pays(in, w, 1, stride, dilation, {{1, 1}, {1, 1}});
  };
  // (The graph's default machine balance, 6.4 flops per byte of memory: an AVX2 or Zen 4 core;
  // the line itself as drawn for a core of twice the flops, 12.8: Zen 5, a Xeon.)
  const double wide = 12.8;
  EXPECT_TRUE(taken({1, 64, 28, 28}, 64, {}, {}, 3, true, wide));
  EXPECT_TRUE(taken({1, 16, 56, 56}, 64, {1, 1}, {1, 1}, 3, true, wide));  // C K / (C + K) = 12.8
  // An input channel costs the transforms 3x an output channel: C K / (1.5 C + 0.5 K) = 9.8
  EXPECT_FALSE(taken({1, 64, 56, 56}, 16, {}, {}, 3, true, wide));
  EXPECT_FALSE(taken({1, 128, 28, 28}, 16, {}, {}, 3, true, wide));  // 10.2
  EXPECT_TRUE(taken({1, 64, 56, 56}, 32, {}, {}, 3, true, wide));    // 18.3
  EXPECT_FALSE(taken({1, 16, 48, 64}, 32, {}, {}, 3, true, wide));   // C < K: C K / (C + K) = 10.7
  EXPECT_TRUE(taken({1, 256, 14, 14}, 256, {}, {}, 3, true));        // 4x4 tiles
  EXPECT_TRUE(taken({1, 512, 7, 7}, 512, {}, {}, 3, true));          // F(2x2, 3x3)
  EXPECT_FALSE(taken({1, 32, 7, 7}, 32, {}, {}, 3, true, wide));     // F(2x2): C K / (C + K) < 30
  EXPECT_FALSE(taken({1, 512, 3, 3}, 512, {}, {}, 3, true));         // 2x2 tiles of 2x2
  EXPECT_FALSE(taken({1, 16, 56, 56}, 16, {}, {}, 3, true, wide));   // too few channels
  EXPECT_FALSE(taken({1, 48, 96, 128}, 16, {}, {}, 3, true, wide));  // C K / (C + K) = 12
  // At half the flops a cycle the line is half as high: those layers pay there.
  EXPECT_TRUE(taken({1, 64, 56, 56}, 16, {}, {}, 3, true));
  EXPECT_TRUE(taken({1, 16, 48, 64}, 32, {}, {}, 3, true));
  // ... where the GEMMs have at least 64 rows of tiles: a 7x7 map's 16 and a 16x16 map's 16 keep
  // the line.
  EXPECT_FALSE(taken({1, 32, 7, 7}, 32, {}, {}, 3, true));
  EXPECT_FALSE(taken({1, 16, 16, 16}, 32, {}, {}, 3, true));
  EXPECT_TRUE(taken({1, 16, 32, 32}, 32, {}, {}, 3, true));  // 64 tiles
  EXPECT_TRUE(taken({1, 16, 56, 56}, 16, {}, {}, 3, true));  // 8
  EXPECT_TRUE(taken({1, 48, 96, 128}, 16, {}, {}, 3, true));
  EXPECT_FALSE(taken({1, 8, 56, 56}, 8, {}, {}, 3, true));        // 4: too few channels
  EXPECT_FALSE(taken({1, 64, 56, 56}, 64, {2, 2}, {}, 3, true));  // stride 2
  EXPECT_FALSE(taken({1, 64, 56, 56}, 64, {}, {2, 2}, 3, true));  // dilated
  EXPECT_FALSE(taken({1, 64, 56, 56}, 64, {}, {}, 1, true));      // 1x1
  EXPECT_FALSE(taken({1, 64, 56, 56}, 64, {}, {}, 3, false));     // weight at run time
  EXPECT_FALSE(taken({1, 64, 56, 56}, 60, {}, {}, 3, true));      // K not in panels of 8
  EXPECT_TRUE(taken({1, 512, 14, 14}, 512, {}, {}, 3, true));     // U: 37.7 MB
  EXPECT_FALSE(taken({1, 1024, 14, 14}, 1024, {}, {}, 3, true));  // U: 151 MB
  Graph off;
  off.lowering().winograd = false;  // kilnc --no-winograd
  Tensor in = Tensor::input(off, "x", dtypes::float32, {1, 64, 28, 28});
  Tensor w = Tensor::weight(off, "w", random_weight({64, 64, 3, 3}, 1));
  EXPECT_FALSE(winograd_pays(in, w, 1, {}, {}, {{1, 1}, {1, 1}}));
}

// Whether a 3x3 layer (x's channels -> k, padded by 1) takes Winograd under these options.
bool padded_layer_takes_winograd(const Shape& x, int64_t k, const LoweringOptions& o) {
  Graph g;
  g.lowering() = o;
  Tensor in = Tensor::input(g, "x", dtypes::float32, x);
  Tensor w = Tensor::weight(g, "w", random_weight({k, x[1], 3, 3}, 1));
  return winograd_pays(in, w, 1, {}, {}, {{1, 1}, {1, 1}});
}

// kilnc --threads T: the GEMMs divide between the threads, the memory-bound transforms less, so
// a layer takes Winograd only where its saved flops pay for (T + 1) / 2 times the values moved
// (at 2 threads squeezenet1_1's 16 -> 64 layers at 55x55 go direct; its wider ones, ResNet's and
// densenet121's 128 -> 32 stay).
TEST(Winograd, ThreadsWeighTheTransformsAgainstTheGemms) {
  struct Layer {
    Shape x;
    int64_t k, threads;
    bool taken;
  };
  const Layer layers[] = {
      {{1, 16, 55, 55}, 64, 1, true},
      {{1, 16, 55, 55}, 64, 2, false},
      {{1, 32, 56, 56}, 96, 1, true},
      {{1, 32, 56, 56}, 96, 2, true},  // 1.9x the line
      {{1, 24, 56, 56}, 64, 1, true},
      {{1, 24, 56, 56}, 64, 2, false},  // 1.4x
      {{1, 128, 56, 56}, 32, 2, true},
      {{1, 128, 56, 56}, 32, 3, false},  // 1.6x
      {{1, 48, 13, 13}, 192, 2, true},
      {{1, 32, 27, 27}, 128, 2, true},
      {{1, 64, 13, 13}, 256, 2, true},
      {{1, 64, 56, 56}, 64, 2, true},
      {{1, 256, 14, 14}, 256, 2, true},
      {{1, 64, 56, 56}, 64, 8, false},  // 8 threads
      // Taken on one thread of a core with half the flops (the graph's default balance, 6.4),
      // direct at 2: there the line is not lowered for it.
      {{1, 48, 96, 128}, 16, 1, true},
      {{1, 48, 96, 128}, 16, 2, false},
      {{1, 16, 56, 56}, 32, 1, true},
      {{1, 16, 56, 56}, 32, 2, false},
  };
  for (const Layer& l : layers) {
    LoweringOptions o;
    o.threads = l.threads;
    EXPECT_EQ(padded_layer_takes_winograd(l.x, l.k, o), l.taken)
        << shape_str(l.x) << " -> " << l.k << " at " << l.threads << " threads";
  }
}

// Where a core computes twice as much per byte of memory (a Xeon's two 512-bit FMA units:
// balance 12.8), a 7x7 layer's F(2x2) weight, 1.8x the direct one, is what bounds it: direct.
// 4x4 tiles at 14x14 and larger maps still pay. The balance is the target's (kilnc sets it).
TEST(Winograd, AWeightBoundLayerStaysDirectOnACoreThatComputesMorePerByte) {
  auto taken = [](const Shape& x, int64_t k, double balance) {
    LoweringOptions o;
    o.machine_balance = balance;
    return padded_layer_takes_winograd(x, k, o);
  };
  EXPECT_TRUE(taken({1, 512, 7, 7}, 512, 6.4));
  EXPECT_FALSE(taken({1, 512, 7, 7}, 512, 12.8));
  EXPECT_TRUE(taken({1, 256, 14, 14}, 256, 12.8));
  EXPECT_TRUE(taken({1, 64, 56, 56}, 64, 12.8));
  EXPECT_TRUE(taken({4, 512, 7, 7}, 512, 12.8));  // a batch of 4: 64 tiles reuse each weight
  EXPECT_DOUBLE_EQ(TargetInfo::create({"x86_64-linux-gnu", "sapphirerapids"}).machine_balance(),
                   12.8);
  EXPECT_DOUBLE_EQ(TargetInfo::create({"x86_64-linux-gnu", "znver4"}).machine_balance(), 6.4);
  EXPECT_DOUBLE_EQ(TargetInfo::create({"x86_64-linux-gnu", "x86-64-v3"}).machine_balance(), 6.4);
  EXPECT_EQ(TargetInfo::create({"aarch64-linux-gnu", "neoverse-n1"}).fma_flops_per_cycle(), 16);
}

}  // namespace
}  // namespace kiln
