// Differential test of the middle end: seeded random graphs of primitives and composites are
// evaluated two ways, directly (the eager evaluator) and by the reference interpreter running the
// planned kernels, and must agree: exactly for integers, for floats within 1e-5 of the largest
// reference magnitude. Every memory plan must pass the overlap checker; the mean ratio of arena to
// lower bound is printed and must stay <= 1.25.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "compiler/driver/compile.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/support/error.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"
#include "tests/schedule/random_graph.h"

namespace kiln {
namespace {

TEST(Differential, FiveHundredRandomGraphsAgreeWithEagerEvaluation) {
  constexpr int kGraphs = 500;
  double ratio_sum = 0;
  int ratio_count = 0, kernels = 0;
  for (int seed = 0; seed < kGraphs; ++seed) {
    Graph g;
    testing::RandomGraph rg(g, 1000 + static_cast<uint64_t>(seed));
    try {
      rg.build();
    } catch (const Error& e) {
      FAIL() << "seed " << seed << ": building the graph failed (ops " << rg.trace
             << "): " << e.what();
    }
    auto inputs = testing::random_inputs(g, static_cast<uint64_t>(seed));
    std::map<std::string, NDArray> expected;
    {
      EagerEvaluator ev(g, inputs);
      for (const auto& o : g.outputs()) expected.emplace(o.name, ev.eval(o.node));
    }
    Plan p;
    try {
      p = plan_graph(g, {});
    } catch (const Error& e) {
      FAIL() << "seed " << seed << " (ops " << rg.trace << "): planning failed: " << e.what();
    }
    ASSERT_EQ(check_memory_plan(p), "") << "seed " << seed;
    kernels += static_cast<int>(p.launches.size());
    if (p.memory.lower_bound_bytes > 0) {
      ratio_sum += static_cast<double>(p.memory.arena_bytes) /
                   static_cast<double>(p.memory.lower_bound_bytes);
      ++ratio_count;
    }
    auto got = interpret(p, g, inputs);
    for (const auto& [name, arr] : expected)
      ASSERT_TRUE(testing::arrays_close(arr, got.at(name)))
          << "seed " << seed << " output " << name << " (ops " << rg.trace << ")";
  }
  double mean = ratio_count ? ratio_sum / ratio_count : 1.0;
  std::printf(
      "graphs: %d, kernels: %d, plans with intermediates: %d, mean arena/lower bound: %.4f\n",
      kGraphs, kernels, ratio_count, mean);
  EXPECT_LE(mean, 1.25);
}

// The same graphs planned with one kernel per op must compute the same values: fusion changes
// where values are computed, never what.
TEST(Differential, KernelPerOpPlansAgreeWithFusedPlans) {
  KernelPerOpPolicy per_op;
  double ratio_sum = 0;
  int ratio_count = 0;
  for (int seed = 0; seed < 60; ++seed) {
    Graph g;
    testing::RandomGraph rg(g, 5000 + static_cast<uint64_t>(seed));
    rg.build();
    auto inputs = testing::random_inputs(g, static_cast<uint64_t>(seed));
    Plan fused = plan_graph(g, {});
    CompileOptions o;
    o.policy = &per_op;
    Plan split = plan_graph(g, o);
    EXPECT_GE(split.launches.size(), fused.launches.size()) << "seed " << seed;
    ASSERT_EQ(check_memory_plan(split), "");
    if (split.memory.lower_bound_bytes > 0) {
      ratio_sum += static_cast<double>(split.memory.arena_bytes) /
                   static_cast<double>(split.memory.lower_bound_bytes);
      ++ratio_count;
    }
    auto a = interpret(fused, g, inputs);
    auto b = interpret(split, g, inputs);
    for (const auto& [name, arr] : a)
      ASSERT_TRUE(testing::arrays_close(arr, b.at(name)))
          << "seed " << seed << " (ops " << rg.trace << ")";
  }
  double mean = ratio_count ? ratio_sum / ratio_count : 1.0;
  std::printf("kernel-per-op plans with intermediates: %d, mean arena/lower bound: %.4f\n",
              ratio_count, mean);
  EXPECT_LE(mean, 1.25);
}

}  // namespace
}  // namespace kiln
