// Task splits that follow the producer's (compiler/opt/split_affinity.h), on mobilenet_v2's
// 112x112 pattern: a 1x1 expansion whose tasks split the rows of a padded map, then the border
// fills of that map and a stride-2 depthwise layer, which split the same rows instead of their
// channels (or of nothing); squeezenet's squeeze layer, whose positions (one loop) the padded
// copy for the 3x3 expansion follows as rows; a 1x1 layer that follows only when every reader of
// its (first launch's) output splits the same axis; a max pool in bands of the rows its producer
// split.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "compiler/opt/kernel_queries.h"
#include "compiler/opt/split_affinity.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/random_graph.h"

namespace kiln {
namespace {

OptTarget avx512() {
  OptTarget t{64, 32};
  t.masked_vectors = true;
  return t;
}

OptTarget avx2() {
  OptTarget t{32, 16};
  t.masked_vectors = true;
  return t;
}

struct Chain {
  std::unique_ptr<Graph> graph;  // owns the plan's UOps
  Plan plan;
  std::vector<OptimizedKernel> kernels;
};

// The graph planned, each kernel optimized by the heuristics, then (with `follow`) by
// follow_producer_splits for a package of `threads` threads.
Chain optimized(std::unique_ptr<Graph> owner, const OptTarget& t, bool follow,
                int64_t threads = 1) {
  Plan plan = plan_graph(*owner, {});
  Chain c{std::move(owner), std::move(plan), {}};
  for (const KernelProgram& p : c.plan.programs)
    c.kernels.push_back(apply_opts(p.ast, default_opts(p.ast, t)));
  if (follow)
    follow_producer_splits(c.plan, t, std::vector<bool>(c.plan.programs.size(), true), c.kernels,
                           threads);
  return c;
}

const ConvParams kOneByOne{{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1};

// ReLU of a 1x1 convolution of x to `co` channels, its weight (zeros: splits do not depend on
// values) named `name`.
Tensor relu_1x1(Graph& g, const Tensor& x, const std::string& name, int64_t co) {
  NDArray w(dtypes::float32, {co, x.dim(1), 1, 1});
  return relu(conv(x, Tensor::weight(g, name, w), nullptr, kOneByOne));
}

// x (16 channels, 112x112) -> 1x1 conv to 96 -> ReLU -> 3x3 depthwise, stride 2, padding 1 ->
// 1x1 conv to 24; each kernel optimized by the heuristics, then (with `follow`) by
// follow_producer_splits.
Chain expansion_then_depthwise(const OptTarget& t, bool follow, int64_t stride) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  g.lowering().winograd = false;
  g.lowering().vector_bytes = t.vector_bytes;
  g.lowering().threads = 2;  // (a package for one thread reads even an unstrided one channels-last)
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 112, 112});
  NDArray wd(dtypes::float32, {96, 1, 3, 3}), w2(dtypes::float32, {24, 96, 1, 1});
  Tensor e = relu_1x1(g, x, "w1", 96);
  Tensor d = conv(e, Tensor::weight(g, "wd", wd), nullptr,
                  {{stride, stride}, {{1, 1}, {1, 1}}, {1, 1}, 96});
  g.add_output("y", conv(d, Tensor::weight(g, "w2", w2), nullptr, kOneByOne).uop());
  return optimized(std::move(owner), t, follow);
}

// x (64 channels, 55x55) -> 1x1 conv to 16 -> ReLU (squeezenet's squeeze layer: 16 output
// channels make 2 tiles, so its tasks split the positions, walked as one loop of 3025) -> 3x3
// conv to 64, padding 1 (Winograd: the map is copied into a padded 58x58 one first) and, beside
// it, a 1x1 conv to 64 (4 KB of weights).
Chain squeeze_then_expand(const OptTarget& t, bool follow) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  g.lowering().vector_bytes = t.vector_bytes;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 64, 55, 55});
  NDArray w3(dtypes::float32, {64, 16, 3, 3});
  for (int64_t i = 0; i < w3.numel(); ++i) w3.set(i, ConstValue::of_float(0.01 * (i % 7)));
  ConvParams three{{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1};
  Tensor s = relu_1x1(g, x, "w1", 16);
  g.add_output("e1", relu_1x1(g, s, "w2", 64).uop());
  g.add_output("e3", relu(conv(s, Tensor::weight(g, "w3", w3), nullptr, three)).uop());
  return optimized(std::move(owner), t, follow);
}

