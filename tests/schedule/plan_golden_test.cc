// Golden plans: the number of kernels, reduce ranges and groups the middle end produces for
// small models whose ideal plan is known.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/printer.h"
#include "compiler/opt/heuristics.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

NDArray filled(DType d, const Shape& s, double v) {
  NDArray a(d, s);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, ConstValue::of_float(v + 0.01 * static_cast<double>(i % 7)));
  return a;
}

int count_ops(const UOp* ast, Op op) {
  int n = 0;
  for (const UOp* u : ast->toposort()) n += u->op == op;
  return n;
}

TEST(PlanGolden, SiluAndMulIsOneKernelWithoutIntermediates) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 4096});
  auto halves = split(x, -1, {2048, 2048});
  g.add_output("y", silu(halves[0]).mul(halves[1]).uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.memory.arena_bytes, 0);
  // Two loads of x, at offsets r*4096 + c and r*4096 + c + 2048, without div/mod.
  const UOp* ast = p.programs[0].ast;
  EXPECT_EQ(count_ops(ast, Op::LOAD), 2);
  EXPECT_EQ(count_ops(ast, Op::IDIV) + count_ops(ast, Op::MOD), 0);
}

// rangeify: positions computed by a reduction (an ArgMax, a count of trues) are written out
// before the gather reads through them; a reduction inside a load's index has no kernel to run in.
TEST(PlanGolden, GatherAtPositionsAReductionComputesRealizesThemFirst) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {6, 3});
  Tensor y = Tensor::input(g, "y", dtypes::int64, {4, 3});  // random values in [-5, 5]
  g.add_output("z", x.gather(y.max({1}), 0).uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 2u);  // the positions, then the gather
}

TEST(PlanGolden, MatmulIsOneKernelWithOneReduceRange) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {4, 4});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {4, 4});
  g.add_output("c", matmul(a, b).uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.launches.size(), 1u);
  const UOp* ast = p.programs[0].ast;
  ASSERT_EQ(count_ops(ast, Op::REDUCE), 1);
  for (const UOp* u : ast->toposort()) {
    if (u->op == Op::REDUCE) {
      EXPECT_EQ(u->src.size(), 2u);  // one reduce range
    }
  }
}

// kernel_flops: a matmul is 2·M·N·K (a multiply and an add per product), an elementwise kernel
// one per element per op, index arithmetic nothing.
TEST(KernelFlops, MatmulIsTwoMNKAndElementwiseOnePerOp) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {3, 5});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {5, 7});
  g.add_output("c", matmul(a, b).uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.programs.size(), 1u);
  EXPECT_EQ(kernel_flops(p.programs[0].ast), 2 * 3 * 5 * 7);

  Graph h;
  Tensor x = Tensor::input(h, "x", dtypes::float32, {6, 10});
  Tensor y = Tensor::input(h, "y", dtypes::float32, {6, 10});
  h.add_output("z", x.mul(y).add(x).uop());  // two ops per element
  Plan q = testing::plan_and_check(h);
  ASSERT_EQ(q.programs.size(), 1u);
  EXPECT_EQ(kernel_flops(q.programs[0].ast), 2 * 60);
}

TEST(PlanGolden, ReshapeExpandSumIsOneKernel) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {6, 4});
  g.add_output("y", x.reshape({2, 3, 4}).unsqueeze(0).expand({5, 2, 3, 4}).sum({0}).uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 1u);
}

TEST(PlanGolden, SoftmaxOverTheLastAxisIsAtMostThreeKernels) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {8, 33});
  g.add_output("y", softmax(x, -1).uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_LE(p.launches.size(), 3u);
  EXPECT_GE(p.launches.size(), 1u);
}

TEST(PlanGolden, ConvFollowedByConstantBatchNormHasNoNormKernel) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 3, 8, 8});
  Tensor w = Tensor::weight(g, "w", filled(dtypes::float32, {4, 3, 3, 3}, 0.1));
  Tensor y = conv(x, w, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1});
  Tensor scale = Tensor::weight(g, "scale", filled(dtypes::float32, {4}, 1.5));
  Tensor bias = Tensor::weight(g, "bias", filled(dtypes::float32, {4}, 0.2));
  Tensor mean = Tensor::weight(g, "mean", filled(dtypes::float32, {4}, 0.3));
  Tensor var = Tensor::weight(g, "var", filled(dtypes::float32, {4}, 2.0));
  g.add_output("y", batch_norm(y, scale, bias, mean, var, 1e-5).uop());
  Plan p = testing::plan_and_check(g);
  // Two kernels: the padded input, written once, and the convolution with the norm fused as its
  // epilogue (folded into constants: no sqrt or division is left).
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_NE(p.launches[0].what.find("PAD"), std::string::npos) << p.launches[0].what;
  for (const KernelProgram& prog : p.programs)
    EXPECT_EQ(count_ops(prog.ast, Op::SQRT) + count_ops(prog.ast, Op::FDIV), 0);
}

