// Code generation against the reference interpreter: the middle end's random graphs and
// matmuls of odd sizes, compiled with LLVM and run in process (JIT + libffi), at --opt-level 0
// and at the default level. Integers must match exactly; floats within 1e-5 of the largest
// reference magnitude (reductions may be reassociated).
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/jit/jit.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/random_graph.h"

namespace kiln {
namespace {

const TargetInfo& host() {
  return TargetInfo::host();
}

void check_graph(Graph& g, uint64_t seed, const std::string& what) {
  auto inputs = testing::random_inputs(g, seed);
  Plan p = plan_graph(g, {});
  auto ref = interpret(p, g, inputs);
  for (int level : {0, 2}) {
    JitProgram jit(p, host(), {static_cast<OptLevel>(level)});
    auto got = jit.run(g, inputs);
    for (const auto& [name, arr] : ref)
      ASSERT_TRUE(testing::arrays_close(arr, got.at(name)))
          << what << " output " << name << " at --opt-level " << level;
  }
}

TEST(JitDifferential, SiluAndMul) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 4096});
  auto h = split(x, -1, {2048, 2048});
  g.add_output("y", silu(h[0]).mul(h[1]).uop());
  check_graph(g, 1, "silu_and_mul");
}

TEST(JitDifferential, MatmulsOfOddSizes) {
  std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1},      {1, 7, 3},   {3, 5, 2},
                                               {8, 8, 8},      {17, 33, 9}, {64, 48, 80},
                                               {129, 257, 67}, {2, 1, 300}, {31, 64, 1}};
  for (auto [m, k, n] : sizes) {
    Graph g;
    Tensor a = Tensor::input(g, "a", dtypes::float32, {m, k});
    Tensor b = Tensor::input(g, "b", dtypes::float32, {k, n});
    g.add_output("c", matmul(a, b).uop());
    check_graph(g, static_cast<uint64_t>(m * 1000 + k * 10 + n),
                str_cat("matmul ", m, "x", k, "x", n));
  }
}

// Upcasts that pad their range (a 7-wide map in 8 lanes): the extra lanes must neither read
// past the buffers nor store. Forced through TuningOptions::forced, on the lane axis, on the
// The prefetches of the next task's weight panel (weight_prefetch.h) are hints: a 1x1 layer of
// 49 rows that takes them computes what the interpreter does, its last task's run past the
// weight's end included.
TEST(JitDifferential, WeightPrefetchesLeaveTheValues) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {49, 320});
  NDArray w(dtypes::float32, {320, 1280});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.set(i, ConstValue::of_float(0.01 * static_cast<double>(i % 13) - 0.06));
  g.add_output("y", matmul(a, Tensor::weight(g, "w", std::move(w))).uop());
  check_graph(g, 7, "prefetched 49x320x1280 matmul");
}

// broadcast axis and on both, next to the heuristic's choice.
TEST(JitDifferential, PaddedUpcastsMaskTheirExtraLanes) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {13, 10});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {10, 7});
  g.add_output("c", matmul(a, b).uop());  // loops r0[13] r1[7], reduce r2[10]
  auto inputs = testing::random_inputs(g, 11);
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  auto ref = interpret(p, g, inputs);
  std::vector<std::vector<Opt>> cases = {
      {{OptKind::Upcast, 1, 8}},
      {{OptKind::Upcast, 0, 16}, {OptKind::Unroll, 2, 2}},
      {{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 1, 8}, {OptKind::Parallel, 0, 2}},
      {{OptKind::Upcast, 0, 4}, {OptKind::Unroll, 2, 5}},
  };
  for (const auto& opts : cases) {
    std::string what;
    for (const Opt& o : opts) what += o.str() + " ";
    std::map<std::string, std::vector<Opt>> tuned = {{p.programs[0].name, opts}};
    JitProgram jit(p, host(), {.forced = &tuned});
    auto got = jit.run(g, inputs);
    EXPECT_TRUE(testing::arrays_close(ref.at("c"), got.at("c"))) << what;
  }
}