// x (64 channels, 55x55) -> 1x1 conv to 16 -> ReLU (the squeeze layer: its tasks split the
// positions as one loop) -> 1x1 conv to 64 -> ReLU (the expansion: 8 tiles of 8 channels) -> a
// reader of the expansion: another squeeze layer to 16 (`squeeze_again`), which splits the
// positions, or a 1x1 conv to 64, which splits its channels.
Chain expansion_between(const OptTarget& t, bool squeeze_again, bool follow) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  g.lowering().vector_bytes = t.vector_bytes;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 64, 55, 55});
  Tensor e = relu_1x1(g, relu_1x1(g, x, "w1", 16), "w2", 64);
  g.add_output("y", relu_1x1(g, e, "w3", squeeze_again ? 16 : 64).uop());
  return optimized(std::move(owner), t, follow);
}

// Two fire-like pairs in a row, whose layers share programs (identical shapes): squeeze (64 ->
// 16) -> expansion (16 -> 64) -> squeeze -> expansion -> a 1x1 conv to 64, which splits its
// channels. The expansion's first launch is read by a squeeze layer (splitting positions), its
// second by the last layer.
Chain two_expansions(const OptTarget& t, bool follow) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  g.lowering().vector_bytes = t.vector_bytes;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 64, 55, 55});
  auto fire = [&](const Tensor& in, const std::string& n) {
    return relu_1x1(g, relu_1x1(g, in, "s" + n, 16), "e" + n, 64);
  };
  Tensor e = fire(fire(x, "1"), "2");
  g.add_output("y", relu_1x1(g, e, "wl", 64).uop());
  return optimized(std::move(owner), t, follow);
}

// x (16 channels, 112x112) -> 1x1 conv to 96 -> ReLU -> 3x3 max pool, stride 2, padding 1.
Chain expansion_then_max_pool(const OptTarget& t, bool follow) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  g.lowering().vector_bytes = t.vector_bytes;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 112, 112});
  Tensor e = relu_1x1(g, x, "w1", 96);
  g.add_output("y", max_pool(e, {{3, 3}, {2, 2}, {{1, 1}, {1, 1}}, {1, 1}}).uop());
  return optimized(std::move(owner), t, follow);
}

// The stride, in the stored buffer, of the loop a kernel's tasks split (0: one task).
int64_t split_stride(const KernelProgram& p, const OptimizedKernel& k) {
  for (const Opt& o : k.opts)
    if (o.kind == OptKind::Parallel)
      for (const UOp* u : p.ast->toposort())
        if (u->op == Op::RANGE && u->range().id == o.range_id)
          return stride_of(p.ast->src[0]->src[0]->src[1], u);
  return 0;
}

// Per launch, in order: the split stride of its output (in elements), and its task count.
std::vector<std::pair<int64_t, int64_t>> splits(const Chain& c) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Launch& l : c.plan.launches) {
    size_t p = static_cast<size_t>(l.program);
    out.push_back({split_stride(c.plan.programs[p], c.kernels[p]), c.kernels[p].ntasks});
  }
  return out;
}