// SiLU after a convolution, x * sigmoid(x): the convolution's output has two uses, both
// elementwise at its own index and ending in one node, so it is the convolution's epilogue
// (computed once) instead of a kernel of its own; a use at another index keeps it.
TEST(PlanGolden, SiluIsTheEpilogueOfTheConvolutionBeforeIt) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 6, 6});
  Tensor w = Tensor::weight(g, "w", filled(dtypes::float32, {16, 8, 1, 1}, 0.1));
  Tensor c = conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1});
  g.add_output("y", silu(c).uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(count_ops(p.programs[0].ast, Op::REDUCE), 1);

  Graph h;
  Tensor hx = Tensor::input(h, "x", dtypes::float32, {1, 8, 6, 6});
  Tensor hw = Tensor::weight(h, "w", filled(dtypes::float32, {16, 8, 1, 1}, 0.1));
  Tensor hc = conv(hx, hw, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1});
  h.add_output("y", hc.sigmoid().mul(hc.flip({3})).uop());  // another index: computed once
  Plan q = testing::plan_and_check(h);
  EXPECT_EQ(q.launches.size(), 2u);
}

TEST(PlanGolden, DiamondGivesThreeGroups) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {16, 16});
  Tensor a2 = a.exp().sum({1}, true).contiguous();  // A
  Tensor b = a2.mul(2.0).contiguous();              // B
  Tensor c = a2.add(1.0).contiguous();              // C
  g.add_output("d", b.add(c).uop());                // D
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 4u);
  ASSERT_EQ(p.groups.size(), 3u);
  EXPECT_EQ(p.groups[1].size(), 2u);  // B and C run side by side
}

// A concatenation has no kernel of its own: each part's kernel stores into its region of the
// concatenation's buffer (two convolutions along the channels), and a part that is read
// elsewhere too (the input x, also the second output) is copied there. Without it, one more
// kernel read every part through a gate and wrote the whole again.
TEST(PlanGolden, AConcatenationsPartsStoreIntoItsRegions) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 6, 6});
  Tensor w1 = Tensor::weight(g, "w1", filled(dtypes::float32, {8, 4, 1, 1}, 0.1));
  Tensor w2 = Tensor::weight(g, "w2", filled(dtypes::float32, {3, 4, 3, 3}, 0.2));
  Tensor a = relu(conv(x, w1, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}));
  Tensor b = conv(x, w2, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1});
  Tensor cat = concat({a, x, b}, 1);  // (1, 15, 6, 6)
  Tensor w3 = Tensor::weight(g, "w3", filled(dtypes::float32, {2, 15, 1, 1}, 0.3));
  g.add_output("y", conv(cat, w3, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
  g.add_output("x_again", x.neg().uop());
  Plan p = testing::plan_and_check(g);
  int concat_buffer = -1;
  for (const PlanBuffer& b : p.buffers)
    if (b.shape == Shape{1, 15, 6, 6}) concat_buffer = b.id;
  ASSERT_GE(concat_buffer, 0);
  std::vector<size_t> writer_groups;
  size_t reader_group = 0;
  for (size_t gi = 0; gi < p.groups.size(); ++gi)
    for (int li : p.groups[gi]) {
      const Launch& l = p.launches[static_cast<size_t>(li)];
      if (l.args[0] == concat_buffer) writer_groups.push_back(gi);
      for (size_t a = 1; a < l.args.size(); ++a)
        if (l.args[a] == concat_buffer) reader_group = gi;
    }
  // Three writers (the relu'd convolution, the copy of x, the convolution), one per group, and
  // the reader after them; nothing else computes the concatenation.
  ASSERT_EQ(writer_groups.size(), 3u);
  EXPECT_NE(writer_groups[0], writer_groups[1]);
  EXPECT_NE(writer_groups[1], writer_groups[2]);
  EXPECT_NE(writer_groups[0], writer_groups[2]);
  for (size_t w : writer_groups) EXPECT_LT(w, reader_group);
  // 3 writers, x padded for the 3x3 convolution, the convolution reading the whole, the negation
  EXPECT_EQ(p.launches.size(), 6u);
}

TEST(PlanGolden, ReshapeOfAContiguousBufferLeavesNoDivMod) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {6, 4, 5});
  Tensor y = x.reshape({2, 3, 20}).reshape({3, 2, 4, 5}).exp();
  g.add_output("y", y.reshape({120}).reshape({6, 20}).uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.launches.size(), 1u);
  const UOp* ast = p.programs[0].ast;
  EXPECT_EQ(count_ops(ast, Op::IDIV) + count_ops(ast, Op::MOD), 0) << print_graph(ast);
}

