// Sizes computed from data (ARCHITECTURE §8, Graph::counted): a count the schedule computes is
// read into its symbol after its kernel's group (parallel_groups puts every kernel that reads the
// symbol later), the counted value is planned at its bound and reported at the count; the JIT and
// the interpreter match the eager evaluator, and a count outside its bounds fails the run.
#include <gtest/gtest.h>

#include "compiler/jit/jit.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

// rows = 2 * (0, 1, ..., 7) counted by the number of positive x; total = the sum of those rows
// (a reduction to the count: a kernel that reads the symbol).
void positives(Graph& g) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {8});
  Tensor count = x.gt(x.like(0)).cast(dtypes::int64).sum();
  NDArray iota(dtypes::float32, {8});
  for (int64_t i = 0; i < 8; ++i) iota.set(i, ConstValue::of_float(static_cast<double>(2 * i)));
  Tensor values = Tensor::weight(g, "iota", iota);
  Tensor rows(&g, g.counted("node 'p' (Test)", "p.count", values.uop(), count.uop()));
  g.add_output("rows", rows.uop());
  g.add_output("total", rows.sum().uop());
}

NDArray with_positives(int n) {
  NDArray x(dtypes::float32, {8});
  for (int64_t i = 0; i < 8; ++i) x.set(i, ConstValue::of_float(i < n ? 1.5 : -0.5));
  return x;
}

TEST(ComputedSizes, ACountedValueReportsItsCountAndReadersRunAfterIt) {
  Graph g;
  positives(g);
  Plan plan = plan_graph(g, {});
  ASSERT_EQ(plan.counts.size(), 1u);
  const PlanCount& c = plan.counts[0];
  ASSERT_GE(c.group, 0);
  // Every launch whose kernel reads the count's symbol runs in a later group.
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    for (int li : plan.groups[gi]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      for (const UOp* u : plan.programs[static_cast<size_t>(l.program)].ast->toposort())
        if (u->op == Op::DEFINE_VAR && u->var().slot == c.symbol) {
          EXPECT_GT(static_cast<int>(gi), c.group) << l.what;
        }
    }
  JitProgram jit(plan, TargetInfo::host());
  for (int n : {0, 3, 8}) {
    std::map<std::string, NDArray> in = {{"x", with_positives(n)}};
    auto got = jit.run(g, in);
    ASSERT_EQ(got.at("rows").shape(), (Shape{n})) << n;
    double total = 0;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(got.at("rows").get(i).f, 2.0 * i);
      total += 2.0 * i;
    }
    EXPECT_EQ(got.at("total").get(0).f, total) << n;
    auto interp = interpret(plan, g, in);
    EXPECT_TRUE(testing::arrays_close(got.at("rows"), interp.at("rows"))) << n;
    EXPECT_TRUE(testing::arrays_close(got.at("total"), interp.at("total"))) << n;
    // (The eager evaluator computes whole layouts, not extents: its rows hold the bound's, and
    // it sets the symbol.)
    EagerEvaluator ev(g, in);
    const NDArray& all = ev.eval(g.outputs()[0].node);
    for (int i = 0; i < n; ++i) EXPECT_EQ(all.get(i).f, got.at("rows").get(i).f);
    EXPECT_EQ(ev.symbol(c.symbol), n);
  }
}

TEST(ComputedSizes, ACountOutsideItsBoundsFailsTheRunNamingIt) {
  Graph g;
  Tensor k = Tensor::input(g, "k", dtypes::int64, {});
  NDArray v(dtypes::float32, {4});
  Tensor rows(&g, g.counted("node 'c' (Test)", "c.count", Tensor::weight(g, "v", v).uop(),
                            k.mul(k.like(2)).uop()));
  g.add_output("rows", rows.uop());
  Plan plan = plan_graph(g, {});
  JitProgram jit(plan, TargetInfo::host());
  NDArray two(dtypes::int64, {});
  two.set(0, ConstValue::of_int(2));
  EXPECT_EQ(jit.run(g, {{"k", two}}).at("rows").shape(), (Shape{4}));
  NDArray three(dtypes::int64, {});
  three.set(0, ConstValue::of_int(3));
  try {
    jit.run(g, {{"k", three}});
    FAIL() << "a count of 6 ran in a package planned for 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "node 'c' (Test): the size 'c.count' is 6, outside the [0, 4] the package is "
                  "planned for"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln
