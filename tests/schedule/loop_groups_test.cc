// Loop groups (ARCHITECTURE §8, docs/control-flow.md): a loop built once in the graph
// (Graph::begin_loop .. end_loop) is scheduled by rangeify (initial, body and carry kernels),
// parallel_groups (the body's groups, carries last) and memory_plan (states live through the
// loop), and run by the JIT and the reference interpreter for a trip count known only at run
// time; each is checked against the eager evaluator's meaning of the loop.
#include <gtest/gtest.h>

#include "compiler/jit/jit.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

NDArray ramp(const Shape& s, double step) {
  NDArray a(dtypes::float32, s);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, ConstValue::of_float(step * static_cast<double>(i % 7) - 0.2));
  return a;
}

NDArray scalar_i64(int64_t v) {
  NDArray a(dtypes::int64, {});
  a.set(0, ConstValue::of_int(v));
  return a;
}

// y = y0; for i < trips: y = y + x * (i + 1); rows[i] = 2 * y. Outputs y and rows (at most 8).
void cumulative(Graph& g) {
  Tensor trips = Tensor::input(g, "trips", dtypes::int64, {});
  Tensor y0 = Tensor::input(g, "y0", dtypes::float32, {3});
  Tensor x = Tensor::input(g, "x", dtypes::float32, {3});
  int l = g.begin_loop("cumulative", trips.uop(), 8);
  Tensor y(&g, g.add_loop_state(l, y0.uop()));
  Tensor i(&g, g.loop_iteration(l));
  Tensor next = y.add(x.mul(i.add(i.like(1)).cast(dtypes::float32).expand({3})));
  std::vector<const UOp*> out = g.end_loop(l, {next.uop()}, {next.mul(next.like(2)).uop()});
  g.add_output("y", out[0]);
  g.add_output("rows", out[1]);
}

// The eager evaluator's outputs, a stacked one cut to the iterations the loop ran.
std::map<std::string, NDArray> eager(const Graph& g, const std::map<std::string, NDArray>& in) {
  EagerEvaluator ev(g, in);
  std::map<std::string, NDArray> out;
  for (const GraphOutput& o : g.outputs()) {
    NDArray v = ev.eval(o.node);
    for (const GraphLoop& l : g.loops())
      for (const auto& sc : l.scans)
        if (sc.out == o.node) {
          Shape s = v.shape();
          s[0] = ev.symbol(l.count);
          NDArray cut(v.dtype(), s);
          std::memcpy(cut.data(), v.data(), static_cast<size_t>(cut.nbytes()));
          v = std::move(cut);
        }
    out.emplace(o.name, std::move(v));
  }
  return out;
}

void expect_same(const std::map<std::string, NDArray>& want,
                 const std::map<std::string, NDArray>& got, const std::string& what) {
  for (const auto& [name, arr] : want)
    EXPECT_TRUE(testing::arrays_close(arr, got.at(name), 1e-5)) << name << ", " << what;
}

TEST(LoopGroups, ACumulativeSumRunsForEveryTripCount) {
  Graph g;
  cumulative(g);
  Plan plan = plan_graph(g, {});
  ASSERT_EQ(plan.loops.size(), 1u);
  const PlanLoop& loop = plan.loops[0];
  EXPECT_GE(loop.trips, 0);
  EXPECT_EQ(loop.max_trips, 8);
  JitProgram jit(plan, TargetInfo::host());
  std::mt19937_64 rng(5);
  for (int64_t trips : {0, 1, 5, 8}) {
    std::map<std::string, NDArray> in = {{"trips", scalar_i64(trips)},
                                         {"y0", testing::random_array(dtypes::float32, {3}, rng)},
                                         {"x", testing::random_array(dtypes::float32, {3}, rng)}};
    auto want = eager(g, in);
    EXPECT_EQ(want.at("rows").shape(), (Shape{trips, 3}));
    expect_same(want, jit.run(g, in), "JIT, " + std::to_string(trips) + " trips");
    expect_same(want, interpret(plan, g, in), "interpreter, " + std::to_string(trips) + " trips");
  }
}