// x (32 channels, 27x27) -> 3x3 conv to 128, padding 1 -> ReLU (squeezenet1_1's fire4
// expansion): Winograd F(4, 3), whose product (36 points x 56 tiles x 128 channels) the output
// pass reads, summing the points.
Chain winograd_expansion(const OptTarget& t, int64_t threads) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  g.lowering().vector_bytes = t.vector_bytes;
  g.lowering().threads = threads;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 27, 27});
  NDArray w(dtypes::float32, {128, 32, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, ConstValue::of_float(0.01 * (i % 5)));
  ConvParams three{{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1};
  g.add_output("y", relu(conv(x, Tensor::weight(g, "w", w), nullptr, three)).uop());
  return optimized(std::move(owner), t, true, threads);
}

// In a package for 2 threads the product splits along its output channels (stride 1, 4 tiles of
// 32), which the output pass keeps, and the pass along them too; for 1 thread the product keeps
// its points (7168 apart) and the pass its tiles.
TEST(SplitAffinity, AWinogradProductSplitsAlongTheChannelsItsOutputPassKeepsAtTwoThreads) {
  for (int64_t threads : {1, 2}) {
    Chain c = winograd_expansion(avx512(), threads);
    std::vector<std::pair<int64_t, int64_t>> s = splits(c);
    size_t product = c.plan.launches.size(), pass = product;
    for (size_t i = 0; i < c.plan.launches.size(); ++i)
      if (c.plan.buffer(c.plan.launches[i].args[0]).numel() == 36 * 56 * 128) product = i;
    ASSERT_LT(product, c.plan.launches.size()) << "no product of 36 x 56 x 128";
    int m = c.plan.launches[product].args[0];
    for (size_t i = product + 1; i < c.plan.launches.size(); ++i) {
      const std::vector<int>& args = c.plan.launches[i].args;
      if (std::find(args.begin() + 1, args.end(), m) != args.end()) pass = i;
    }
    ASSERT_LT(pass, c.plan.launches.size()) << "no reader of the product";
    if (threads == 1) {
      EXPECT_EQ(s[product].first, 56 * 128) << "1 thread: the points";
      EXPECT_NE(s[pass].first, 1) << "1 thread: the pass keeps its own split";
    } else {
      EXPECT_EQ(s[product], std::make_pair(int64_t{1}, int64_t{4})) << "2 threads: the channels";
      EXPECT_EQ(s[pass], std::make_pair(int64_t{1}, int64_t{4})) << "2 threads: the channels";
    }
  }
}

// Where the cores share one L3 on a mesh (a Xeon), a package for 2 threads keeps the product's
// own split, its points, as for 1 thread: lines pass between those cores cheaply, and the
// channel split ran slower there (squeezenet1_1 0.942 of the time without it).
TEST(SplitAffinity, OnAMeshSharedL3AWinogradProductKeepsItsOwnSplit) {
  OptTarget mesh = avx512();
  mesh.mesh_shared_l3 = true;
  Chain c = winograd_expansion(mesh, 2);
  std::vector<std::pair<int64_t, int64_t>> s = splits(c);
  bool found = false;
  for (size_t i = 0; i < c.plan.launches.size(); ++i)
    if (c.plan.buffer(c.plan.launches[i].args[0]).numel() == 36 * 56 * 128) {
      EXPECT_EQ(s[i].first, 56 * 128) << "the points";
      found = true;
    }
  EXPECT_TRUE(found) << "no product of 36 x 56 x 128";
}

// The padded map is 96 x 114 x 114 (rows 114 apart, channels 12996); the (unstrided) depthwise
// layer's output is 96 x 112 x 112 (rows 112 apart, channels 12544).
TEST(SplitAffinity, ADepthwiseLayerAndItsBorderSplitTheRowsTheirProducerSplit) {
  OptTarget t = avx512();
  Chain before = expansion_then_depthwise(t, false, 1),
        after = expansion_then_depthwise(t, true, 1);
  std::vector<std::pair<int64_t, int64_t>> b = splits(before), a = splits(after);
  ASSERT_EQ(b.size(), a.size());
  int padded = after.plan.launches.at(0).args.at(0);
  EXPECT_EQ(a[0].first, 114) << "the expansion (16 -> 96 at 112x112) splits the map's rows";
  int depthwise = 0, fills = 0, split_fills = 0, others = 0;
  for (size_t i = 1; i < a.size(); ++i) {
    const Launch& l = after.plan.launches[i];
    if (l.args[0] == padded) {
      // A border fill: the column one (96 x 112 rows x 2 stores, one task before: too little
      // work) now splits the rows; the top and bottom rows' (2 rows) cannot.
      ++fills;
      EXPECT_EQ(b[i].second, 1) << "launch " << i;
      if (a[i].second > 1) {
        ++split_fills;
        EXPECT_EQ(a[i].first, 114) << "launch " << i;
        EXPECT_GE(a[i].second, 8) << "launch " << i;
      }
    } else if (std::find(l.args.begin() + 1, l.args.end(), padded) != l.args.end()) {
      ++depthwise;  // its channels before, the rows its window reads after
      EXPECT_EQ(b[i].first, 12544) << "launch " << i;
      EXPECT_EQ(a[i].first, 112) << "launch " << i;
      EXPECT_GE(a[i].second, 8) << "launch " << i;
    } else {
      ++others;  // the last 1x1 layer combines all channels of a position: its split is its own
      EXPECT_EQ(a[i], b[i]) << "launch " << i;
    }
  }
  EXPECT_EQ(depthwise, 1);
  EXPECT_EQ(fills, 2);
  EXPECT_EQ(split_fills, 1);
  EXPECT_EQ(others, 1);
}

// A stride-2 depthwise layer reads its padded map channels-last (114 x 114 positions x 96
// channels: rows 114 x 96 apart), which the expansion splits by rows and the column fill
// follows; the depthwise layer, its lanes the channels, splits its own output rows (56 apart),
// those its window reads, by its own heuristics, on either target.
TEST(SplitAffinity, AStridedDepthwiseLayersChannelsLastMapIsSplitByRows) {
  for (const OptTarget& t : {avx512(), avx2()}) {
    Chain after = expansion_then_depthwise(t, true, 2);
    std::vector<std::pair<int64_t, int64_t>> a = splits(after);
    ASSERT_EQ(a.size(), 5u);  // the expansion, two fills, the depthwise layer, the 1x1 layer
    int padded = after.plan.launches.at(0).args.at(0);
    EXPECT_EQ(a[0].first, 114 * 96) << t.vector_bytes;
    int split_fills = 0, depthwise = 0;
    for (size_t i = 1; i < a.size(); ++i) {
      const Launch& l = after.plan.launches[i];
      if (l.args[0] == padded && a[i].second > 1) {
        ++split_fills;
        EXPECT_EQ(a[i].first, 114 * 96) << t.vector_bytes << " launch " << i;
      } else if (std::find(l.args.begin() + 1, l.args.end(), padded) != l.args.end()) {
        ++depthwise;
        EXPECT_EQ(a[i].first, 56) << t.vector_bytes << " launch " << i;
        EXPECT_GE(a[i].second, 8) << t.vector_bytes << " launch " << i;
      }
    }
    EXPECT_EQ(split_fills, 1) << t.vector_bytes;
    EXPECT_EQ(depthwise, 1) << t.vector_bytes;
  }
}

// Where the producer splits channels (the same expansion on AVX2 takes its 96 channels in 12
// tiles of 8), the depthwise layer already splits them too and keeps its opts; the border fills,
// one task each before, split the channels like the expansion.
TEST(SplitAffinity, AProducerSplittingChannelsIsFollowedAlongChannels) {
  OptTarget t = avx2();
  Chain before = expansion_then_depthwise(t, false, 1),
        after = expansion_then_depthwise(t, true, 1);
  std::vector<std::pair<int64_t, int64_t>> b = splits(before), a = splits(after);
  ASSERT_EQ(a[0].first, 12996);
  int padded = after.plan.launches.at(0).args.at(0), fills = 0;
  for (size_t i = 1; i < a.size(); ++i) {
    const Launch& l = after.plan.launches[i];
    size_t p = static_cast<size_t>(l.program);
    if (l.args[0] == padded) {
      ++fills;
      EXPECT_EQ(b[i].second, 1) << "launch " << i;
      EXPECT_EQ(a[i].first, 12996) << "launch " << i;
      EXPECT_GE(a[i].second, 8) << "launch " << i;
    } else {
      EXPECT_EQ(after.kernels[p].opts, before.kernels[p].opts) << "launch " << i;
    }
  }
  EXPECT_EQ(fills, 2);
}

// The squeeze layer splits its positions as one loop (stride 1, 3025 of them); the copy into
// the padded 58x58 map (one task before: too little work) splits that map's rows, the loop that
// spans the same positions. The 1x1 expansion beside it keeps its split (its channels): it runs
// in one parallel group with that copy, whose tasks the runtime lists after its own, so which
// axis it splits does not decide which core wrote what its tasks read.
TEST(SplitAffinity, APaddedCopyFollowsPositionsSplitAsOneLoop) {
  OptTarget t = avx512();
  Chain before = squeeze_then_expand(t, false), after = squeeze_then_expand(t, true);
  std::vector<std::pair<int64_t, int64_t>> b = splits(before), a = splits(after);
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(a[0].first, 1) << "the squeeze layer splits its positions, walked as one loop";
  int squeezed = after.plan.launches[0].args[0], copies = 0, one_by_one = 0;
  for (size_t i = 1; i < a.size(); ++i) {
    const Launch& l = after.plan.launches[i];
    size_t p = static_cast<size_t>(l.program);
    if (std::find(l.args.begin() + 1, l.args.end(), squeezed) == l.args.end()) continue;
    if (is_contraction_kernel(after.plan.programs[p].ast)) {
      ++one_by_one;
      bool shared = std::any_of(after.plan.groups.begin(), after.plan.groups.end(), [&](auto& g) {
        return g.size() > 1 && std::find(g.begin(), g.end(), static_cast<int>(i)) != g.end();
      });
      EXPECT_TRUE(shared) << "launch " << i << " shares its parallel group";
      EXPECT_EQ(a[i].first, 3025) << "launch " << i << ": its output channels";
      EXPECT_EQ(after.kernels[p].opts, before.kernels[p].opts) << "launch " << i;
    } else {
      ++copies;
      EXPECT_EQ(b[i].second, 1) << "launch " << i;
      EXPECT_EQ(a[i].first, 58) << "launch " << i << ": the padded map's rows";
      EXPECT_GE(a[i].second, 8) << "launch " << i;
    }
  }
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(one_by_one, 1);
}

// A max pool after an expansion that splits the rows takes bands of its output rows as tasks
// (its channels stay outside the rows of a band: bands of one row made a thread stride across
// every plane for each row).
TEST(SplitAffinity, AMaxPoolTakesBandsOfTheRowsItsProducerSplit) {
  OptTarget t = avx512();
  Chain before = expansion_then_max_pool(t, false), after = expansion_then_max_pool(t, true);
  std::vector<std::pair<int64_t, int64_t>> b = splits(before), a = splits(after);
  ASSERT_GE(a.size(), 2u);
  size_t last = a.size() - 1;  // the pool, after the expansion and its padded map's borders
  // The pool reads its padded map channels-last: rows of 114 positions x 96 channels.
  EXPECT_EQ(a[0].first, 114 * 96) << "the expansion splits the rows of its padded 114x114 output";
  EXPECT_NE(b[last].first, 56) << "the pool split something else before";
  EXPECT_EQ(a[last].first, 56) << "the pool's output rows after";
  EXPECT_GE(a[last].second, 8);
  const OptimizedKernel& pool =
      after.kernels.at(static_cast<size_t>(after.plan.launches[last].program));
  bool banded = std::any_of(pool.opts.begin(), pool.opts.end(),
                            [](const Opt& o) { return o.kind == OptKind::Tile && o.amount > 1; });
  EXPECT_TRUE(banded) << "opts of the pool: " << pool.opts.size();
}

// A 1x1 layer follows its producer's split when every kernel that reads its output splits
// along the same axis (and each is alone in its parallel group): the expansion between two
// squeeze layers, all three then split the positions, so no thread reads a line the other core
// wrote.
TEST(SplitAffinity, AOneByOneLayerFollowsWhenItsReadersSplitTheSameAxis) {
  for (const OptTarget& t : {avx512(), avx2()}) {
    Chain before = expansion_between(t, true, false), after = expansion_between(t, true, true);
    std::vector<std::pair<int64_t, int64_t>> b = splits(before), a = splits(after);
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a[0].first, 1) << "the squeeze layer splits its positions";
    EXPECT_EQ(b[1].first, 3025) << "the expansion split its channels before";
    EXPECT_EQ(a[1].first, 1) << "and its positions after";
    EXPECT_GE(a[1].second, 8);
    EXPECT_EQ(b[2].first, 1) << "the reader splits the positions by its own heuristics";
    EXPECT_EQ(a[2], b[2]);
  }
}