// Register tiles of an odd number of positions (7 of a 7x7 map's 49, beside 1, 2 or 4 lane
// vectors; 3 beside a padded lane axis; 9 of 27 beside 2 vectors, the most lanes a kernel may
// have) are wider than a register and not a power of two: the emitter splits them into native
// vectors (native_pieces.h), loads, stores and masked lanes included, and they compute what the
// interpreter does.
TEST(JitDifferential, OddTilesSplitIntoNativeVectorsKeepTheValues) {
  struct Case {
    int64_t rows;
    std::vector<Opt> opts;
  };
  std::vector<Case> cases = {
      {49, {{OptKind::Upcast, 0, 7}, {OptKind::Upcast, 1, 8}}},
      {49, {{OptKind::Upcast, 0, 7}, {OptKind::Upcast, 1, 24}, {OptKind::Unroll, 2, 4}}},
      {49, {{OptKind::Upcast, 0, 7}, {OptKind::Upcast, 1, 36}, {OptKind::Parallel, 0, 7}}},
      {49, {{OptKind::Upcast, 0, 3}, {OptKind::Upcast, 1, 32}, {OptKind::Unroll, 2, 2}}},
      {27, {{OptKind::Upcast, 0, 9}, {OptKind::Upcast, 1, 32}, {OptKind::Unroll, 2, 4}}},
  };
  for (const Case& c : cases) {
    Graph g;
    Tensor a = Tensor::input(g, "a", dtypes::float32, {c.rows, 96});
    Tensor b = Tensor::input(g, "b", dtypes::float32, {96, 72});
    g.add_output("c", relu(matmul(a, b)).uop());  // loops r0[rows] r1[72], reduce r2[96]
    auto inputs = testing::random_inputs(g, 23);
    Plan p = plan_graph(g, {});
    ASSERT_EQ(p.programs.size(), 1u);
    auto ref = interpret(p, g, inputs);
    std::string what;
    for (const Opt& o : c.opts) what += o.str() + " ";
    std::map<std::string, std::vector<Opt>> tuned = {{p.programs[0].name, c.opts}};
    JitProgram jit(p, host(), {.forced = &tuned});
    auto got = jit.run(g, inputs);
    EXPECT_TRUE(testing::arrays_close(ref.at("c"), got.at("c"))) << what;
  }
}

// Stride-2 convolutions read their input at stride 2 along W: the expander loads each row of
// lanes as one wide vector and picks every other element, unless the row would read past the
// buffer (the last rows of an unpadded odd-width input), where it keeps scalar loads.
TEST(JitDifferential, StridedLoadsPickEveryOtherElement) {
  for (int64_t width : {32, 33, 19}) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 9, width});
    Tensor dw = Tensor::input(g, "dw", dtypes::float32, {8, 1, 3, 3});
    Tensor w = Tensor::input(g, "w", dtypes::float32, {16, 8, 1, 1});
    g.add_output("depthwise", conv(x, dw, nullptr, {{2, 2}, {{1, 1}, {1, 1}}, {1, 1}, 8}).uop());
    g.add_output("unpadded", conv(x, w, nullptr, {{2, 2}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
    check_graph(g, static_cast<uint64_t>(width), str_cat("stride-2 convolutions, width ", width));
  }
}

// Lanes that share a few elements scattered over a short span (a resize by 5 / 4 as windows:
// each output group of 5 reads one input of a group of 4) are one vector load of the span and a
// shuffle; the span stays inside the buffer at the row's end (the last group's element is 3 from
// the end, the even-rounded span reaches no further). 32 groups (160 outputs, 80 lanes: the span
// load) and 34 (170: lanes that are no whole groups of 5 keep their per-lane loads).
TEST(JitDifferential, LanesSharingAShortSpanLoadItOnce) {
  for (int64_t groups : {32, 34}) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {2, 8, 4 * groups});
    Tensor windows = x.window({2}, {4}, {1});  // (2, 8, groups, 2)
    Tensor taps = windows.unsqueeze(3).expand({2, 8, groups, 5, 2}).reshape({2, 8, 5 * groups, 2});
    g.add_output("y", taps.mul(taps).sum({3}).uop());
    check_graph(g, static_cast<uint64_t>(groups), str_cat("5 / 4 lanes, ", groups, " groups"));
  }
}

