// The heuristics (default_opts): which axis a kernel vectorizes, its window unrolls and task
// split, per target (AVX2, AVX-512), each choice with the measurement behind it. The register
// tiles of contractions are contraction_tile_test.cc's.
#include <gtest/gtest.h>

#include <map>

#include "compiler/opt/heuristics.h"
#include "compiler/opt/kernel_queries.h"
#include "compiler/opt/opts.h"
#include "compiler/opt/tuning_cache.h"
#include "compiler/tensor/channels_last.h"
#include "compiler/tensor/nn.h"
#include "tests/opt/opt_plans.h"
#include "tests/opt/tile_opts.h"

namespace kiln {
namespace {

using testing::complete_unroll_sizes;
using testing::conv_kernel_opts;
using testing::masked_avx512;
using testing::matmul_plan;
using testing::output_transform_opts;
using testing::selector_plan;
using testing::upcasts_of;

TEST(Heuristics, VectorizeTheContiguousAxisAndTileContractions) {
  Graph g;
  Plan p = matmul_plan(g, 64, 64, 64);
  std::vector<Opt> opts = default_opts(p.programs[0].ast, OptTarget{32, 16});
  // AVX2: 8 float lanes. The lane axis is N (B is contiguous along it, A does not vary) with
  // two vectors, the tile's other axis M takes 4 (8 vector accumulators), the reduce is unrolled
  // by 4, and the rest of the outer loop becomes tasks. The lane axis is the last upcast.
  std::vector<Opt> want = {{OptKind::Upcast, 0, 4},
                           {OptKind::Upcast, 1, 16},
                           {OptKind::Unroll, 2, 4},
                           {OptKind::Parallel, 0, 16}};
  EXPECT_EQ(opts, want);
  // Elementwise over (7, 40): merge_loops makes it one loop of 280 elements, vectorized by 8
  // (16 do not divide it) on AVX-512, by 4 on 16-byte vectors.
  Graph g2;
  Tensor x = Tensor::input(g2, "x", dtypes::float32, {7, 40});
  g2.add_output("y", x.exp().uop());
  Plan p2 = plan_graph(g2, {});
  EXPECT_EQ(default_opts(p2.programs[0].ast, OptTarget{64, 16}),
            (std::vector<Opt>{{OptKind::Upcast, 0, 8}}));
  EXPECT_EQ(default_opts(p2.programs[0].ast, OptTarget{16, 16}),
            (std::vector<Opt>{{OptKind::Upcast, 0, 4}}));
  // 3 x 114 (one loop of 342): 2 lanes divide it; with cheap masked vectors (AVX) 8 lanes in 43
  // groups, the last one masked.
  Graph g3;
  Tensor y = Tensor::input(g3, "y", dtypes::float32, {3, 114});
  g3.add_output("z", y.exp().uop());
  Plan p3 = plan_graph(g3, {});
  OptTarget avx{32, 16};
  EXPECT_EQ(default_opts(p3.programs[0].ast, avx), (std::vector<Opt>{{OptKind::Upcast, 0, 2}}));
  avx.masked_vectors = true;
  EXPECT_EQ(default_opts(p3.programs[0].ast, avx), (std::vector<Opt>{{OptKind::Upcast, 0, 8}}));
}

// A kernel whose loads gather along its store's contiguous axis but are contiguous along
// another output loop takes that loop as its lanes and rows of 8 along the store's axis (each
// row one store): a stride-2 max pool over a channels-last map into an NCHW output. Over an NCHW
// map (contiguous along W for both) the store's axis stays the lane axis.
TEST(Heuristics, GatheredLoadsTakeTheirContiguousAxisAsLanesAndStoreInRows) {
  OptTarget avx512 = masked_avx512();
  PoolParams pool;
  pool.kernel = {3, 3};
  pool.stride = {2, 2};
  auto pool_upcasts = [&](bool channels_last) {
    Graph g;
    Tensor x = channels_last
                   ? Tensor::input(g, "x", dtypes::float32, {1, 55, 55, 64}).permute({0, 3, 1, 2})
                   : Tensor::input(g, "x", dtypes::float32, {1, 64, 55, 55});
    g.add_output("y", max_pool(x, pool).uop());
    Plan p = plan_graph(g, {});
    EXPECT_EQ(p.programs.size(), 1u);
    return upcasts_of(default_opts(p.programs.at(0).ast, avx512));
  };
  std::vector<Opt> ups = pool_upcasts(true);
  ASSERT_EQ(ups.size(), 2u);
  EXPECT_EQ(ups[0].amount, 8);   // 27 output positions of a row: 8 per store, the last masked
  EXPECT_EQ(ups[1].amount, 16);  // the channels, a vector
  ups = pool_upcasts(false);
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0].amount, 16);
}