TEST(PlanGolden, PaddingBecomesAGatedLoad) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {5, 7});
  g.add_output("y", x.pad({{1, 2}, {3, 0}}, 0.0).exp().uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.launches.size(), 1u);
  int gated = 0;
  for (const UOp* u : p.programs[0].ast->toposort())
    if (u->op == Op::INDEX && u->src[1]->op == Op::WHERE && u->src[1]->src[2]->is_invalid())
      ++gated;
  EXPECT_EQ(gated, 1);
}

// Under a PAD only the loads whose address can leave their buffer are gated: a per-channel scale
// read at the padded positions is in bounds either way (its value is dropped there), so it stays
// a plain load that does not vary along the padded axes.
TEST(PlanGolden, OnlyLoadsThatCanLeaveTheirBufferAreGatedUnderPadding) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 8, 8});
  Tensor scale = Tensor::input(g, "scale", dtypes::float32, {1, 4, 1, 1});
  g.add_output("y", x.mul(scale).pad({{0, 0}, {0, 0}, {1, 1}, {1, 1}}, 0.0).exp().uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.launches.size(), 1u);
  int gated = 0, plain = 0;
  for (const UOp* u : p.programs[0].ast->toposort())
    if (u->op == Op::LOAD) {
      const UOp* idx = u->src[0]->src[1];
      (idx->op == Op::WHERE && idx->src[2]->is_invalid() ? gated : plain) += 1;
    }
  EXPECT_EQ(gated, 1);  // x
  EXPECT_EQ(plain, 1);  // the scale
}

// An embedding lookup feeding a matmul is written out once: inlined, every load of the
// reduction looked its row up and checked it against the table (a transformer's first
// projection ran at 78 GFLOP/s that way, 162 after the gathered rows were a buffer). Read
// elementwise, the gather stays inlined.
TEST(PlanGolden, GatheredRowsReadInAReductionAreWrittenOnce) {
  Graph g;
  NDArray ids(dtypes::int32, {8});
  for (int64_t i = 0; i < 8; ++i) ids.set(i, ConstValue::of_int((i * 7) % 50));
  Tensor table = Tensor::input(g, "table", dtypes::float32, {50, 16});
  Tensor w = Tensor::input(g, "w", dtypes::float32, {16, 32});
  Tensor rows = table.gather(Tensor::weight(g, "ids", ids), 0);
  g.add_output("y", matmul(rows, w).uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.launches.size(), 2u);
  bool explained = false;
  for (const auto& line : p.fusion_log)
    explained |= line.find("kept (gathered rows read in a reduction)") != std::string::npos;
  EXPECT_TRUE(explained);
  Graph e;
  Tensor t2 = Tensor::input(e, "table", dtypes::float32, {50, 16});
  e.add_output("y", t2.gather(Tensor::weight(e, "ids", ids), 0).exp().uop());
  EXPECT_EQ(testing::plan_and_check(e).launches.size(), 1u);
  // Rows chosen by the reduction itself (a sum over looked-up rows, as a resize's taps are)
  // stay inlined: writing them out would copy every tap.
  Graph bag;
  NDArray ids2(dtypes::int32, {4, 3});
  for (int64_t i = 0; i < 12; ++i) ids2.set(i, ConstValue::of_int((i * 11) % 50));
  Tensor t3 = Tensor::input(bag, "table", dtypes::float32, {50, 16});
  bag.add_output("y", t3.gather(Tensor::weight(bag, "ids", ids2), 0).sum({1}, false).uop());
  EXPECT_EQ(testing::plan_and_check(bag).launches.size(), 1u);
}