TEST(LoopGroups, TheBodyRunsInItsOwnGroupsWithTheCarriesLast) {
  Graph g;
  cumulative(g);
  Plan plan = plan_graph(g, {});
  const PlanLoop& loop = plan.loops[0];
  ASSERT_LT(loop.first_group, loop.last_group);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    for (int li : plan.groups[gi]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      bool in_body =
          loop.first_group <= static_cast<int>(gi) && static_cast<int>(gi) <= loop.last_group;
      EXPECT_EQ(in_body, l.loop == 0) << l.what;
      // A carry writes a state after every kernel of the body has read it.
      if (l.carry) {
        EXPECT_EQ(static_cast<int>(gi), loop.last_group) << l.what;
      }
    }
  // The initial value is written before the loop, the final state read after it.
  EXPECT_FALSE(plan.groups[static_cast<size_t>(loop.first_group) - 1].empty());
  EXPECT_LT(static_cast<size_t>(loop.last_group) + 1, plan.groups.size());
}

TEST(LoopGroups, StatesLiveThroughTheWholeLoopAndBodyValuesInsideIt) {
  Graph g;
  cumulative(g);
  Plan plan = plan_graph(g, {});
  EXPECT_EQ(check_memory_plan(plan), "");
  const PlanLoop& loop = plan.loops[0];
  int inside = 0;
  for (const MemorySlot& s : plan.memory.slots) {
    const PlanBuffer& b = plan.buffer(s.buffer);
    bool within = loop.first_group <= s.first_group && s.last_group <= loop.last_group;
    bool through = s.first_group <= loop.first_group && loop.last_group <= s.last_group;
    bool apart = s.last_group < loop.first_group || loop.last_group < s.first_group;
    EXPECT_TRUE(within || through || apart) << b.name;
    if (b.name.rfind("loop0.", 0) == 0) {
      EXPECT_TRUE(through) << b.name;  // states, stacked rows
    }
    inside += within;
  }
  EXPECT_GT(inside, 0);  // the next value lives in the body only
}

TEST(LoopGroups, AReductionThatDoesNotVaryIsComputedBeforeTheLoop) {
  Graph g;
  Tensor trips = Tensor::input(g, "trips", dtypes::int64, {});
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 16});
  Tensor w = Tensor::weight(g, "w", ramp({16, 8}, 0.1));
  int l = g.begin_loop("accumulate", trips.uop(), 6);
  Tensor h(&g, g.add_loop_state(l, Tensor::full(g, {4, 8}, 0.0, dtypes::float32).uop()));
  Tensor next = h.mul(h.like(0.5)).add(matmul(x, w));
  g.add_output("h", g.end_loop(l, {next.uop()}, {})[0]);
  Plan plan = plan_graph(g, {});
  int matmuls_in_body = 0, matmuls = 0;
  for (const Launch& ln : plan.launches) {
    bool reduces = false;
    for (const UOp* u : plan.programs[static_cast<size_t>(ln.program)].ast->toposort())
      reduces |= u->op == Op::REDUCE;
    matmuls += reduces;
    matmuls_in_body += reduces && ln.loop >= 0;
  }
  EXPECT_EQ(matmuls, 1);
  EXPECT_EQ(matmuls_in_body, 0);
  JitProgram jit(plan, TargetInfo::host());
  std::mt19937_64 rng(9);
  std::map<std::string, NDArray> in = {{"trips", scalar_i64(5)},
                                       {"x", testing::random_array(dtypes::float32, {4, 16}, rng)}};
  expect_same(eager(g, in), jit.run(g, in), "hoisted matmul");
}