// A reduction to one value has no output loop to vectorize: its innermost range is unrolled a
// vector wide (the expander spreads the copies over a vector of accumulators). A uint8 row of
// 114 bytes is padded to a whole vector where byte masks are instructions (AVX-512BW), and a
// short contiguous uint8 axis (4 channels of a blocked layout) takes the next axis too.
TEST(Heuristics, FullReductionsAndByteRowsUseWholeVectors) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {128, 1024});
  g.add_output("m", x.max().uop());
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  std::vector<Opt> opts = default_opts(p.programs[0].ast, OptTarget{64, 32});
  ASSERT_EQ(opts.size(), 1u);
  EXPECT_EQ(opts[0].kind, OptKind::Unroll);
  EXPECT_EQ(opts[0].amount, 16);
  EXPECT_EQ(default_opts(p.programs[0].ast, OptTarget{32, 16})[0].amount, 8);

  Graph g2;
  Tensor b = Tensor::input(g2, "b", dtypes::uint8, {3, 112, 112});
  g2.add_output("padded", b.pad({{0, 0}, {1, 1}, {1, 1}}, 0.0).uop());
  Plan p2 = plan_graph(g2, {});
  OptTarget avx512 = masked_avx512();
  EXPECT_EQ(default_opts(p2.programs[0].ast, avx512)[0].amount, 2);  // no byte masks
  avx512.masked_bytes = true;
  EXPECT_EQ(default_opts(p2.programs[0].ast, avx512)[0].amount, 64);

  Graph g3;
  Tensor c = Tensor::input(g3, "c", dtypes::uint8, {1, 8, 30, 30});
  g3.add_output("blocked",
                c.reshape({1, 2, 4, 30, 30}).permute({0, 1, 3, 4, 2}).contiguous().uop());
  Plan p3 = plan_graph(g3, {});
  int64_t lanes = 1;
  for (const Opt& o : default_opts(p3.programs[0].ast, avx512))
    if (o.kind == OptKind::Upcast) lanes *= o.amount;
  EXPECT_EQ(lanes, 4 * 16);
}

// A 3x3 convolution's kernel window is unrolled completely (its short kh/kw loops go) and the
// channel reduce is left rolled; the tile pads a 14-wide map only if it must (2 divides it).
TEST(Heuristics, ConvolutionWindowsAreUnrolledCompletely) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 16, 16});
  NDArray w(dtypes::float32, {32, 16, 3, 3});
  g.add_output(
      "y",
      conv(x, Tensor::weight(g, "w", w), nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  const UOp* ast = p.programs[0].ast;
  std::map<int64_t, int64_t> size_of_range;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE) size_of_range[u->range().id] = u->src[0]->cval().i;
  EXPECT_EQ(complete_unroll_sizes(ast, default_opts(ast, OptTarget{32, 16})),
            (std::vector<int64_t>{3, 3}));
  OptTarget rolled{32, 16};
  rolled.unroll_window = false;  // the tuner's alternative: the 16 channels unrolled by 4
  std::vector<Opt> alt;
  for (const Opt& o : default_opts(ast, rolled))
    if (o.kind == OptKind::Unroll) alt.push_back(o);
  ASSERT_EQ(alt.size(), 1u);
  EXPECT_EQ(alt[0].amount, 4);
  EXPECT_EQ(size_of_range.at(alt[0].range_id), 16);
}

// A loop that only selects an expression by gates (a stack of different expressions, as the
// Winograd input transform's 36 points) is unrolled into one store per expression; the lanes are
// chosen among the other loops. A loop that indexes its loads is no selector: an elementwise
// kernel is not unrolled.
TEST(Heuristics, ASelectorLoopIsUnrolledIntoOneStorePerExpression) {
  Graph g;
  Plan p = testing::selector_plan(g);  // loops r0[4] (the selector), r1[64]
  const UOp* ast = p.programs.at(0).ast;
  for (const OptTarget& t : {OptTarget{32, 16}, masked_avx512()}) {
    std::vector<Opt> opts = default_opts(ast, t);
    ASSERT_GE(opts.size(), 2u);
    EXPECT_EQ(opts[0].str(), "UNROLL(r0,4)");
    EXPECT_EQ(opts[1].str(), str_cat("UPCAST(r1,", t.vector_bytes / 4, ")"));
  }
  Graph g2;
  Tensor x = Tensor::input(g2, "x", dtypes::float32, {4, 4, 16});
  g2.add_output("y", x.mul(2.0).uop());
  Plan p2 = plan_graph(g2, {});
  for (const Opt& o : default_opts(p2.programs.at(0).ast, masked_avx512()))
    EXPECT_NE(o.kind, OptKind::Unroll) << o.str();
}

