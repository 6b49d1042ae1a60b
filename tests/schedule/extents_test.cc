// The extents analysis (symbolic shapes, docs/symbolic-shapes.md): a graph compiled once with a
// symbolic dim runs at several of its values through the JIT and matches the same graph built
// statically at each value; shapes the rules cannot follow are refused naming the node; inputs
// that break the bounds or disagree are refused naming the input, axis, value and bounds.
#include <gtest/gtest.h>

#include "compiler/jit/jit.h"
#include "compiler/schedule/extents.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

NDArray ramp(const Shape& s, double step, int period = 13) {
  NDArray a(dtypes::float32, s);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, ConstValue::of_float(step * static_cast<double>(i % period) - 0.3));
  return a;
}

// A model built twice: once over a symbolic dim (laid out at `max`), once static at a value.
using Builder = void (*)(Graph& g, int64_t n);

Graph build(Builder b, int64_t n) {
  Graph g;
  b(g, n);
  return g;
}

// Compiles `b` once with its dim symbolic in [lo, hi] on input `input` axis `axis`, runs it at
// every value in `values` and compares with the static graph at that value, evaluated eagerly.
void check_values(Builder b, const std::string& input, size_t axis, int64_t lo, int64_t hi,
                  const std::vector<int64_t>& values) {
  Graph dyn;
  b(dyn, hi);
  dyn.set_axis_symbol(input, axis, dyn.add_symbol("n", lo, hi));
  Plan plan = plan_graph(dyn, {});
  ASSERT_EQ(plan.symbols.size(), 1u);
  // The kernels take the size at run time (a loop to the symbol), not the bound.
  bool reads_symbol = false;
  for (const KernelProgram& p : plan.programs)
    for (const UOp* u : p.ast->toposort()) reads_symbol |= u->op == Op::DEFINE_VAR;
  EXPECT_TRUE(reads_symbol);
  JitProgram jit(plan, TargetInfo::host());
  for (int64_t n : values) {
    Graph st = build(b, n);
    auto inputs = testing::random_inputs(st, static_cast<uint64_t>(n));
    std::map<std::string, NDArray> expected;
    EagerEvaluator ev(st, inputs);
    for (const auto& o : st.outputs()) expected.emplace(o.name, ev.eval(o.node));
    auto got = jit.run(dyn, inputs);
    for (const auto& [name, arr] : expected)
      EXPECT_TRUE(testing::arrays_close(arr, got.at(name), 1e-4)) << name << " at n = " << n;
  }
}

// A batch: elementwise work, a matmul against a weight and a row softmax, per row.
void batch_mlp(Graph& g, int64_t n) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {n, 24});
  Tensor w = Tensor::weight(g, "w", ramp({24, 40}, 0.05));
  Tensor h = relu(matmul(x.mul(x.like(1.5)), w));
  g.add_output("y", softmax(h, 1).uop());
}

TEST(Extents, ABatchRunsAtEveryValueOfItsRange) {
  check_values(batch_mlp, "x", 0, 1, 8, {1, 3, 8});
}

// A reduction along the symbolic axis: the softmax over a sequence reads only its extent (the
// rows past it hold garbage: the JIT fills them with NaN).
void sequence_softmax(Graph& g, int64_t n) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {2, n});
  g.add_output("y", softmax(x, 1).uop());
  g.add_output("s", x.sum({1}, true).uop());
}

TEST(Extents, AReductionOverASymbolicAxisStopsAtItsExtent) {
  check_values(sequence_softmax, "x", 1, 1, 64, {1, 7, 64});
}

// A mean over a symbolic axis divides by the run-time count, not the bound's.
void sequence_mean(Graph& g, int64_t n) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {3, n, 8});
  g.add_output("m", x.mean({1}, false).uop());
  g.add_output("all", x.mean({0, 1, 2}, true).uop());
}

TEST(Extents, AMeanOverASymbolicAxisDividesByItsExtent) {
  check_values(sequence_mean, "x", 1, 1, 33, {1, 5, 33});
}

// A convolution along a symbolic width, padded: past the width the window reads the padding's
// zeros, not the rows a bigger input would have had; then pooling and a transpose.
void width_conv(Graph& g, int64_t n) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 3, 8, n});
  Tensor w = Tensor::weight(g, "w", ramp({16, 3, 3, 3}, 0.02, 7));
  ConvParams p;
  p.padding = {{1, 1}, {1, 1}};
  Tensor y = relu(conv(relu(x), w, nullptr, p));
  PoolParams pp;
  pp.kernel = {2, 2};
  pp.stride = {2, 2};
  Tensor z = max_pool(y, pp);
  g.add_output("y", z.permute({0, 3, 1, 2}).uop());
}

TEST(Extents, AConvolutionAlongASymbolicWidthReadsZerosPastIt) {
  check_values(width_conv, "x", 3, 2, 40, {2, 5, 17, 40});
}

TEST(Extents, ExtentsFollowWindowsAndReshapes) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 3, 8, 40});
  g.set_axis_symbol("x", 3, g.add_symbol("w", 2, 40));
  Tensor w = Tensor::weight(g, "k", ramp({4, 3, 3, 3}, 0.02));
  ConvParams p;
  p.stride = {1, 2};
  Tensor y = conv(x, w, nullptr, p);  // width (w - 3) / 2 + 1
  Tensor f = y.permute({0, 3, 1, 2}).reshape({1, y.shape()[3], 4 * 6});
  g.add_output("f", f.uop());
  Extents e = compute_extents(g);
  ASSERT_TRUE(e.symbolic(f.uop()));
  for (int64_t wv : {3, 4, 17, 40})
    EXPECT_EQ(eval_extent(e.axis(f.uop(), 1), {wv}), (wv - 3) / 2 + 1) << "width " << wv;
  EXPECT_EQ(eval_extent(e.axis(f.uop(), 2), {9}), 24);
}