// A strided 1x1 convolution (a ResNet block's downsampling) reads a dense copy of the positions
// it uses: one kernel copies every other element of every other row, and the convolution's
// loads read that buffer (C x 14 x 14), not the map (C x 28 x 28), which every task of output
// channels would walk again. Values match the eager result (plan_and_check), also for an odd
// map with a bias and a batch of 2, and a 1-D layer of stride 3.
TEST(PlanGolden, AStridedPointwiseConvolutionReadsADenseCopyOfItsPositions) {
  struct Case {
    Shape x;
    int64_t stride;
    int64_t dense;  // elements of the copy the convolution reads
    bool bias;
  };
  for (const Case& k :
       {Case{{1, 64, 28, 28}, 2, 64 * 14 * 14, false},
        Case{{2, 32, 29, 29}, 2, 2 * 32 * 15 * 15, true}, Case{{1, 32, 10}, 3, 32 * 4, false}}) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, k.x);
    Shape ws = {48, k.x[1]};
    ws.insert(ws.end(), k.x.size() - 2, 1);
    Tensor w = Tensor::weight(g, "w", filled(dtypes::float32, ws, 0.1));
    Tensor b = Tensor::weight(g, "b", filled(dtypes::float32, {48}, 0.2));
    ConvParams p;
    p.stride.assign(k.x.size() - 2, k.stride);
    g.add_output("y", conv(x, w, k.bias ? &b : nullptr, p).uop());
    Plan plan = testing::plan_and_check(g);
    ASSERT_EQ(plan.launches.size(), 2u) << shape_str(k.x);
    int contractions = 0;
    for (const auto& prog : plan.programs) {
      if (count_ops(prog.ast, Op::REDUCE) == 0) continue;
      ++contractions;
      bool reads_copy = false;
      for (const UOp* u : prog.ast->toposort())
        reads_copy |= u->op == Op::DEFINE_GLOBAL && u->dtype.ptr_size == k.dense;
      EXPECT_TRUE(reads_copy) << shape_str(k.x) << ": the convolution reads the whole map";
    }
    EXPECT_EQ(contractions, 1) << shape_str(k.x);
  }
  // Unstrided, the 1x1 layer reads the map itself: one kernel.
  Graph h;
  Tensor xh = Tensor::input(h, "x", dtypes::float32, {1, 64, 14, 14});
  Tensor wh = Tensor::weight(h, "w", filled(dtypes::float32, {128, 64, 1, 1}, 0.1));
  h.add_output("y", conv(xh, wh, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
  EXPECT_EQ(testing::plan_and_check(h).launches.size(), 1u);
}

TEST(PlanGolden, AReductionUnderAnOuterBroadcastIsKeptAndExplained) {
  // y[i, j] = x[i, j] - mean_i(x)[j]: inlining the mean into the (i, j) loops would recompute it
  // for every i, so the policy keeps it (with its epilogue, the division by the count) and says
  // why.
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {16, 8});
  g.add_output("y", x.sub(x.mean({0}, true)).uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 2u);
  bool explained = false;
  for (const auto& line : p.fusion_log)
    explained |= line.find("kept") != std::string::npos &&
                 line.find("recomputed 16 times") != std::string::npos;
  EXPECT_TRUE(explained);
}

TEST(PlanGolden, IdenticalKernelsShareOneProgram) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {8, 8});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {8, 8});
  g.add_output("x", a.exp().uop());
  g.add_output("y", b.exp().uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.programs.size(), 1u);
}

// ---- fusion of convolution networks (the policy's window, epilogue and consumer rules) ----

Tensor conv3x3(Graph& g, const Tensor& x, int64_t co, const std::string& name) {
  Tensor w = Tensor::weight(g, name, filled(dtypes::float32, {co, x.dim(1), 3, 3}, 0.01));
  return conv(x, w, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1});
}

int reductions_in(const Plan& p, const Launch& l) {
  return count_ops(p.programs[static_cast<size_t>(l.program)].ast, Op::REDUCE);
}

TEST(PlanGolden, AConvolutionsEpilogueStaysWithItAndIsNotRecomputedByTheNextOne) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 10, 10});
  Tensor a = relu(conv3x3(g, x, 8, "w1").add(1.0));
  g.add_output("y", conv3x3(g, a, 8, "w2").uop());
  Plan p = testing::plan_and_check(g);
  // pad(x), relu(conv1 + 1), pad(a), conv2: each convolution once, in a kernel of its own.
  ASSERT_EQ(p.launches.size(), 4u);
  int convs = 0;
  for (const Launch& l : p.launches) {
    EXPECT_LE(reductions_in(p, l), 1) << l.what;
    convs += reductions_in(p, l);
  }
  EXPECT_EQ(convs, 2);
  bool epilogue_kept = false;
  for (const auto& line : p.fusion_log)
    epilogue_kept |= line.find("epilogue of a reduction") != std::string::npos;
  EXPECT_TRUE(epilogue_kept);
}

// The launches writing buffer `b`, in launch order.
std::vector<const Launch*> writers_of(const Plan& p, int b) {
  std::vector<const Launch*> w;
  for (const Launch& l : p.launches)
    if (l.args[0] == b) w.push_back(&l);
  return w;
}

using testing::buffer_shaped;