TEST(LoopGroups, SwappedStatesAreCopiedOutBeforeTheCarries) {
  Graph g;
  Tensor trips = Tensor::input(g, "trips", dtypes::int64, {});
  Tensor a0 = Tensor::input(g, "a", dtypes::float32, {2});
  Tensor b0 = Tensor::input(g, "b", dtypes::float32, {2});
  int l = g.begin_loop("swap", trips.uop(), 9);
  const UOp* a = g.add_loop_state(l, a0.uop());
  const UOp* b = g.add_loop_state(l, b0.uop());
  std::vector<const UOp*> out = g.end_loop(l, {b, a}, {});
  g.add_output("a_out", out[0]);
  g.add_output("b_out", out[1]);
  Plan plan = plan_graph(g, {});
  JitProgram jit(plan, TargetInfo::host());
  std::mt19937_64 rng(2);
  for (int64_t trips : {0, 1, 2, 7}) {
    std::map<std::string, NDArray> in = {{"trips", scalar_i64(trips)},
                                         {"a", testing::random_array(dtypes::float32, {2}, rng)},
                                         {"b", testing::random_array(dtypes::float32, {2}, rng)}};
    auto got = jit.run(g, in);
    const NDArray& want_a = trips % 2 ? in.at("b") : in.at("a");
    EXPECT_TRUE(testing::arrays_close(want_a, got.at("a_out"))) << trips << " trips";
    expect_same(eager(g, in), got, std::to_string(trips) + " swaps");
  }
}

// while (sum(v) < 10) v = v * 2, with no trip count; the doublings stacked.
void doubling(Graph& g) {
  Tensor v0 = Tensor::input(g, "v", dtypes::float32, {2});
  int l = g.begin_loop("doubling", nullptr, 16);
  Tensor v(&g, g.add_loop_state(l, v0.uop()));
  Tensor go = v0.sum().lt(v0.sum().like(10));
  const UOp* cond = g.add_loop_state(l, go.uop(), true);
  Tensor next = v.mul(v.like(2));
  std::vector<const UOp*> out =
      g.end_loop(l, {next.uop(), next.sum().lt(next.sum().like(10)).uop()}, {next.uop()});
  EXPECT_EQ(Tensor(&g, cond).dtype(), dtypes::bool_);
  g.add_output("v_out", out[0]);
  g.add_output("steps", out[2]);
}

TEST(LoopGroups, AConditionComputedInTheBodyStopsTheLoop) {
  Graph g;
  doubling(g);
  Plan plan = plan_graph(g, {});
  ASSERT_EQ(plan.loops.size(), 1u);
  EXPECT_LT(plan.loops[0].trips, 0);
  EXPECT_GE(plan.loops[0].cond, 0);
  JitProgram jit(plan, TargetInfo::host());
  for (float start : {0.3f, 4.0f, 11.0f}) {
    NDArray v(dtypes::float32, {2});
    v.set(0, ConstValue::of_float(start));
    v.set(1, ConstValue::of_float(0.5));
    std::map<std::string, NDArray> in = {{"v", v}};
    auto want = eager(g, in);
    auto got = jit.run(g, in);
    expect_same(want, got, "start " + std::to_string(start));
    expect_same(want, interpret(plan, g, in), "interpreter, start " + std::to_string(start));
  }
}

TEST(LoopGroups, ATripCountAboveTheBoundFailsTheRunNamingTheLoop) {
  Graph g;
  cumulative(g);
  Plan plan = plan_graph(g, {});
  JitProgram jit(plan, TargetInfo::host());
  std::mt19937_64 rng(1);
  std::map<std::string, NDArray> in = {{"trips", scalar_i64(9)},
                                       {"y0", testing::random_array(dtypes::float32, {3}, rng)},
                                       {"x", testing::random_array(dtypes::float32, {3}, rng)}};
  try {
    jit.run(g, in);
    FAIL() << "a trip count of 9 ran in a loop planned for 8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cumulative: the trip count 9 is above the 8 iterations"),
              std::string::npos)
        << e.what();
  }
}