// A stem (3 input channels, a 3x3 window at stride 2) unrolls its channels instead of the window:
// unrolled, the window's overlapping columns kept their inputs live beside the accumulators and
// spilled (squeezenet1_1's stem 1.5x slower). A 4-channel layer keeps the unrolled window.
TEST(Heuristics, StemsUnrollTheirChannelsInsteadOfTheWindow) {
  auto unrolled_sizes = [](int64_t cin) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, cin, 64, 64});
    NDArray w(dtypes::float32, {32, cin, 3, 3});
    g.add_output(
        "y",
        conv(x, Tensor::weight(g, "w", w), nullptr, {{2, 2}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
    Plan p = plan_graph(g, {});
    EXPECT_EQ(p.programs.size(), 1u);
    const UOp* ast = p.programs[0].ast;
    return complete_unroll_sizes(ast, default_opts(ast, OptTarget{32, 16}));
  };
  EXPECT_EQ(unrolled_sizes(3), (std::vector<int64_t>{3}));
  EXPECT_EQ(unrolled_sizes(4), (std::vector<int64_t>{3, 3}));
}

// A contraction that would re-read more than L2 per iteration of its outermost loop runs another
// loop outermost (TILE(r, 1)) and splits that one into tasks: a 1024^3 GEMM re-read its 4 MB B
// once per 8 rows of A (51% of the FMA peak on a Xeon), and streams B once with the N tiles
// outermost (72%). The same GEMM with a 16 MB L2, and a 256^3 one (B 256 KiB), keep the order;
// a 1x1 layer re-reading its 3 MB input per 8 output channels runs the positions outermost.
TEST(Heuristics, AnOperandLargerThanL2IsStreamedOnce) {
  auto opts_of = [](int64_t m, int64_t kk, int64_t n, int64_t l2) {
    Graph g;
    Plan p = matmul_plan(g, m, kk, n);
    OptTarget avx512{64, 32};
    avx512.l2_bytes = l2;
    return default_opts(p.programs.at(0).ast, avx512);
  };
  std::vector<Opt> big = opts_of(1024, 1024, 1024, 1 << 20);
  ASSERT_GE(big.size(), 2u);
  EXPECT_EQ(big[big.size() - 2], (Opt{OptKind::Tile, 1, 1}));
  EXPECT_EQ(big.back(), (Opt{OptKind::Parallel, 1, 16}));
  for (std::vector<Opt> keep :
       {opts_of(1024, 1024, 1024, 16 << 20), opts_of(256, 256, 256, 1 << 20)}) {
    for (const Opt& o : keep) EXPECT_NE(o.kind, OptKind::Tile) << o.str();
    EXPECT_EQ(keep.back(), (Opt{OptKind::Parallel, 0, keep.back().amount}));
  }
  // The applier takes the proposal: 16 tasks over N's 32 tiles.
  Graph g;
  Plan p = matmul_plan(g, 1024, 1024, 1024);
  OptimizedKernel k = apply_opts(p.programs[0].ast, big);
  EXPECT_EQ(k.ntasks, 16);

  OptTarget avx512{64, 32};
  std::vector<Opt> conv_opts = conv_kernel_opts({1, 256, 56, 56}, {128, 256, 1, 1}, 0, 16, avx512);
  const Opt* tile = nullptr;
  for (const Opt& o : conv_opts)
    if (o.kind == OptKind::Tile) tile = &o;
  ASSERT_NE(tile, nullptr) << format_opts(conv_opts);
  EXPECT_EQ(tile->amount, 1);
  // The loop run outermost is the positions (3136), not the 128 output channels (r0).
  EXPECT_NE(tile->range_id, 0) << format_opts(conv_opts);
  EXPECT_EQ(conv_opts.back(), (Opt{OptKind::Parallel, tile->range_id, 16}));

  // A 48 -> 16 3x3 layer at 96x128 (a U-Net's decoder): W's 4 lane tiles re-read the weights
  // least, but the 96 rows give every task work (4 tasks ran 1.16x faster on 2 threads).
  std::vector<Opt> rows_opts = conv_kernel_opts({1, 48, 96, 128}, {16, 48, 3, 3}, 1, 16, avx512);
  ASSERT_GE(rows_opts.size(), 2u);
  EXPECT_EQ(rows_opts[rows_opts.size() - 2], (Opt{OptKind::Tile, 1, 1})) << format_opts(rows_opts);
  EXPECT_EQ(rows_opts.back(), (Opt{OptKind::Parallel, 1, 16})) << format_opts(rows_opts);
}

// A channels-last stride-2 3x3 layer, 256 -> 256 channels from 28x28 to 14x14 (resnet50's
// layer3.0 conv2), loops over its output rows outermost, each 2-row tile re-reading all 2.4 MB
// of weights: beyond a 2 MB L2 it splits along its 4 tiles of 64 output channels instead (a
// quarter of the tasks; 3.59 -> 1.55 ms on a Xeon), which re-read the 0.9 MB input. With a
// 4 MB L2 the weights stay in cache and the rows stay outermost.
TEST(Heuristics, WeightsBeyondL2SplitAlongAQuarterOfTheTasks) {
  auto opts_of = [](int64_t l2) {
    Graph g;
    g.lowering().winograd = false;
    g.lowering().vector_bytes = 64;
    Tensor x = stored_channels_last(Tensor::input(g, "x", dtypes::float32, {1, 256, 28, 28}));
    NDArray w(dtypes::float32, {256, 256, 3, 3});
    Tensor y = conv(x, Tensor::weight(g, "w", w), nullptr, {{2, 2}, {{1, 1}, {1, 1}}, {1, 1}, 1});
    g.add_output("y", stored_channels_last(y).uop());
    Plan p = plan_graph(g, {});
    OptTarget t = masked_avx512();
    t.l2_bytes = l2;
    for (const auto& prog : p.programs)
      if (is_contraction_kernel(prog.ast)) {
        std::vector<Opt> opts = default_opts(prog.ast, t);
        std::map<int64_t, int64_t> sizes;
        for (const UOp* u : prog.ast->toposort())
          if (u->op == Op::RANGE) sizes[u->range().id] = size_of(u);
        EXPECT_EQ(opts.back().kind, OptKind::Parallel) << format_opts(opts);
        // The split loop's size and its task count.
        return std::pair<int64_t, int64_t>{sizes.at(opts.back().range_id), opts.back().amount};
      }
    ADD_FAILURE() << "no convolution kernel";
    return std::pair<int64_t, int64_t>{};
  };
  EXPECT_EQ(opts_of(2 << 20), (std::pair<int64_t, int64_t>{256, 4}));
  EXPECT_EQ(opts_of(4 << 20), (std::pair<int64_t, int64_t>{14, 7}));
}

// A contraction whose outermost loop leaves few tasks (16 output channels in tiles of 8: 2)
// runs a loop of many outermost when what that loop re-reads stays in cache and each task's
// share of a row spans several cache lines: squeezenet's 64 -> 16 layer at 55x55 splits its
// positions 16 ways. A 13x13 map's rows are too short for that (16 tasks would share a line of
// every plane), and a layer with tasks enough keeps its order.
TEST(Heuristics, AnOuterLoopOfFewTasksGivesWayToOneOfMany) {
  OptTarget avx512 = masked_avx512();
  std::vector<Opt> few = conv_kernel_opts({1, 64, 55, 55}, {16, 64, 1, 1}, 0, 16, avx512);
  ASSERT_GE(few.size(), 2u);
  EXPECT_EQ(few[few.size() - 2], (Opt{OptKind::Tile, 1, 1})) << format_opts(few);
  EXPECT_EQ(few.back(), (Opt{OptKind::Parallel, 1, 16})) << format_opts(few);
  for (std::vector<Opt> keep : {conv_kernel_opts({1, 512, 13, 13}, {64, 512, 1, 1}, 0, 16, avx512),
                                conv_kernel_opts({1, 16, 55, 55}, {64, 16, 1, 1}, 0, 16, avx512)}) {
    for (const Opt& o : keep) EXPECT_NE(o.kind, OptKind::Tile) << format_opts(keep);
    EXPECT_EQ(keep.back().range_id, 0) << format_opts(keep);
  }
}

// The same where the lanes are output channels stored along the rows in chunks: a Winograd
// output transform of 64 channels at 55x55 takes them in 2 tiles of 32 lanes on AVX-512, 2
// tasks; its 55 rows go outermost and make 16, so each thread writes whole rows of its share
// (squeezenet's fire modules: 0.244 -> 0.158 ms at 2 threads).
TEST(Heuristics, AChannelLaneKernelOfFewTasksSplitsItsRows) {
  OptTarget avx512 = masked_avx512();
  std::vector<Opt> opts = output_transform_opts({1, 16, 55, 55}, 64, avx512);
  std::vector<Opt> ups = upcasts_of(opts);
  ASSERT_FALSE(ups.empty());
  EXPECT_EQ(ups.back(), (Opt{OptKind::Upcast, 0, 32})) << format_opts(opts);  // channel lanes
  ASSERT_GE(opts.size(), 2u);
  EXPECT_EQ(opts[opts.size() - 2], (Opt{OptKind::Tile, 1, 1})) << format_opts(opts);
  EXPECT_EQ(opts.back(), (Opt{OptKind::Parallel, 1, 16})) << format_opts(opts);
}

// A 7x7 depthwise layer on AVX-512 has 8 lanes of 16 and no second row (7 rows), so its
// unrolled window would be the only independent work, and LLVM's SLP vectorizer pairs those
// copies into whole vectors with an insert each: its window stays a loop (efficientnet_b0's 5x5
// layers at 7x7: 0.35 -> 0.23 ms). On AVX2 the 8 lanes are a whole vector: the window unrolls.
TEST(Heuristics, AHalfVectorAloneKeepsItsWindowRolled) {
  auto unrolls = [](const OptTarget& t) {
    int n = 0;
    for (const Opt& o : conv_kernel_opts({1, 64, 7, 7}, {64, 1, 5, 5}, 2, 8, t, 64))
      n += o.kind == OptKind::Unroll;
    return n;
  };
  OptTarget avx512{64, 32}, avx2{32, 16};
  avx512.masked_vectors = avx2.masked_vectors = true;
  EXPECT_EQ(unrolls(avx512), 0);
  EXPECT_GT(unrolls(avx2), 0);
}

}  // namespace
}  // namespace kiln