// A convolution's output padded for the next window (a max pool's -inf border, a depthwise
// convolution's zeros) is stored by the convolution's kernel straight into the padded map's
// interior; one kernel per padded axis writes the fill value into its part of the border, and
// nothing copies the map. plan_and_check's interpreter poisons every buffer first, so a border
// left unwritten, or a fill value other than the pad's, fails the comparison with the graph.
// The pool's map and the stride-2 depthwise layer's are channels-last (N, H, W, C: the
// convolution stores whole channel vectors, the window's lanes are channels); the unstrided
// depthwise layer's is NCHW in a package for 2 threads. (Rows 16 wide: whole vectors of the
// default target's 8 lanes; 15 rows, so that the unstrided layer is larger than the 14x14 that
// sums its taps instead, depthwise_taps.h.)
TEST(PlanGolden, APaddedMapsInteriorIsStoredByTheKernelComputingIt) {
  Graph g;
  g.lowering().threads = 2;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 15, 16});
  Tensor w1 = Tensor::weight(g, "w1", filled(dtypes::float32, {8, 4, 1, 1}, -0.1));
  Tensor a = relu(conv(x, w1, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).add(-0.3));
  Tensor pooled = max_pool(a, {{3, 3}, {2, 2}, {{1, 2}, {1, 0}}, {}, false, false});  // (1,8,8,8)
  Tensor wd = Tensor::weight(g, "wd", filled(dtypes::float32, {8, 1, 3, 3}, 0.2));
  Tensor w2 = Tensor::weight(g, "w2", filled(dtypes::float32, {8, 4, 1, 1}, 0.1));
  Tensor b = conv(x, w2, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).mul(0.5);
  Tensor dw = conv(b, wd, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 8});
  Tensor w3 = Tensor::weight(g, "w3", filled(dtypes::float32, {8, 4, 1, 1}, 0.3));
  Tensor c = conv(x, w3, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).add(0.1);
  Tensor dw2 = conv(c, wd, nullptr, {{2, 2}, {{1, 1}, {1, 1}}, {1, 1}, 8});  // (1,8,8,8)
  g.add_output("pooled", pooled.uop());
  g.add_output("dw", dw.uop());
  g.add_output("dw2", dw2.uop());
  Plan p = testing::plan_and_check(g);
  for (const Shape& padded : {Shape{1, 18, 17, 8}, Shape{1, 8, 17, 18}, Shape{1, 17, 18, 8}}) {
    int buf = buffer_shaped(p, padded);
    ASSERT_GE(buf, 0) << shape_str(padded);
    auto w = writers_of(p, buf);
    // The convolution, then the padded rows and the padded columns.
    ASSERT_EQ(w.size(), 3u) << shape_str(padded);
    EXPECT_EQ(reductions_in(p, *w[0]), 1) << w[0]->what;
    for (size_t i = 1; i < 3; ++i) {
      const UOp* ast = p.programs[static_cast<size_t>(w[i]->program)].ast;
      EXPECT_EQ(count_ops(ast, Op::LOAD), 0) << w[i]->what << " stores the fill, reads nothing";
      EXPECT_EQ(w[i]->args.size(), 1u);
    }
  }
  for (const PlanBuffer& b : p.buffers)
    EXPECT_FALSE(b.kind == BufferKind::Intermediate &&
                 (b.shape == Shape({1, 8, 15, 16}) || b.shape == Shape({1, 15, 16, 8})))
        << "no unpadded copy of any map: " << b.name;
  int in_place = 0;
  for (const auto& line : p.fusion_log)
    in_place += line.find("stored into the interior of the padded map") != std::string::npos;
  EXPECT_EQ(in_place, 3);
}

// An unstrided depthwise layer over a convolution reads its padded map channels-last in a package
// for one thread (whole channel vectors, no shuffles: efficientnet_b0 0.967 on AVX-512) and
// NCHW in one for 2 threads, whose rows follow the expansion's split into the next layer
// (channels-last measured 1.004-1.039 there). The values match the graph either way. (A
// 15x16 map: at most 14x14 the layer sums its taps instead, depthwise_taps.h.)
TEST(PlanGolden, AnUnstridedDepthwiseLayersMapIsChannelsLastOnlyForOneThread) {
  for (int64_t threads : {1, 2}) {
    Graph g;
    g.lowering().threads = threads;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 15, 16});
    Tensor w = Tensor::weight(g, "w", filled(dtypes::float32, {8, 4, 1, 1}, 0.1));
    Tensor wd = Tensor::weight(g, "wd", filled(dtypes::float32, {8, 1, 3, 3}, 0.2));
    Tensor e = relu(conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).add(-0.1));
    g.add_output("y", conv(e, wd, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 8}).uop());
    Plan p = testing::plan_and_check(g);
    bool channels_last = buffer_shaped(p, {1, 17, 18, 8}) >= 0;
    bool nchw = buffer_shaped(p, {1, 8, 17, 18}) >= 0;
    EXPECT_EQ(channels_last, threads == 1) << threads << " threads";
    EXPECT_EQ(nchw, threads == 2) << threads << " threads";
  }
}