// Lane axes that take no good divisor (a 114-wide padded row, a depthwise convolution's 14-wide
// map) are padded to a whole vector on AVX hosts; the last group's extra lanes are masked
// (masked vector loads and stores, taken only when a lane is off). Values here, on the host;
// the shape of the code for an AVX2 and an AVX-512 CPU: codegen_shape_test.cc.
TEST(JitDifferential, PaddedLaneAxesMaskTheirLastGroup) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 14, 14});
  Tensor dw = Tensor::input(g, "dw", dtypes::float32, {8, 1, 3, 3});
  g.add_output("depthwise", conv(x, dw, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 8}).uop());
  Tensor big = Tensor::input(g, "big", dtypes::float32, {3, 112, 112});
  g.add_output("padded", big.pad({{0, 0}, {1, 1}, {1, 1}}, 0.0).exp().uop());
  check_graph(g, 7, "padded lane axes");
}

// A constant convolution weight with an odd number of 8-channel panels (24 channels) is packed
// with a zero panel; on AVX the tile takes 16 channel lanes, the last group half masked.
TEST(JitDifferential, OddPanelCountsTakeTwoVectorsWithTheLastGroupMasked) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 13, 13});
  NDArray w(dtypes::float32, {24, 32, 1, 1});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.set(i, ConstValue::of_float(std::sin(0.37 * static_cast<double>(i))));
  g.add_output(
      "y", relu(conv(x, Tensor::weight(g, "w", w), nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}))
               .uop());
  check_graph(g, 5, "24-channel 1x1 convolution");
}

TEST(JitDifferential, BatchedAndBroadcastMatmuls) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {3, 1, 5, 7});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {4, 7, 6});
  g.add_output("c", matmul(a, b).uop());
  Tensor v = Tensor::input(g, "v", dtypes::float32, {7});
  g.add_output("d", matmul(a, v).uop());
  Tensor ib = Tensor::input(g, "ia", dtypes::int32, {4, 5});
  Tensor ic = Tensor::input(g, "ib", dtypes::int32, {5, 3});
  g.add_output("e", matmul(ib, ic).uop());
  check_graph(g, 3, "batched matmul");
}

// x86-64 without SSE4.1, FMA or F16C: rounding, fused multiply-adds and float16 conversions
// take kiln's integer/fallback code paths; run them (the host executes baseline x86-64).
TEST(JitDifferential, BaselineX86_64FallbacksComputeTheSameValues) {
  if (!host().is_x86()) GTEST_SKIP() << "needs an x86-64 host";
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 64});
  Tensor y = x.mul(3.7);
  g.add_output("floor", y.floor().uop());
  g.add_output("ceil", y.ceil().uop());
  g.add_output("trunc", y.trunc().uop());
  g.add_output("round", y.round().uop());
  g.add_output("fmod", y.mod(x.abs().add(0.3)).uop());
  g.add_output("exp", y.exp().add(x.pow(x.like(3.0))).uop());
  Tensor h = Tensor::input(g, "h", dtypes::float16, {4, 64});
  g.add_output("half", h.cast(dtypes::float32).mul(1000.0).cast(dtypes::float16).uop());
  g.add_output("half_small", h.cast(dtypes::float32).mul(1e-6).cast(dtypes::float16).uop());
  auto inputs = testing::random_inputs(g, 5);
  Plan p = plan_graph(g, {});
  auto ref = interpret(p, g, inputs);
  TargetInfo baseline = TargetInfo::create({host().triple(), "x86-64"});
  ASSERT_FALSE(baseline.rounding_instructions());
  ASSERT_FALSE(baseline.native_f16());
  JitProgram jit(p, baseline);
  auto got = jit.run(g, inputs);
  for (const auto& [name, arr] : ref) EXPECT_TRUE(testing::arrays_close(arr, got.at(name))) << name;
}

TEST(JitDifferential, FiveHundredRandomGraphs) {
  int first =
      std::getenv("KILN_TEST_FIRST_SEED") ? std::atoi(std::getenv("KILN_TEST_FIRST_SEED")) : 0;
  for (int seed = first; seed < 500; ++seed) {
    Graph g;
    testing::RandomGraph rg(g, 1000 + static_cast<uint64_t>(seed));
    rg.build();
    try {
      check_graph(g, static_cast<uint64_t>(seed), str_cat("seed ", seed, " (ops ", rg.trace, ")"));
    } catch (const Error& e) {
      FAIL() << "seed " << seed << " (ops " << rg.trace << "): " << e.what();
    }
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace kiln
