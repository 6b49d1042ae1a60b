// The merge_loops pass: which output loops become one, which stay apart, and that merged
// kernels compute what they computed before (checked by the plan interpreter).
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/schedule/interpreter.h"
#include "compiler/schedule/merge_loops.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

// The sizes of a kernel's output loops, in id order.
std::vector<int64_t> loop_sizes(const UOp* ast) {
  std::vector<std::pair<int64_t, int64_t>> loops;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE && u->range().kind == AxisKind::Loop)
      loops.push_back({u->range().id, u->src[0]->cval().i});
  std::sort(loops.begin(), loops.end());
  std::vector<int64_t> sizes;
  for (auto [id, n] : loops) sizes.push_back(n);
  return sizes;
}

NDArray ramp(const Shape& s) {
  NDArray a(dtypes::float32, s);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, ConstValue::of_float(0.01 * static_cast<double>(i % 17) - 0.05));
  return a;
}

// A 1x1 convolution reads and writes h*13 + w everywhere: its H and W become one loop of 169
// positions (output channels stay a loop of their own: the input is not contiguous across them).
TEST(MergeLoops, AOneByOneConvolutionWalksItsPositionsAsOneLoop) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 13, 13});
  Tensor w = Tensor::weight(g, "w", ramp({24, 8, 1, 1}));
  g.add_output("y", conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
  Plan p = testing::plan_and_check(g);
  ASSERT_EQ(p.programs.size(), 1u);
  EXPECT_EQ(loop_sizes(p.programs[0].ast), (std::vector<int64_t>{24, 169}));
}

// A padded 3x3 window reads row h + kh of a 15-wide padded map while writing a 13-wide row: H
// and W stay two loops.
TEST(MergeLoops, APaddedWindowKeepsItsRowsAndColumns) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 4, 13, 13});
  Tensor w = Tensor::weight(g, "w", ramp({8, 4, 3, 3}));
  g.add_output("y", conv(x, w, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1}).uop());
  Plan p = testing::plan_and_check(g);
  bool kept = false;
  for (const KernelProgram& prog : p.programs)
    kept |= loop_sizes(prog.ast) == std::vector<int64_t>{8, 13, 13};
  EXPECT_TRUE(kept);
}

// A transpose reads across the loops it writes along: nothing merges; an elementwise op over a
// contiguous tensor is one loop.
TEST(MergeLoops, ATransposeKeepsItsLoopsAndElementwiseOpsBecomeOne) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {6, 10});
  g.add_output("t", x.permute({1, 0}).exp().uop());
  g.add_output("e", x.exp().uop());
  Plan p = testing::plan_and_check(g);
  std::vector<std::vector<int64_t>> got;
  for (const KernelProgram& prog : p.programs) got.push_back(loop_sizes(prog.ast));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{{10, 6}, {60}}));
}

// A gate on a coordinate (padding along W) keeps that coordinate's loop, while the loops outside
// it still merge (channels and rows of the padded map: 10 rows of 9); a gate on the outer axis
// alone (a concatenation along channels) does not stop H and W merging.
TEST(MergeLoops, GatesOnAMergedCoordinateKeepTheLoops) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {2, 5, 7});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {3, 5, 7});
  g.add_output("padded", a.pad({{0, 0}, {0, 0}, {1, 1}}, 0.0).exp().uop());
  g.add_output("cat", concat({a, b}, 0).exp().uop());
  Plan p = testing::plan_and_check(g);
  std::vector<std::vector<int64_t>> got;
  for (const KernelProgram& prog : p.programs) got.push_back(loop_sizes(prog.ast));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{{5, 35}, {10, 9}}));
}

// The pass leaves a kernel without anything to merge as the same node.
TEST(MergeLoops, AKernelWithNothingToMergeIsReturnedAsIs) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {6, 10});
  g.add_output("t", x.permute({1, 0}).exp().uop());
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  EXPECT_EQ(merge_loops(p.programs[0].ast), p.programs[0].ast);
}

}  // namespace
}  // namespace kiln