// The number of launches writing the padded (1, 4, 10, w + 2) map of a relu'd convolution's
// (1, 4, 8, w) output that a max pool reads, with `also_output`: the map is a graph output too.
size_t writers_of_padded_map(int64_t w, int64_t vector_bytes, bool also_output) {
  Graph g;
  g.lowering().vector_bytes = vector_bytes;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 8, w});
  Tensor w1 = Tensor::weight(g, "w1", filled(dtypes::float32, {4, 4, 1, 1}, 0.1));
  Tensor a = relu(conv(x, w1, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}));
  if (also_output) g.add_output("a", a.uop());
  g.add_output("pooled", max_pool(a, {{3, 3}, {1, 1}, {{1, 1}, {1, 1}}, {}, false, false}).uop());
  Plan p = testing::plan_and_check(g);
  int buf = buffer_shaped(p, {1, 4, 10, w + 2});
  EXPECT_GE(buf, 0);
  auto writers = writers_of(p, buf);
  // A single writer is the copy of the map with its border: it reads the map.
  if (writers.size() == 1) {
    EXPECT_EQ(count_ops(p.programs[static_cast<size_t>(writers[0]->program)].ast, Op::LOAD), 1);
  }
  return writers.size();
}

// A map something else reads too (here a graph output) has a buffer of its own, and its padded
// copy is written by a kernel that reads it.
TEST(PlanGolden, APaddedMapReadElsewhereIsCopiedWithItsBorder) {
  EXPECT_EQ(writers_of_padded_map(16, 32, false), 3u);
  EXPECT_EQ(writers_of_padded_map(16, 32, true), 1u);
}

// Rows that are not whole vectors of the target are copied too: stored in place, they would
// split the producer's merged positions into rows padded to whole vectors (efficientnet_b0's
// 28- and 56-wide maps on a 16-lane target).
TEST(PlanGolden, APaddedMapIsStoredInPlaceOnlyWhenItsRowsAreWholeVectors) {
  EXPECT_EQ(writers_of_padded_map(24, 32, false), 3u);  // 3 vectors of 8
  EXPECT_EQ(writers_of_padded_map(24, 64, false), 1u);  // 1.5 vectors of 16
  EXPECT_EQ(writers_of_padded_map(12, 32, false), 1u);
  EXPECT_EQ(writers_of_padded_map(32, 64, false), 3u);
}

TEST(PlanGolden, AResidualBlockOutputReadTwiceIsComputedOnce) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 6, 6});
  Tensor block = relu(conv3x3(g, x, 8, "w1").add(x));  // read by the skip and by conv2
  g.add_output("y", relu(conv3x3(g, block, 8, "w2").add(block)).uop());
  Plan p = testing::plan_and_check(g);
  int convs = 0;
  for (const Launch& l : p.launches) convs += reductions_in(p, l);
  EXPECT_EQ(convs, 2);  // conv1 is not duplicated into the second block's kernel
}

TEST(PlanGolden, AConvolutionFeedingAGlobalPoolKeepsItsOwnKernel) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 7, 7});
  g.add_output("y", relu(conv3x3(g, x, 16, "w")).mean({2, 3}).uop());
  Plan p = testing::plan_and_check(g);
  // The pool walks the convolution's outputs in its reduce loops: inlined, the convolution could
  // not be tiled; kept, it is a kernel over (16, 7, 7) and the pool a small kernel after it.
  bool explained = false;
  for (const auto& line : p.fusion_log)
    explained |= line.find("walked by the consumer's reduce loops") != std::string::npos;
  EXPECT_TRUE(explained);
  for (const Launch& l : p.launches) EXPECT_LE(reductions_in(p, l), 1) << l.what;
}

// A squeeze-excitation block: global pool, 1x1 convolution, SiLU, 1x1 convolution, sigmoid,
// the map scaled per channel. The channel scales are broadcast over the map's positions and
// read none of the map (only the hidden layer and the weights): kept, the scale is elementwise
// work over the map. Inlined, the scale's kernel was tiled as the second convolution's
// matrix-vector product, channels as vector lanes, storing the map 49 floats apart per lane.
// A row normalization's sum, read with the rows it sums, stays inlined.
TEST(PlanGolden, ASqueezeExcitationsChannelScalesAreKeptApartFromTheScaledMap) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 64, 7, 7});
  Tensor w1 = Tensor::weight(g, "w1", filled(dtypes::float32, {8, 64, 1, 1}, 0.1));
  Tensor w2 = Tensor::weight(g, "w2", filled(dtypes::float32, {64, 8, 1, 1}, 0.2));
  ConvParams one{{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1};
  Tensor hidden = silu(conv(x.mean({2, 3}, true), w1, nullptr, one));
  Tensor scale = conv(hidden, w2, nullptr, one).sigmoid();
  g.add_output("y", x.mul(scale).uop());
  Plan p = testing::plan_and_check(g);
  int without_reduction = 0;
  for (const Launch& l : p.launches) {
    EXPECT_LE(reductions_in(p, l), 1) << l.what;
    without_reduction += reductions_in(p, l) == 0;
  }
  EXPECT_EQ(without_reduction, 1);  // the scaled map
  bool explained = false;
  for (const auto& line : p.fusion_log)
    explained |= line.find("SIGMOID") != std::string::npos &&
                 line.find("kept (broadcast into a larger consumer") != std::string::npos;
  EXPECT_TRUE(explained);

  Graph h;
  Tensor rows = Tensor::input(h, "x", dtypes::float32, {4, 64});
  h.add_output("y", rows.div(rows.sum({1}, true)).uop());
  Plan q = testing::plan_and_check(h);
  for (const auto& line : q.fusion_log)
    EXPECT_EQ(line.find("broadcast into"), std::string::npos) << line;
}