// When a reader of its output splits along another axis (a 1x1 layer to 64 channels: its
// channels), the expansion keeps its own split: following would move the other core's lines
// from its input to its reader.
TEST(SplitAffinity, AOneByOneLayerKeepsItsSplitWhenAReaderSplitsOtherwise) {
  for (const OptTarget& t : {avx512(), avx2()}) {
    Chain before = expansion_between(t, false, false), after = expansion_between(t, false, true);
    std::vector<std::pair<int64_t, int64_t>> b = splits(before), a = splits(after);
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a[0].first, 1) << "the squeeze layer splits its positions";
    EXPECT_EQ(a[2].first, 3025) << "the reader splits its channels";
    for (size_t p = 0; p < after.kernels.size(); ++p)
      EXPECT_EQ(after.kernels[p].opts, before.kernels[p].opts) << "program " << p;
  }
}

// Identical layers share one program, whose split is one choice for every launch, made at its
// first launch: the expansion whose first launch's reader splits positions follows (positions)
// in both launches, although its second launch's reader split channels when it decided
// (split_affinity.cc: resnet50's residual layers measured faster so). That reader, whose output
// nothing reads, then follows too.
TEST(SplitAffinity, ALayerLaunchedTwiceDecidesByItsFirstLaunchsReaders) {
  OptTarget t = avx512();
  Chain before = two_expansions(t, false), after = two_expansions(t, true);
  std::vector<std::pair<int64_t, int64_t>> b = splits(before), a = splits(after);
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(after.plan.launches[1].program, after.plan.launches[3].program)
      << "the two expansions share a program";
  EXPECT_EQ(a[2].first, 1) << "the second squeeze layer splits its positions";
  EXPECT_EQ(b[4].first, 3025) << "the last layer split its channels by its own heuristics";
  EXPECT_EQ(b[1].first, 3025) << "the expansion split its channels before";
  EXPECT_EQ(a[1].first, 1) << "its positions after, in both launches";
  EXPECT_EQ(a[3].first, 1);
}

TEST(SplitAffinity, ForcedOrTunedKernelsKeepTheirSplit) {
  OptTarget t = avx512();
  Chain c = expansion_then_depthwise(t, false, 1);
  std::vector<OptimizedKernel> kept = c.kernels;
  follow_producer_splits(c.plan, t, std::vector<bool>(c.plan.programs.size(), false), kept);
  for (size_t p = 0; p < kept.size(); ++p) EXPECT_EQ(kept[p].opts, c.kernels[p].opts) << p;
}

}  // namespace
}  // namespace kiln