TEST(Extents, ASymbolicAxisMergedInsideAnotherIsRefusedNamingTheNode) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 16});
  g.set_axis_symbol("x", 1, g.add_symbol("seq", 1, 16));
  g.add_output("y", x.reshape({64}).uop());
  try {
    compute_extents(g);
    FAIL() << "the reshape was accepted";
  } catch (const Error& err) {
    std::string m = err.what();
    EXPECT_NE(m.find("RESHAPE"), std::string::npos) << m;
    EXPECT_NE(m.find("merged inside axis 0"), std::string::npos) << m;
  }
}

// A loop over a symbolic batch whose state starts from zeros of the batch's bound (a recurrence
// with no initial state): the state, its final value and the stacked rows hold the batch's
// extent, which the next value gives.
TEST(Extents, ALoopStateStartingFromZerosHoldsItsNextValuesSymbolicBatch) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {6, 3});
  g.set_axis_symbol("x", 0, g.add_symbol("batch", 1, 6));
  Tensor zeros = Tensor::full(g, {6, 3}, 0.0, dtypes::float32);
  int loop = g.begin_loop("node 'acc'", Tensor::full(g, {}, 4, dtypes::int64).uop(), 4);
  Tensor h(&g, g.add_loop_state(loop, zeros.uop()));
  Tensor next = h.add(x).tanh();
  std::vector<const UOp*> out = g.end_loop(loop, {next.uop()}, {next.uop()});
  g.add_output("h", out[0]);
  g.add_output("rows", out[1]);
  Extents e = compute_extents(g);
  ASSERT_TRUE(e.symbolic(out[0]));
  EXPECT_EQ(eval_extent(e.axis(out[0], 0), {5, 0, 0}), 5);
  EXPECT_EQ(eval_extent(e.axis(out[0], 1), {5, 0, 0}), 3);
  EXPECT_EQ(eval_extent(e.axis(out[1], 0), {5, 0, 0}), 4);  // every iteration: static rows
  EXPECT_EQ(eval_extent(e.axis(out[1], 1), {5, 0, 0}), 5);
}

// A state whose next value holds other rows than its symbolic initial value (the smaller of two
// symbols) changes its shape between iterations: refused naming the loop.
TEST(Extents, ALoopStateWhoseNextValueShrinksIsRefused) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {6, 3});
  Tensor y = Tensor::input(g, "y", dtypes::float32, {6, 3});
  g.set_axis_symbol("x", 0, g.add_symbol("batch", 2, 6));
  g.set_axis_symbol("y", 0, g.add_symbol("other", 2, 6));
  int loop = g.begin_loop("node 'shrinks'", Tensor::full(g, {}, 2, dtypes::int64).uop(), 2);
  Tensor h(&g, g.add_loop_state(loop, x.uop()));
  Tensor next = h.add(y);
  g.add_output("h", g.end_loop(loop, {next.uop()}, {})[0]);
  try {
    compute_extents(g);
    FAIL() << "the state was accepted";
  } catch (const Error& err) {
    std::string m = err.what();
    EXPECT_NE(m.find("node 'shrinks'"), std::string::npos) << m;
    EXPECT_NE(m.find("a state keeps its shape"), std::string::npos) << m;
  }
}

TEST(Extents, ASliceThatStopsShortOfASymbolicEndIsRefused) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 16});
  g.set_axis_symbol("x", 1, g.add_symbol("seq", 1, 16));
  g.add_output("y", x.shrink({{0, 4}, {0, 3}}).uop());
  EXPECT_THROW(compute_extents(g), Error);
}

TEST(Extents, InputsOutOfBoundsOrInconsistentAreRefusedNamingTheInput) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {8, 4});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {8, 4});
  int s = g.add_symbol("batch", 2, 8);
  g.set_axis_symbol("a", 0, s);
  g.set_axis_symbol("b", 0, s);
  g.add_output("y", a.add(b).uop());
  Plan plan = plan_graph(g, {});
  JitProgram jit(plan, TargetInfo::host());
  auto run = [&](int64_t na, int64_t nb, int64_t cols = 4) -> std::string {
    std::map<std::string, NDArray> in;
    in.emplace("a", NDArray(dtypes::float32, {na, cols}));
    in.emplace("b", NDArray(dtypes::float32, {nb, 4}));
    try {
      auto out = jit.run(g, in);
      EXPECT_EQ(out.at("y").shape(), (Shape{na, 4}));
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  };
  EXPECT_EQ(run(3, 3), "");
  EXPECT_NE(run(1, 1).find("input 'a' axis 0 is 1: 'batch' must be in [2, 8]"), std::string::npos)
      << run(1, 1);
  EXPECT_NE(run(9, 9).find("must be in [2, 8]"), std::string::npos);
  EXPECT_NE(run(3, 4).find("input 'b' axis 0 is 4: 'batch' is 3 (input 'a' axis 0)"),
            std::string::npos)
      << run(3, 4);
  EXPECT_NE(run(3, 3, 5).find("input 'a' axis 1 is 5, the model fixes it to 4"), std::string::npos);
}

TEST(Extents, ASymbolMustBeLaidOutAtItsBoundAndHaveARange) {
  Graph g;
  Tensor::input(g, "x", dtypes::float32, {4, 16});
  EXPECT_THROW(g.add_symbol("bad", 9, 3), Error);
  int s = g.add_symbol("seq", 1, 32);
  EXPECT_THROW(g.set_axis_symbol("x", 1, s), Error);  // 16 is not the bound 32
  EXPECT_THROW(g.set_axis_symbol("y", 1, s), Error);
}

}  // namespace
}  // namespace kiln