// The squeeze-excitation's scale is the last reader of the map it scales and reads it only at
// the element it stores: its output takes the map's memory, declared in its slot (the package's
// Slot.in_place_of). Read at another element (a flipped map), it cannot.
// (The plan points into the graph: the caller keeps it.)
Plan squeeze_excitation_between_convolutions(Graph& g, bool flip) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 8, 8});
  ConvParams one{{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1};
  auto w = [&](const char* name, int64_t out, int64_t in) {
    return Tensor::weight(g, name, filled(dtypes::float32, {out, in, 1, 1}, 0.1));
  };
  Tensor map = relu(conv(x, w("w0", 16, 16), nullptr, one));
  Tensor hidden = silu(conv(map.mean({2, 3}, true), w("w1", 4, 16), nullptr, one));
  Tensor scale = conv(hidden, w("w2", 16, 4), nullptr, one).sigmoid();
  Tensor scaled = (flip ? map.flip({3}) : map).mul(scale);
  g.add_output("y", conv(scaled, w("w3", 8, 16), nullptr, one).uop());
  return testing::plan_and_check(g);
}

TEST(PlanGolden, AnElementwiseKernelWritesInPlaceOfTheInputItLastReads) {
  Graph g;
  Plan p = squeeze_excitation_between_convolutions(g, false);
  EXPECT_EQ(check_memory_plan(p), "");
  std::vector<const MemorySlot*> in_place;
  for (const MemorySlot& s : p.memory.slots)
    if (s.in_place_of >= 0) in_place.push_back(&s);
  ASSERT_EQ(in_place.size(), 1u);
  const MemorySlot* source = nullptr;
  for (const MemorySlot& s : p.memory.slots)
    if (s.buffer == in_place[0]->in_place_of) source = &s;
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->offset, in_place[0]->offset);
  EXPECT_EQ(source->last_group, in_place[0]->first_group);
  EXPECT_EQ(p.buffer(source->buffer).numel(), 16 * 8 * 8);

  // A wrong declaration is caught by the plan's own check, as the runtime's verifier would.
  Plan wrong = p;
  for (MemorySlot& s : wrong.memory.slots)
    if (s.in_place_of >= 0) s.in_place_of = -1;
  EXPECT_NE(check_memory_plan(wrong), "");

  Graph h;
  Plan flipped = squeeze_excitation_between_convolutions(h, true);
  for (const MemorySlot& s : flipped.memory.slots) EXPECT_EQ(s.in_place_of, -1);
}

TEST(PlanGolden, ASlidingWindowDoesNotInlineTheReductionItReads) {
  // Two 3x3 depthwise-like stages: each output of the first is read 9 times by the second.
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 12, 12});
  Tensor w = Tensor::weight(g, "w", filled(dtypes::float32, {4, 1, 3, 3}, 0.1));
  ConvParams dw{
      {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 4};  // unpadded: the window reads the reduction directly
  Tensor y = conv(conv(x, w, nullptr, dw), w, nullptr, dw);
  g.add_output("y", y.uop());
  Plan p = testing::plan_and_check(g);
  for (const Launch& l : p.launches) EXPECT_LE(reductions_in(p, l), 1) << l.what;
  bool revisit = false;
  for (const auto& line : p.fusion_log)
    revisit |= line.find("revisits values") != std::string::npos;
  EXPECT_TRUE(revisit);
}

TEST(PlanGolden, AConstantMatmulOperandIsPackedIntoPanelsAtCompileTime) {
  Graph g;
  NDArray w(dtypes::float32, {32, 64});
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, ConstValue::of_float(static_cast<double>(i)));
  Tensor x = Tensor::input(g, "x", dtypes::float32, {16, 32});
  g.add_output("y", matmul(x, Tensor::weight(g, "w", w)).uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.launches.size(), 1u);
  // The kernel's weight is (64/8, 32, 8): panel j holds columns 8j..8j+7 of every row, in order.
  const PlanBuffer* packed = nullptr;
  for (int a : p.launches[0].args)
    if (p.buffer(a).kind == BufferKind::Weight) packed = &p.buffer(a);
  ASSERT_NE(packed, nullptr);
  const NDArray& data = g.weight(packed->weight_id);
  ASSERT_EQ(data.numel(), 32 * 64);
  for (int64_t j = 0; j < 8; ++j)
    for (int64_t k = 0; k < 32; ++k)
      for (int64_t l = 0; l < 8; ++l)
        ASSERT_EQ(data.get((j * 32 + k) * 8 + l).as_double(),
                  static_cast<double>(k * 64 + j * 8 + l));
  // The index selects the panel with n / 8 and the lane with n % 8: the heuristics still see N as
  // a contiguous lane axis (the last upcast, a multiple of the panel).
  std::vector<Opt> opts = default_opts(p.programs[0].ast, OptTarget{32, 16});
  const Opt* lanes = nullptr;
  for (const Opt& o : opts)
    if (o.kind == OptKind::Upcast) lanes = &o;
  ASSERT_NE(lanes, nullptr);
  EXPECT_EQ(lanes->range_id, 1);
  EXPECT_EQ(lanes->amount % 8, 0);
}