TEST(LoopGroups, ALoopInsideALoopBodyIsRefused) {
  Graph g;
  Tensor trips = Tensor::input(g, "trips", dtypes::int64, {});
  g.begin_loop("outer", trips.uop(), 4);
  try {
    g.begin_loop("inner", trips.uop(), 4);
    FAIL() << "a nested loop group was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inner: a loop group inside another loop's body (outer)"),
              std::string::npos)
        << e.what();
  }
}

TEST(LoopGroups, AStateWhoseShapeChangesIsRefused) {
  Graph g;
  Tensor trips = Tensor::input(g, "trips", dtypes::int64, {});
  Tensor x = Tensor::input(g, "x", dtypes::float32, {2});
  int l = g.begin_loop("grows", trips.uop(), 4);
  Tensor s(&g, g.add_loop_state(l, x.uop()));
  Tensor next = s.pad({{0, 1}});
  try {
    g.end_loop(l, {next.uop()}, {});
    FAIL() << "a state that grows was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loop-carried value 0 is float32(2) before the loop and "
                                         "float32(3) after an iteration"),
              std::string::npos)
        << e.what();
  }
}

// A conditional group (an If's branch): every computing node only its next value reaches runs
// inside it, though none reads a state; a value the rest of the graph needs stays outside.
TEST(LoopGroups, AConditionalGroupsBodyIsWhatOnlyItsBranchReaches) {
  Graph g;
  Tensor c = Tensor::input(g, "c", dtypes::bool_, {});
  Tensor x = Tensor::input(g, "x", dtypes::float32, {2, 8});
  Tensor shared = x.mul(x.like(2)).contiguous();  // read by both branches and by an output
  Tensor branch[2] = {matmul(shared, Tensor::weight(g, "w1", ramp({8, 4}, 0.1))),
                      relu(matmul(shared, Tensor::weight(g, "w2", ramp({8, 4}, -0.2))))};
  Tensor out;
  for (int k = 0; k < 2; ++k) {
    Tensor trips = (k == 0 ? c : c.logical_not()).cast(dtypes::int64);
    int l = g.begin_loop(k == 0 ? "then" : "else", trips.uop(), 1, -1, true);
    g.add_loop_state(l, k == 0 ? Tensor::full(g, {2, 4}, 0, dtypes::float32).uop() : out.uop());
    out = Tensor(&g, g.end_loop(l, {branch[k].uop()}, {})[0]);
  }
  g.add_output("y", out.uop());
  g.add_output("shared", shared.uop());
  Plan plan = plan_graph(g, {});
  ASSERT_EQ(plan.loops.size(), 2u);
  int reductions_in_loops = 0;
  for (const Launch& l : plan.launches) {
    bool reduces = false;
    for (const UOp* u : plan.programs[static_cast<size_t>(l.program)].ast->toposort())
      reduces |= u->op == Op::REDUCE;
    if (reduces) {
      EXPECT_GE(l.loop, 0) << l.what;  // each matmul runs in its branch's group
      ++reductions_in_loops;
    }
  }
  EXPECT_EQ(reductions_in_loops, 2);
  JitProgram jit(plan, TargetInfo::host());
  std::mt19937_64 rng(4);
  for (bool taken : {true, false}) {
    NDArray cv(dtypes::bool_, {});
    cv.set(0, ConstValue::of_int(taken));
    std::map<std::string, NDArray> in = {
        {"c", cv}, {"x", testing::random_array(dtypes::float32, {2, 8}, rng)}};
    auto got = jit.run(g, in);
    EagerEvaluator ev(g, in);
    EXPECT_TRUE(testing::arrays_close(ev.eval(branch[taken ? 0 : 1].uop()), got.at("y")))
        << (taken ? "then" : "else");
    expect_same(eager(g, in), got, taken ? "then" : "else");
  }
}

}  // namespace
}  // namespace kiln
