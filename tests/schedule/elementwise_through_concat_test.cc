// elementwise_through_concat: batch norm and ReLU over a concatenation (a DenseNet layer's input)
// are done in the concatenation's parts, each stored into its region with plain loads, and give
// the same values; a global average pool over them reads the concatenation stored once.
#include "compiler/schedule/elementwise_through_concat.h"

#include <gtest/gtest.h>

#include "compiler/schedule/const_fold.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

NDArray filled(const Shape& s, double step, double base = 0.0) {
  NDArray a(dtypes::float32, s);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, ConstValue::of_float(base + step * static_cast<double>(i % 7 - 3)));
  return a;
}

Tensor conv1x1(const Tensor& x, Graph& g, const std::string& name, int64_t out) {
  Tensor w = Tensor::weight(g, name, filled({out, x.shape()[1], 1, 1}, 0.1));
  return conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1});
}

// A DenseNet layer's input at 14x14: the block's input x and two earlier layers' outputs (the
// first also an output of the graph, as DenseNet's later layers read it again), concatenated
// along the channels (16 + 8 + 8) and batch-normed; then ReLU and `tail`.
template <typename Tail>
void build(Graph& g, int64_t side, Tail tail) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, side, side});
  Tensor y1 = conv1x1(x, g, "w1", 8);
  Tensor y2 = conv1x1(relu(y1), g, "w2", 8);
  g.add_output("y1", y1.uop());
  Tensor cat = concat({x, y1, y2}, 1);
  auto param = [&](const std::string& n, double step, double base) {
    return Tensor::weight(g, n, filled({32}, step, base));
  };
  Tensor bn = batch_norm(cat, param("scale", 0.1, 1.0), param("bias", 0.05, 0.0),
                         param("mean", 0.02, 0.0), param("var", 0.1, 1.0), 1e-5);
  g.add_output("out", tail(g, relu(bn)).uop());
}

Tensor next_layer(Graph& g, const Tensor& t) {
  return conv1x1(t, g, "w3", 8);
}
Tensor global_pool(Graph&, const Tensor& t) {
  return t.mean({2, 3}, true);
}

// Loads through a gate (a padded or concatenated operand) in all of p's programs.
int gated_loads(const Plan& p) {
  int n = 0;
  for (const KernelProgram& prog : p.programs)
    for (const UOp* u : prog.ast->toposort())
      n += u->op == Op::INDEX && u->src[1]->op == Op::WHERE && u->src[1]->src[2]->is_invalid();
  return n;
}

TEST(ElementwiseThroughConcat, BatchNormAndReluMoveIntoTheParts) {
  Graph g;
  build(g, 14, next_layer);
  fold_constants(g);
  EXPECT_EQ(elementwise_through_concat(g), 3);  // the scale, the shift, the ReLU
  EXPECT_EQ(elementwise_through_concat(g), 0);  // nothing is left to move
}

TEST(ElementwiseThroughConcat, ThePartsStoreIntoTheirRegionsWithoutGates) {
  Graph g;
  build(g, 14, next_layer);
  Plan p = testing::plan_and_check(g);  // values: the plan's against the graph's, eagerly
  // The batch-normed concatenation is one buffer, written by a kernel per part, each loading
  // its part plainly; the 1x1 layer reads it whole. Inlined, one kernel loaded all three parts
  // through gates at every element.
  int cat = testing::buffer_shaped(p, {1, 32, 14, 14});
  ASSERT_GE(cat, 0);
  int writers = 0;
  for (const Launch& l : p.launches) writers += l.args[0] == cat;
  EXPECT_EQ(writers, 3);
  EXPECT_EQ(gated_loads(p), 0);
}

TEST(ElementwiseThroughConcat, AGlobalPoolReadsTheConcatenationStoredOnce) {
  Graph g;
  build(g, 14, global_pool);
  Plan p = testing::plan_and_check(g);
  // One buffer of the whole's shape: rangeify stores a concatenation read in a reduction (each
  // part into its region) rather than each zero-padded part whole, with its border.
  int whole = 0;
  for (const PlanBuffer& b : p.buffers) whole += b.shape == Shape{1, 32, 14, 14};
  EXPECT_EQ(whole, 1);
  EXPECT_EQ(gated_loads(p), 0);
}

// A select over a concatenation of masks (booleans join by OR) between two maps: the select and
// the comparisons under it move into the parts, the maps shrunk to each part's rows; the same
// values, each part's kernel without gates.
TEST(ElementwiseThroughConcat, ASelectOverConcatenatedMasksMovesWithItsOperandsShrunk) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {1, 16, 16, 16});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {1, 24, 16, 16});
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 40, 16, 16});
  Tensor y = Tensor::input(g, "y", dtypes::float32, {1, 40, 16, 16});
  Tensor mask = concat({a.gt(0.0), b.lt(0.5)}, 1);  // (1, 40, 16, 16) bool
  g.add_output("out", mask.where(x.exp(), y).uop());
  {
    Graph copy;  // the count, on a graph of its own (plan_and_check folds and rewrites g)
    Tensor ca = Tensor::input(copy, "a", dtypes::float32, {1, 16, 16, 16});
    Tensor cb = Tensor::input(copy, "b", dtypes::float32, {1, 24, 16, 16});
    Tensor cx = Tensor::input(copy, "x", dtypes::float32, {1, 40, 16, 16});
    Tensor cy = Tensor::input(copy, "y", dtypes::float32, {1, 40, 16, 16});
    copy.add_output("out", concat({ca.gt(0.0), cb.lt(0.5)}, 1).where(cx.exp(), cy).uop());
    fold_constants(copy);
    EXPECT_EQ(elementwise_through_concat(copy), 1);  // the select
  }
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(gated_loads(p), 0);
}

TEST(ElementwiseThroughConcat, SmallOrSharedConcatenationsStay) {
  {
    Graph g;
    build(g, 3, next_layer);  // 32 x 3 x 3: one kernel's gates cost less than a launch per part
    fold_constants(g);
    EXPECT_EQ(elementwise_through_concat(g), 0);
  }
  {
    // A concatenation read twice is stored anyway; the batch norm then reads it plainly.
    Graph g;
    Tensor a = Tensor::input(g, "a", dtypes::float32, {1, 16, 14, 14});
    Tensor b = Tensor::input(g, "b", dtypes::float32, {1, 16, 14, 14});
    Tensor cat = concat({a, b}, 1);
    g.add_output("relu", relu(cat).uop());
    g.add_output("exp", cat.exp().uop());
    fold_constants(g);
    EXPECT_EQ(elementwise_through_concat(g), 0);
  }
}

}  // namespace
}  // namespace kiln