// The packed copy of a constant convolution weight (the one weight argument of the plan's
// only launch).
const NDArray& packed_conv_weight(Graph& g, const Plan& p) {
  EXPECT_EQ(p.launches.size(), 1u);
  const PlanBuffer* packed = nullptr;
  for (int a : p.launches[0].args)
    if (p.buffer(a).kind == BufferKind::Weight) packed = &p.buffer(a);
  EXPECT_NE(packed, nullptr);
  return g.weight(packed->weight_id);
}

NDArray iota_weight(const Shape& shape) {
  NDArray w(dtypes::float32, shape);
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, ConstValue::of_float(static_cast<double>(i)));
  return w;
}

// A 3x3 convolution of 4 channels to `co` with an iota weight, planned in a graph whose panel
// width is `weight_panel`: its packed weight is (stored/lanes, C, kh, kw, lanes), element
// [o/lanes][c][y][x][o%lanes] holding w[o][c][y][x] and zero for the padding channels o >= co.
void expect_panels(int64_t co, int64_t weight_panel, int64_t stored, int64_t lanes) {
  Graph g;
  g.lowering().vector_bytes = 4 * weight_panel;  // panels of `weight_panel` lanes
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 8, 8});
  Tensor w = Tensor::weight(g, "w", iota_weight({co, 4, 3, 3}));
  g.add_output("y", conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
  Plan p = testing::plan_and_check(g);
  const NDArray& data = packed_conv_weight(g, p);
  ASSERT_EQ(data.numel(), stored * 36);
  for (int64_t o = 0; o < stored; ++o)
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t k = 0; k < 9; ++k)
        ASSERT_EQ(data.get(((o / lanes) * 36 + c * 9 + k) * lanes + o % lanes).as_double(),
                  o < co ? static_cast<double>((o * 4 + c) * 9 + k) : 0.0)
            << "channel " << o;
}

TEST(PlanGolden, ConvolutionWeightsArePackedInPanelsOfEightOutputChannels) {
  expect_panels(16, 8, 16, 8);
}

// On a 16-lane target (weight_panel 16) the panels are 16 channels wide, (Co/16, C, kh, kw, 16):
// a zmm of output channels is one load.
TEST(PlanGolden, ConvolutionWeightPanelsAreTheTargetsVectorWide) {
  expect_panels(32, 16, 32, 16);
}

// 24 output channels are 3 panels: a fourth, zero panel lets a 16-lane tile read whole panels
// in bounds (its extra lanes compute channels that are never stored). On a 16-lane target they
// are padded to 32 as well, in two panels of 16.
TEST(PlanGolden, ConvolutionWeightsWithAnOddPanelCountGetAZeroPanel) {
  expect_panels(24, 8, 32, 8);
  expect_panels(24, 16, 32, 16);
}

TEST(PlanGolden, DepthwiseWeightsArePackedWithOutputChannelsInnermost) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 8, 8});
  Tensor w = Tensor::weight(g, "w", iota_weight({16, 1, 3, 3}));
  g.add_output("y", conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 16}).uop());
  Plan p = testing::plan_and_check(g);
  const NDArray& data = packed_conv_weight(g, p);
  // (1, kh, kw, Co): element [y][x][o] is w[o][0][y][x].
  for (int64_t o = 0; o < 16; ++o)
    for (int64_t k = 0; k < 9; ++k)
      ASSERT_EQ(data.get(k * 16 + o).as_double(), static_cast<double>(o * 9 + k));
}

// An elementwise chain deeper than one kernel's expression (an unrolled loop's) is split into
// kernels of at most 256 nodes; one kernel of 20000 fused nodes overflowed the stack.
TEST(PlanGolden, AChainDeeperThanAKernelIsSplitIntoKernels) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 8});
  Tensor c = Tensor::scalar(g, ConstValue::of_float(0.999), dtypes::float32);
  for (int i = 0; i < 10000; ++i) x = x.mul(c).tanh();
  g.add_output("y", x.uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_GE(p.launches.size(), 20000u / 256);
  EXPECT_LE(p.launches.size(), 20000u / 128);
}

}  // namespace
}  // namespace kiln
