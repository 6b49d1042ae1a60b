// contraction_tile (through default_opts): a contraction's lane axis and register tile per
// target (AVX2, AVX-512): how many vectors, which positions beside them, padded or exact, each
// rule with the measurement behind it. (Suite Heuristics, as the rules' docs name the tests.)
#include <gtest/gtest.h>

#include <tuple>

#include "compiler/opt/heuristics.h"
#include "compiler/opt/kernel_queries.h"
#include "compiler/opt/opts.h"
#include "compiler/opt/tuning_cache.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/nn.h"
#include "tests/opt/opt_plans.h"
#include "tests/opt/tile_opts.h"

namespace kiln {
namespace {

using testing::conv_kernel_opts;
using testing::grouped_conv_upcasts;
using testing::masked_avx512;
using testing::matmul_plan;
using testing::output_transform_opts;
using testing::upcasts_of;
using testing::upcasts_of_direct_3x3;
using testing::upcasts_of_weight_matmul;

// The upcasts of a classifier's matrix-vector product (1280 -> 1000, 16-lane weight panels).
std::vector<Opt> classifier_upcasts(const OptTarget& t) {
  Graph g;
  g.lowering().vector_bytes = 64;
  Tensor h = Tensor::input(g, "h", dtypes::float32, {1, 1280});
  NDArray w(dtypes::float32, {1280, 1000});
  g.add_output("y", matmul(h, Tensor::weight(g, "w", w)).uop());
  Plan p = plan_graph(g, {});
  return upcasts_of(default_opts(p.programs.at(0).ast, t));
}

// A 56-wide map could vectorize W (input and output contiguous) or the output channels (packed
// weights contiguous); the heuristic takes the tile that loads less per FMA: 16 channels x 4
// positions (6 loads per 8 FMAs) rather than 8 positions x 8 broadcast channels (9 per 8).
TEST(Heuristics, ConvolutionLaneAxisIsTheOneThatLoadsLess) {
  Graph g;
  g.lowering().winograd = false;  // the direct convolution's tile
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 64, 58, 58});
  NDArray w(dtypes::float32, {64, 64, 3, 3});
  g.add_output(
      "y",
      conv(x, Tensor::weight(g, "w", w), nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  std::vector<Opt> upcasts;
  for (const Opt& o : default_opts(p.programs[0].ast, OptTarget{32, 16}))
    if (o.kind == OptKind::Upcast) upcasts.push_back(o);
  // r0 is the output channel loop (64), r2 the W loop (56); the lane axis is the last upcast.
  EXPECT_EQ(upcasts, (std::vector<Opt>{{OptKind::Upcast, 2, 4}, {OptKind::Upcast, 0, 16}}));
}

// A GEMV-like step (a recurrent layer's batch of 2 rows times a 512-wide weight): the tile keeps
// both rows, so every weight vector load serves both, and the lane axis still takes 8 vectors;
// tasks split N. Dropping the row tile for more vectors streamed the weight once per row.
TEST(Heuristics, SmallRowCountsKeepTheirTileBesideWideLanes) {
  Graph g;
  Tensor h = Tensor::input(g, "h", dtypes::float32, {2, 128});
  NDArray w(dtypes::float32, {128, 512});
  g.add_output("y", matmul(h, Tensor::weight(g, "w", w)).uop());
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  OptTarget avx512{64, 32};  // 16 float lanes, 32 registers: 16 accumulators
  std::vector<Opt> want = {{OptKind::Upcast, 0, 2},
                           {OptKind::Upcast, 1, 128},
                           {OptKind::Unroll, 2, 4},
                           {OptKind::Parallel, 1, 4}};
  EXPECT_EQ(default_opts(p.programs[0].ast, avx512), want);
}

// Rows padded by more than a tenth (a 5x5 map's 25 positions in groups of 8: 32) give way to
// half the rows beside twice the lane vectors (groups of 4: 28, and 4 + 4 loads per 16 FMAs
// instead of 2 + 8): mobilenet_v2's 7x7 1x1 layers ran at 69 GFLOP/s with 8 x 32, at 91 with
// 4 x 64, before 7x7 maps took exact tiles of 7 (AnOddMapTakesAnExactOddTile). 196 rows
// (16-row tiles pad 6%) take 4 exact rows beside 4 vectors instead, by the rule for a padded
// tile (WiderLanesReplaceAPaddedTile); AVX2 takes 5 rows over 49 (2%; AnOddMapTakesAnExactOddTile).
TEST(Heuristics, ARowAxisPaddedByMoreThanATenthTakesHalfTheRowsAndTwiceTheVectors) {
  OptTarget avx512{64, 32}, avx2{32, 16};
  EXPECT_EQ(upcasts_of_weight_matmul(25, avx512),
            (std::vector<Opt>{{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 1, 64}}));
  EXPECT_EQ(upcasts_of_weight_matmul(196, avx512),
            (std::vector<Opt>{{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 1, 64}}));
  EXPECT_EQ(upcasts_of_weight_matmul(49, avx2),
            (std::vector<Opt>{{OptKind::Upcast, 0, 5}, {OptKind::Upcast, 1, 16}}));
}

// A map of an odd number of positions takes an exact tile of an odd divisor beside two lane
// vectors where a power of two would pad it: 49 rows as 7 x 32 channels (14 accumulators, none
// idle) rather than 4 x 64 (52 rows computed for 49) or 8 x 32 (56); the emitter splits the odd
// tile into native vectors (native_pieces.h). A 7-wide row (a 3x3 layer at 7x7, its padded input
// keeping H and W apart) takes 7 rather than 8 (resnet50's 7x7 layers 10-20% faster each, the
// model 0.95x at 1 and 2 threads). Not a 14-wide row (7 rather than 8 of 16 was slower), nor on
// AVX2, whose 16 registers do not hold 7 x 2 vectors: there a tile of 8 accumulators or fewer
// takes one position more where that pads no more than its power of two, 49 rows as 10 x 5
// (50) beside 2 vectors rather than 13 x 4 (52): 10 independent FMA chains instead of 8. 43
// rows take 5 too (45, within four hundredths of 4's 44), 28 keep an exact 4 (5 and 6 would
// compute 30); 48 rows take an exact 6 (AnAvx2TileTakesThePositionsItsRegistersHold).
TEST(Heuristics, AnOddMapTakesAnExactOddTile) {
  OptTarget avx512{64, 32}, avx2{32, 16};
  EXPECT_EQ(upcasts_of_weight_matmul(49, avx512),
            (std::vector<Opt>{{OptKind::Upcast, 0, 7}, {OptKind::Upcast, 1, 32}}));
  EXPECT_EQ(upcasts_of_weight_matmul(49, avx2),
            (std::vector<Opt>{{OptKind::Upcast, 0, 5}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(43, avx2),
            (std::vector<Opt>{{OptKind::Upcast, 0, 5}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(28, avx2),
            (std::vector<Opt>{{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(48, avx2),
            (std::vector<Opt>{{OptKind::Upcast, 0, 6}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_direct_3x3(7, avx512),
            (std::vector<Opt>{{OptKind::Upcast, 2, 7}, {OptKind::Upcast, 0, 32}}));
  for (const Opt& o : upcasts_of_direct_3x3(14, avx512)) EXPECT_NE(o.amount, 7) << o.str();
  for (const Opt& o : upcasts_of_direct_3x3(7, avx2)) EXPECT_NE(o.amount, 7) << o.str();
}

// On AVX2 (16 registers: a heuristic tile of 4 positions x 2 vectors, 8 accumulators) the tile
// takes as many positions as the registers hold beside the 2 weight vectors and a broadcast, 6,
// where 6 uses the axis within four hundredths as well as the best count from 4 to 6 does: 12
// independent FMA chains, where 8 just cover two pipes times a 4-cycle latency. 196 positions
// (a 14x14 map) as 33 x 6 (198) rather than 49 x 4; 48 as 8 x 6; a transformer's 128 rows as
// 22 x 6 (132) rather than 26 x 5 (130: 10 chains ran 9% fewer FMAs per cycle than 12); 49
// keeps 5 (6 would compute 54). A padded count needs a reduction of 96 or more (over 64 channels
// 196 rows keep an exact 4), an exact one 32 (over 16, 48 rows keep 4); AVX-512's tiles are
// unchanged, and a stem whose stride-2 windows overlap keeps its power of two
// (StemWindowsKeepTheirTileOnAvx2).
TEST(Heuristics, AnAvx2TileTakesThePositionsItsRegistersHold) {
  OptTarget avx512{64, 32}, avx2{32, 16};
  EXPECT_EQ(upcasts_of_weight_matmul(196, avx2),
            (std::vector<Opt>{{OptKind::Upcast, 0, 6}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(196, avx2, 64),
            (std::vector<Opt>{{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(48, avx2, 32),
            (std::vector<Opt>{{OptKind::Upcast, 0, 6}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(128, avx2, 256),
            (std::vector<Opt>{{OptKind::Upcast, 0, 6}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(48, avx2, 16),
            (std::vector<Opt>{{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 1, 16}}));
  EXPECT_EQ(upcasts_of_weight_matmul(196, avx512), upcasts_of_weight_matmul(196, avx512, 96));
  for (const Opt& o : upcasts_of_weight_matmul(196, avx512)) EXPECT_NE(o.amount, 6) << o.str();
  // The tuner's explicit accumulator counts are taken as they are.
  OptTarget tuned = avx2;
  tuned.accumulators = 8;
  EXPECT_EQ(upcasts_of_weight_matmul(196, tuned),
            (std::vector<Opt>{{OptKind::Upcast, 0, 4}, {OptKind::Upcast, 1, 16}}));
}

// A 1x1 layer over a 7x7 map on AVX2, where more positions would pad the row (7 as 8 in fours,
// as 12 in sixes): its 8 accumulators (4 positions x 2 vectors of channels) become 12 with a
// third vector of channels, when the channels divide into threes (efficientnet_b0's 192 -> 1152
// expansions 0.30 -> 0.27 ms as AVX2 code). 1280 channels do not; AVX-512 keeps its tile; an
// int8 layer keeps its lanes too (mobilenet_v2_qdq 9% slower with a third vector).
TEST(Heuristics, AnAvx2TileThatCannotTakeMorePositionsTakesAThirdVectorOfChannels) {
  // The 1x1 layer's upcasts, its output read by a 5x5 depthwise layer (padding 2): stored
  // channels-last into the padded map, a row of 7 positions at a time.
  auto reduced = [](const UOp* ast) {  // values each output sums
    int64_t n = 1;
    for (const UOp* u : ast->toposort())
      if (u->op == Op::REDUCE)
        for (size_t i = 1; i < u->src.size(); ++i) n *= size_of(u->src[i]);
    return n;
  };
  auto expansion = [&](int64_t channels, const OptTarget& t, int64_t panel) {
    Graph g;
    g.lowering().vector_bytes = 4 * panel;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 192, 7, 7});
    Tensor y = conv(x, Tensor::weight(g, "w", NDArray(dtypes::float32, {channels, 192, 1, 1})),
                    nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1});
    Tensor z = conv(y, Tensor::weight(g, "d", NDArray(dtypes::float32, {channels, 1, 5, 5})),
                    nullptr, {{1, 1}, {{2, 2}, {2, 2}}, {1, 1}, channels});
    g.add_output("z", z.uop());
    Plan p = plan_graph(g, {});
    for (const KernelProgram& k : p.programs)
      if (is_contraction_kernel(k.ast) && reduced(k.ast) == 192)
        return upcasts_of(default_opts(k.ast, t));
    ADD_FAILURE() << "no 1x1 kernel";
    return std::vector<Opt>{};
  };
  OptTarget avx2{32, 16}, avx512{64, 32};
  std::vector<Opt> wide = expansion(1152, avx2, 8);
  ASSERT_EQ(wide.size(), 2u);
  EXPECT_EQ(wide[0].amount, 4);
  EXPECT_EQ(wide[1].amount, 24);
  std::vector<Opt> other = expansion(1280, avx2, 8);
  ASSERT_FALSE(other.empty());
  EXPECT_EQ(other.back().amount, 16);
  for (const Opt& o : expansion(1152, avx512, 16)) EXPECT_NE(o.amount % 24, 0) << o.str();
}

// A grouped convolution's input is the same for every output channel of one group, so a tile
// takes output channels beside its positions in numbers that divide the group (8 of 24), where
// it took 2 rows and no channels (regnet_x_1_6gf's 28x28 layers 0.85 -> 0.25 ms); channels as
// 8-lane half vectors take at most one register per accumulator's worth of positions (8 x 32
// spilled AVX-512's registers at stride 2: 1.19 -> 0.71 ms); and half-vector lanes beside 8
// channels take 2 rows, whose windows share the input's loads (its 56x56 layers, 8 positions as
// lanes: 0.89 -> 0.49 ms).
TEST(Heuristics, AGroupedConvolutionsTileTakesChannelsWithinAGroup) {
  for (const auto& [t, panel] :
       {std::pair{masked_avx512(), int64_t{16}}, std::pair{OptTarget{32, 16}, int64_t{8}}}) {
    std::vector<std::pair<int64_t, int64_t>> ups = grouped_conv_upcasts(28, 1, t, panel);
    int64_t channels = 1;
    for (auto [size, amount] : ups)
      if (size == 168) channels *= amount;
    EXPECT_GT(channels, 1) << t.vector_bytes;
    EXPECT_EQ(24 % channels, 0) << t.vector_bytes;
  }
  // At stride 2 the positions gather, so the channels are the lanes: 8, half a vector.
  int64_t lanes = 1, positions = 1;
  for (auto [size, amount] : grouped_conv_upcasts(56, 2, masked_avx512(), 16))
    (size == 168 ? lanes : positions) *= amount;
  EXPECT_EQ(lanes, 8);
  EXPECT_LE(positions, 16);  // a register each: at most half of AVX-512's 32
  // 72 channels at 56x56: 8 positions as lanes (56 = 7 x 8), 8 channels, 2 rows.
  int64_t map = 1, group = 1;
  for (auto [size, amount] : grouped_conv_upcasts(56, 1, masked_avx512(), 16, 72))
    (size == 72 ? group : map) *= amount;
  EXPECT_EQ(group, 8);
  EXPECT_EQ(map, 16);
}

// shufflenet_v2's 116-channel 1x1 layers at 14x14 on AVX2: no channel count divides into 8
// lanes, and 196 positions take 4 (an exact divisor, half the vector); with cheap masks the
// positions take the whole vector, 200 of them, the last group masked (the model 0.88 of its
// time as AVX2 code). Without masks they keep 4.
TEST(Heuristics, HalfAnAvx2VectorOfPositionsTakesTheWholeVector) {
  OptTarget avx2{32, 16};
  avx2.masked_vectors = true;
  std::vector<Opt> up =
      upcasts_of(conv_kernel_opts({1, 116, 14, 14}, {116, 116, 1, 1}, 0, 8, avx2));
  ASSERT_FALSE(up.empty());
  EXPECT_EQ(up.back().amount, 8) << up.back().str();  // the lane axis: the last upcast
  avx2.masked_vectors = false;
  up = upcasts_of(conv_kernel_opts({1, 116, 14, 14}, {116, 116, 1, 1}, 0, 8, avx2));
  ASSERT_FALSE(up.empty());
  EXPECT_EQ(up.back().amount, 4) << up.back().str();
}

// A stem (3 -> 64 channels, 7x7 at stride 2 over 224x224) on AVX2: neighbouring positions'
// windows share 5 of 7 input columns, and the unrolled window keeps them live beside the
// accumulators, so the tile keeps its 4 positions (resnet18's stem as 6: the model 4% slower).
TEST(Heuristics, StemWindowsKeepTheirTileOnAvx2) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 3, 224, 224});
  NDArray w(dtypes::float32, {64, 3, 7, 7});
  g.add_output(
      "y",
      conv(x, Tensor::weight(g, "w", w), nullptr, {{2, 2}, {{3, 3}, {3, 3}}, {1, 1}, 1}).uop());
  Plan p = plan_graph(g, {});
  bool found = false;
  for (const KernelProgram& k : p.programs) {
    if (!is_contraction_kernel(k.ast)) continue;
    found = true;
    std::vector<Opt> up = upcasts_of(default_opts(k.ast, OptTarget{32, 16}));
    ASSERT_FALSE(up.empty());
    EXPECT_EQ(up[0].amount, 4) << up[0].str();
  }
  EXPECT_TRUE(found);
}

// A row whose odd divisors skip the budget (27: 3, 9, 27 around 8 positions beside 2 vectors)
// takes 9, one position and two accumulators over, rather than 8 padded to 32 lanes (5 of 32
// idle): 18 accumulators fit AVX-512's 32 registers beside the weights and a broadcast.
// squeezenet1_1's 27x27 32 -> 128 layer, direct: 0.26 ms at 1 thread with 9 x 32, 0.31 with
// 8 x 32. AVX2 keeps its tile (beside one vector, 9 positions would load 10 per 9 FMAs).
TEST(Heuristics, AnOddRowOnePositionOverTheBudgetTakesAnExactTile) {
  OptTarget avx512{64, 32}, avx2{32, 16};
  EXPECT_EQ(upcasts_of_direct_3x3(27, avx512),
            (std::vector<Opt>{{OptKind::Upcast, 2, 9}, {OptKind::Upcast, 0, 32}}));
  for (const Opt& o : upcasts_of_direct_3x3(27, avx2)) EXPECT_NE(o.amount, 9) << o.str();
  // 81 = 9 x 9: 9 as well; 25 (5 x 5) has no divisor one over the budget.
  EXPECT_EQ(upcasts_of_direct_3x3(81, avx512)[0], (Opt{OptKind::Upcast, 2, 9}));
  for (const Opt& o : upcasts_of_direct_3x3(25, avx512)) EXPECT_NE(o.amount, 9) << o.str();
}

// A row that pads to the same width in groups of 4 as in groups of 8 (15 -> 16) keeps 8
// positions x 32 channels, which load half the weight vectors per FMA of 4 x 64 (resnet50's
// layer4 3x3 layers, 7-wide before they took 7: 2.04 ms with 4 x 64, 1.78 with 8 x 32).
TEST(Heuristics, ARowPaddedAlikeInFoursAndEightsKeepsTwoVectorsOfChannels) {
  EXPECT_EQ(upcasts_of_direct_3x3(15, OptTarget{64, 32}),
            (std::vector<Opt>{{OptKind::Upcast, 2, 8}, {OptKind::Upcast, 0, 32}}));
}

// The half-rows rule for a 1x1 convolution, whose lane axis (output channels) is the outermost
// loop and so the task split. At 7x7 on AVX-512 the odd tile replaces it (7 x 32 at 1280, 320
// and 192 channels; mobilenet_v2 and efficientnet_b0 0.96-0.97x at 1 and 2 threads), where it
// had taken 4 x 64 at 1280 and 320 channels (mobilenet_v2's 960 -> 320 layer 0.234 -> 0.181 ms
// against 8 x 32) but kept 8 x 32 at 192, since 64s would leave 3 tasks, which 2 threads split
// 2:1 (efficientnet_b0's 1152 -> 192 projections 6-7% slower).
TEST(Heuristics, WiderVectorsOnTheTaskAxisKeepTasksEnough) {
  auto opts_of = [](int64_t cout) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 960, 7, 7});
    NDArray w(dtypes::float32, {cout, 960, 1, 1});
    g.add_output(
        "y",
        conv(x, Tensor::weight(g, "w", w), nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
    Plan p = plan_graph(g, {});
    return default_opts(p.programs.at(0).ast, OptTarget{64, 32});
  };
  for (auto [cout, tasks] : {std::pair{1280, 16}, {320, 10}, {192, 6}}) {
    std::vector<Opt> o = opts_of(cout);
    EXPECT_EQ(upcasts_of(o), (std::vector<Opt>{{OptKind::Upcast, 1, 7}, {OptKind::Upcast, 0, 32}}))
        << cout;
    EXPECT_EQ(o.back(), (Opt{OptKind::Parallel, 0, tasks})) << cout;
  }
  // 4 tasks split evenly over 2 and 4 threads: a 14x14 layer's 256 channels take 64 lanes beside
  // 4 exact positions (8 loads per 16 FMAs) rather than 16 lanes beside 16 padded positions (17).
  std::vector<Opt> four =
      conv_kernel_opts({1, 1024, 14, 14}, {256, 1024, 1, 1}, 0, 16, masked_avx512());
  EXPECT_EQ(upcasts_of(four),
            (std::vector<Opt>{{OptKind::Upcast, 1, 4}, {OptKind::Upcast, 0, 64}}));
  EXPECT_EQ(four.back(), (Opt{OptKind::Parallel, 0, 4}));
}

// Wider lanes may stand beside padded positions: a 14x14 layer's 196 positions have 4 as their
// largest power-of-two divisor under 8, and 32 channels x 4 positions would leave half the
// accumulators of 16 x 16; 32 channels x 8 positions (200, 2% padding) keep them all and load 10
// operands per 16 FMAs instead of 17.
TEST(Heuristics, WiderLanesStandBesidePaddedPositions) {
  std::vector<Opt> opts =
      conv_kernel_opts({1, 112, 14, 14}, {672, 112, 1, 1}, 0, 16, masked_avx512());
  EXPECT_EQ(upcasts_of(opts),
            (std::vector<Opt>{{OptKind::Upcast, 1, 8}, {OptKind::Upcast, 0, 32}}));
  EXPECT_EQ(opts.back(), (Opt{OptKind::Parallel, 0, 16}));
}

// A projection to few channels at 14x14 took 16 padded positions as its lanes beside 16 channels:
// a vector and 16 broadcasts per 16 FMAs. Two vectors of positions (196 padded to 224, the last
// group masked) beside 8 channels load 10; over a short reduction (16 -> 96 channels) the
// epilogue outweighs the loads and the tile stays.
TEST(Heuristics, PaddedPositionLanesRelieveALoadBoundProjection) {
  OptTarget avx512 = masked_avx512();
  std::vector<Opt> proj = conv_kernel_opts({1, 672, 14, 14}, {112, 672, 1, 1}, 0, 16, avx512);
  EXPECT_EQ(upcasts_of(proj),
            (std::vector<Opt>{{OptKind::Upcast, 0, 8}, {OptKind::Upcast, 1, 32}}));
  EXPECT_EQ(proj.back(), (Opt{OptKind::Parallel, 0, 14}));
  std::vector<Opt> shallow = conv_kernel_opts({1, 16, 14, 14}, {96, 16, 1, 1}, 0, 16, avx512);
  for (const Opt& o : upcasts_of(shallow))
    EXPECT_FALSE(o.range_id == 1 && o.amount == 32) << o.str();
}

// A classifier's 1000 channels are 62.5 vectors of 16: its weight gets zero channels up to a
// vector pair (1024) and the tile takes two whole vectors of channels, the last group masked,
// beside 8 positions (2 + 8 loads per 16 FMAs), not 16 positions x 8 channel rows (1 + 8 per 8:
// squeezenet's classifier 1.96 -> 1.58 ms on a Xeon). AVX2 keeps 16 channels (two vectors),
// beside 5 positions (169 as 34 x 5: 170, where 4 computes 172).
TEST(Heuristics, AnAxisOfHalfVectorsTakesWholeOnesWhereItsLoadsStayInBounds) {
  auto upcasts = [](int64_t panel, OptTarget t) {
    return upcasts_of(conv_kernel_opts({1, 512, 13, 13}, {1000, 512, 1, 1}, 0, panel, t));
  };
  OptTarget avx512{64, 32}, avx2{32, 16};
  avx512.masked_vectors = avx2.masked_vectors = true;
  // r0: the 1000 channels, r1: the 169 positions; the lane axis is the last upcast.
  EXPECT_EQ(upcasts(16, avx512),
            (std::vector<Opt>{{OptKind::Upcast, 1, 8}, {OptKind::Upcast, 0, 32}}));
  EXPECT_EQ(upcasts(8, avx2),
            (std::vector<Opt>{{OptKind::Upcast, 1, 5}, {OptKind::Upcast, 0, 16}}));
  // A classifier's matrix-vector product (1280 -> 1000) likewise: 32 lanes, two weight streams
  // (mobilenet_v2's ran at 0.49 ms with 8 lanes, 0.27 with 32).
  std::vector<Opt> ups = classifier_upcasts(avx512);
  ASSERT_FALSE(ups.empty());
  EXPECT_EQ(ups.back().amount, 32) << format_opts(ups);
}

// Lanes that pad their axis stop at the end of a weight packed in panels along it: 672 output
// channels are 21 pairs of 16-lane panels, so four vectors (64 lanes) would read past the last
// panel, and those gated panel loads became scalar loads in every group (196 x 672 x 112: 52
// GFLOP/s against 214 with two vectors). 640 channels take four vectors, as before.
TEST(Heuristics, PaddedLanesStayInsideAPackedWeight) {
  auto lanes_for = [](int64_t n) {
    Graph g;
    g.lowering().vector_bytes = 64;  // 16-lane panels
    Tensor a = Tensor::input(g, "a", dtypes::float32, {196, 112});
    NDArray w(dtypes::float32, {112, n});
    g.add_output("y", matmul(a, Tensor::weight(g, "w", w)).uop());
    Plan p = plan_graph(g, {});
    std::vector<Opt> ups = upcasts_of(default_opts(p.programs.at(0).ast, masked_avx512()));
    return ups.empty() ? int64_t{0} : ups.back().amount;
  };
  EXPECT_EQ(672 % lanes_for(672), 0);
  EXPECT_EQ(lanes_for(640), 64);
}

// A Winograd output transform reads channels contiguously and writes them planes apart: its
// lane axis takes the usual two vectors, not eight (each vector is one line per lane written at
// once: squeezenet's 128-channel transform ran 0.072 ms with 8, 0.050 with 2), and what is left
// of the channels gives the tasks whole planes to write (the 27-row split shared a line between
// tasks in every plane, and ran 2x slower on 2 threads than on 1).
TEST(Heuristics, AStoreThatScattersItsLanesKeepsTwoVectorsOfThem) {
  OptTarget avx512{64, 32}, avx2{32, 16};
  for (auto [t, lanes] : {std::pair{avx512, 32}, std::pair{avx2, 16}}) {
    std::vector<Opt> opts = output_transform_opts({1, 32, 27, 27}, 128, t);
    int64_t channel_lanes = 0;
    for (const Opt& o : upcasts_of(opts))
      if (o.range_id == 0) channel_lanes = o.amount;
    EXPECT_EQ(channel_lanes, lanes) << format_opts(opts);
    ASSERT_FALSE(opts.empty());
    EXPECT_EQ(opts.back(), (Opt{OptKind::Parallel, 0, 128 / lanes})) << format_opts(opts);
  }
}

// Stores count with the loads when the lane axis is chosen: a 1x1 layer over 16 input channels
// does 16 FMAs per output, so output channels as lanes (each vector stored as 16 scalars, planes
// apart) cost more than the 55x55 positions as lanes (contiguous stores, 3025 padded to whole
// vectors: 3040, the last group masked). squeezenet's expansion: 0.093 -> 0.060 ms. Over 512
// input channels (a classifier) the channels stay the lanes.
TEST(Heuristics, FewFmasPerOutputMakeTheStoresChooseTheLaneAxis) {
  OptTarget avx512{64, 32}, avx2{32, 16};
  avx512.masked_vectors = avx2.masked_vectors = true;
  for (auto [t, lanes] : {std::pair{avx512, 32}, std::pair{avx2, 16}}) {
    std::vector<Opt> ups = upcasts_of(conv_kernel_opts({1, 16, 55, 55}, {64, 16, 1, 1}, 0, 16, t));
    ASSERT_FALSE(ups.empty());
    // r0: the 64 output channels, r1: the 3025 positions; the lane axis is the last upcast.
    EXPECT_EQ(ups.back(), (Opt{OptKind::Upcast, 1, lanes})) << format_opts(ups);
    std::vector<Opt> deep =
        upcasts_of(conv_kernel_opts({1, 512, 13, 13}, {1000, 512, 1, 1}, 0, 16, t));
    ASSERT_FALSE(deep.empty());
    EXPECT_EQ(deep.back().range_id, 0) << format_opts(deep);
  }
}

// A store that scatters its lanes (a Winograd output transform: channels the lanes, NCHW
// output) takes rows of 4 along the loop the output is contiguous along (r2, W), the last padded
// on an odd map: each row is then one 16-byte store after a shuffle, not a scalar store per lane
// (squeezenet's transforms at 55x55, 27x27 and 13x13 ran 0.63-0.86x the time). A 14-wide map
// keeps its exact pairs (4 padded to 16 ran 15% slower).
TEST(Heuristics, AStoreThatScattersItsLanesTakesRowsOfFourAlongItsOutput) {
  OptTarget avx512 = masked_avx512(), avx2{32, 16};
  for (const OptTarget& t : {avx512, avx2})
    for (auto [side, channels, rows] : {std::tuple{55, 64, 4}, std::tuple{27, 128, 4},
                                        std::tuple{56, 64, 4}, std::tuple{14, 256, 2}}) {
      std::vector<Opt> opts = output_transform_opts({1, 32, side, side}, channels, t);
      int64_t along_w = 1;
      for (const Opt& o : upcasts_of(opts))
        if (o.range_id == 2) along_w = o.amount;
      EXPECT_EQ(along_w, rows) << side << "x" << side << ": " << format_opts(opts);
    }
}

// A store that scatters its lanes into planes a multiple of 4 KiB apart (a 48x64 map: 12 KiB)
// writes lines that all fall in one L1 set: at most 8 lanes, where 32 channels evicted each line
// before the next tile completed it (0.13 -> 0.024 ms). Planes 12544 bytes apart (56x56) spread
// their lines over 16 sets and keep every lane; so do a 24x32 map's (3 KiB: 4 sets, 32 lanes).
TEST(Heuristics, LanesScatteredIntoOneCacheSetAreAtMostEight) {
  OptTarget avx512 = masked_avx512(), avx2{32, 16};
  for (const OptTarget& t : {avx512, avx2})
    for (auto [h, w, lanes] :
         {std::tuple{48, 64, 8}, std::tuple{32, 32, 8}, std::tuple{56, 56, 2 * t.vector_bytes / 4},
          std::tuple{24, 32, 2 * t.vector_bytes / 4}}) {
      std::vector<Opt> opts = output_transform_opts({1, 32, h, w}, 32, t);
      int64_t channel_lanes = 0;
      for (const Opt& o : upcasts_of(opts))
        if (o.range_id == 0) channel_lanes = o.amount;
      EXPECT_EQ(channel_lanes, std::min<int64_t>(lanes, 32))
          << h << "x" << w << " on " << t.vector_bytes << "-byte vectors: " << format_opts(opts);
    }
}

// A depthwise layer's vector operand (its input) varies along every output axis, so the tile
// takes a second row as independent accumulators; the rows' 3x3 windows overlap (input row
// y + ky), so two rows of one vector share loads where eight vectors of one row need a load per
// FMA. mobilenet_v2's 112-wide layer took 7 vectors and ran 0.218 ms, 2 rows of 16 lanes 0.115.
TEST(Heuristics, OverlappingWindowRowsKeepTheirRowTileOnWideMaps) {
  OptTarget avx512 = masked_avx512();
  // r0: channels, r1: rows, r2: W (the lane axis).
  EXPECT_EQ(upcasts_of(conv_kernel_opts({1, 32, 112, 112}, {32, 1, 3, 3}, 1, 16, avx512, 32)),
            (std::vector<Opt>{{OptKind::Upcast, 1, 2}, {OptKind::Upcast, 2, 16}}));
}

// More lane vectors beside fewer positions when the positions then pad less: a 14x14 1x1 layer
// over 576 channels took 16 channels x 16 positions (196 padded to 208: 17 loads per 16 FMAs)
// and now 64 channels x 4 positions (exact, 8 per 16); resnet50 61.6 -> 59.2 ms. Where the
// tile is exact either way (a 128-row GEMM) the rows stay: wider lanes there were as often
// slower as faster. A lane axis that is the outermost loop keeps tasks for 2 threads.
TEST(Heuristics, WiderLanesReplaceAPaddedTile) {
  OptTarget avx512 = masked_avx512();
  EXPECT_EQ(upcasts_of(conv_kernel_opts({1, 96, 14, 14}, {576, 96, 1, 1}, 0, 16, avx512)),
            (std::vector<Opt>{{OptKind::Upcast, 1, 4}, {OptKind::Upcast, 0, 64}}));
  Graph g;
  g.lowering().vector_bytes = 64;  // 16-lane panels
  Plan p = matmul_plan(g, 128, 256, 256);
  EXPECT_EQ(upcasts_of(default_opts(p.programs.at(0).ast, avx512)),
            (std::vector<Opt>{{OptKind::Upcast, 0, 8}, {OptKind::Upcast, 1, 32}}));
  // 192 channels in 64s would make 3 tasks: the padded tile stays.
  std::vector<Opt> few =
      upcasts_of(conv_kernel_opts({1, 48, 14, 14}, {192, 48, 1, 1}, 0, 16, avx512));
  ASSERT_FALSE(few.empty());
  EXPECT_LT(few.back().amount, 64) << format_opts(few);
}

// On a target whose vector FMA issues once per cycle (Zen 4's AVX-512), a padded position or
// lane costs the tile a cycle and loads cost it nothing while two a cycle feed it, so tiles take
// exact sizes where the other targets trade padding for fewer loads per FMA: a 14x14 projection
// (672 -> 112) keeps 16 channels as its lanes beside 16 positions rather than 32 padded
// positions (224 for 196) beside 8 channels; a direct 3x3 layer at 14x14 takes 7 positions of a
// row (exact) beside 32 channels rather than 2 x 2 beside 64; 144 channels take 16-lane vectors
// rather than 32 lanes padded to 160. efficientnet_b0 at 1 thread on a Zen 4: 0.954 of its time.
TEST(Heuristics, AHalfRateFmaTargetTakesExactTiles) {
  OptTarget full = masked_avx512(), half = masked_avx512();
  half.half_rate_fma = true;
  auto ups = [](const Shape& x, const Shape& w, const OptTarget& t) {
    return upcasts_of(conv_kernel_opts(x, w, w[2] / 2, 16, t));
  };
  // r0: output channels, r1: positions.
  EXPECT_EQ(ups({1, 672, 14, 14}, {112, 672, 1, 1}, full),
            (std::vector<Opt>{{OptKind::Upcast, 0, 8}, {OptKind::Upcast, 1, 32}}));
  EXPECT_EQ(ups({1, 672, 14, 14}, {112, 672, 1, 1}, half),
            (std::vector<Opt>{{OptKind::Upcast, 1, 16}, {OptKind::Upcast, 0, 16}}));
  // r0: output channels, r1: rows, r2: columns.
  EXPECT_EQ(ups({1, 256, 14, 14}, {256, 256, 3, 3}, full),
            (std::vector<Opt>{
                {OptKind::Upcast, 2, 2}, {OptKind::Upcast, 1, 2}, {OptKind::Upcast, 0, 64}}));
  EXPECT_EQ(ups({1, 256, 14, 14}, {256, 256, 3, 3}, half),
            (std::vector<Opt>{{OptKind::Upcast, 2, 7}, {OptKind::Upcast, 0, 32}}));
  EXPECT_EQ(ups({1, 48, 28, 28}, {144, 48, 1, 1}, full).back(), (Opt{OptKind::Upcast, 0, 32}));
  for (const Opt& o : ups({1, 48, 28, 28}, {144, 48, 1, 1}, half))
    EXPECT_TRUE(o.range_id != 0 || 144 % o.amount == 0) << o.str();
  // A matrix-vector product keeps two weight streams (32 lanes over 1000 classes, the last group
  // masked): its padded lanes wait for memory, not for the FMAs.
  std::vector<Opt> gemv = classifier_upcasts(half);
  ASSERT_FALSE(gemv.empty());
  EXPECT_EQ(gemv.back().amount, 32) << format_opts(gemv);
}

// Which targets are half-rate: AVX-512 on a core without two 512-bit FMA units (Zen 4), read
// from the target description, not the host.
TEST(Heuristics, OnlyAvx512OnHalfWidthFmaUnitsIsAHalfRateFmaTarget) {
  auto half_rate = [](const char* triple, const char* cpu) {
    return opt_target(TargetInfo::create({triple, cpu})).half_rate_fma;
  };
  EXPECT_TRUE(half_rate("x86_64-linux-gnu", "znver4"));
  EXPECT_FALSE(half_rate("x86_64-linux-gnu", "znver5"));
  EXPECT_FALSE(half_rate("x86_64-linux-gnu", "sapphirerapids"));
  EXPECT_FALSE(half_rate("x86_64-linux-gnu", "znver3"));
  EXPECT_FALSE(half_rate("x86_64-linux-gnu", "x86-64-v3"));
  EXPECT_FALSE(half_rate("aarch64-linux-gnu", "neoverse-n1"));
}

// Which targets' cores share one L3 on a mesh (split_affinity.cc keeps each kernel's own split
// there): Intel's server cores, by name or by their generation's features; not Zen (an L3 per
// complex), an ISA level or NEON.
TEST(Heuristics, OnlyIntelServerCoresShareOneL3OnAMesh) {
  const std::vector<std::tuple<const char*, const char*, bool>> targets = {
      {"x86_64-linux-gnu", "sapphirerapids", true}, {"x86_64-linux-gnu", "emeraldrapids", true},
      {"x86_64-linux-gnu", "skylake-avx512", true}, {"x86_64-linux-gnu", "znver4", false},
      {"x86_64-linux-gnu", "znver5", false},        {"x86_64-linux-gnu", "znver3", false},
      {"x86_64-linux-gnu", "x86-64-v3", false},     {"aarch64-linux-gnu", "neoverse-n1", false}};
  for (const auto& [triple, cpu, mesh] : targets)
    EXPECT_EQ(opt_target(TargetInfo::create({triple, cpu})).mesh_shared_l3, mesh) << cpu;
}

}  // namespace
}  // namespace kiln
