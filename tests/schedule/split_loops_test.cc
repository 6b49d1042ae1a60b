// The split_loops pass: a symbolic loop read only through r / c and r % c becomes two loops (the
// divisions go), a static one too when c is at least 64 (a batch merged with a Winograd
// transform's tiles), other static loops keep their shape, and the split kernel computes what it
// did.
#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/jit/jit.h"
#include "compiler/schedule/split_loops.h"
#include "compiler/target/target_info.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

int64_t index_divisions(const UOp* ast) {
  int64_t n = 0;
  for (const UOp* u : ast->toposort())
    n += (u->op == Op::IDIV || u->op == Op::MOD) && u->dtype.is_index();
  return n;
}

// The ends of the kernel's loops, sorted.
std::vector<std::string> range_ends(const UOp* ast) {
  std::vector<std::string> ends;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE) ends.push_back(render(u->src[0]));
  std::sort(ends.begin(), ends.end());
  return ends;
}

// y[b * c + j, k] = x[b, k, j]: the output loop over b * c rows reads x at r / c and r % c.
void build(Graph& g, int64_t n, int64_t c = 4) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {n, 6, c});
  g.add_output("y", x.permute({0, 2, 1}).reshape({n * c, 6}).uop());
}

TEST(SplitLoops, ASymbolicLoopReadThroughDivisionsBecomesTwoLoops) {
  Graph g;
  build(g, 8);
  g.set_axis_symbol("x", 0, g.add_symbol("batch", 1, 8));
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  const UOp* ast = p.programs[0].ast;
  EXPECT_EQ(index_divisions(ast), 0) << "the split left divisions";
  EXPECT_EQ(range_ends(ast), (std::vector<std::string>{"4", "6", "batch"}));
  JitProgram jit(p, TargetInfo::host());
  for (int64_t n : {1, 3, 8}) {
    Graph st;
    build(st, n);
    auto inputs = testing::random_inputs(st, static_cast<uint64_t>(n));
    EagerEvaluator ev(st, inputs);
    EXPECT_TRUE(testing::arrays_close(ev.eval(st.outputs()[0].node), jit.run(g, inputs).at("y")))
        << "batch " << n;
  }
}

TEST(SplitLoops, StaticLoopsAndLoopsWithoutDivisionsAreLeftAlone) {
  Graph g;
  build(g, 8);
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  // The pass itself: a static kernel comes back as the same node.
  EXPECT_EQ(split_loops(p.programs[0].ast), p.programs[0].ast);
  Graph h;
  Tensor x = Tensor::input(h, "x", dtypes::float32, {8, 6});
  h.set_axis_symbol("x", 0, h.add_symbol("batch", 1, 8));
  h.add_output("y", x.mul(x).uop());
  Plan q = plan_graph(h, {});
  ASSERT_EQ(q.programs.size(), 1u);
  EXPECT_EQ(split_loops(q.programs[0].ast), q.programs[0].ast);
}

// A static batch of 3 merged with 196 tiles (resnet18's Winograd transforms at batch 8 ran
// 1.6x slower than the same layers over a symbolic batch, which this pass split).
TEST(SplitLoops, AStaticLoopReadThroughAWholeTileCountSplits) {
  Graph g;
  build(g, 3, 196);
  Plan p = plan_graph(g, {});
  ASSERT_EQ(p.programs.size(), 1u);
  const UOp* ast = p.programs[0].ast;
  EXPECT_EQ(index_divisions(ast), 0) << "the split left divisions";
  EXPECT_EQ(range_ends(ast), (std::vector<std::string>{"196", "3", "6"}));
  JitProgram jit(p, TargetInfo::host());
  auto inputs = testing::random_inputs(g, 3);
  EagerEvaluator ev(g, inputs);
  EXPECT_TRUE(testing::arrays_close(ev.eval(g.outputs()[0].node), jit.run(g, inputs).at("y")));
}

}  // namespace
}  // namespace kiln
