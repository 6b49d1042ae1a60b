// Test helpers for planned programs: random inputs, and running a graph both eagerly and
// through plan + reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/driver/compile.h"
#include "compiler/schedule/interpreter.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/tensor.h"

namespace kiln::testing {

inline NDArray random_array(DType d, const Shape& s, std::mt19937_64& rng) {
  NDArray a(d, s);
  std::uniform_real_distribution<double> f(-2.0, 2.0);
  std::uniform_int_distribution<int64_t> i(-5, 5);
  for (int64_t k = 0; k < a.numel(); ++k) {
    if (d.is_float())
      a.set(k, ConstValue::of_float(f(rng)));
    else if (d.is_bool())
      a.set(k, ConstValue::of_int(i(rng) > 0));
    else
      a.set(k, ConstValue::of_int(d.is_unsigned() ? std::abs(i(rng)) : i(rng)));
  }
  return a;
}

inline std::map<std::string, NDArray> random_inputs(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, NDArray> in;
  for (const GraphInput& x : g.inputs())
    in.emplace(x.name, random_array(x.buffer->dtype, x.buffer->buffer().shape, rng));
  return in;
}

// Compares two arrays: exact for integers and bools, for floats within tol * max|expected|.
inline ::testing::AssertionResult arrays_close(const NDArray& expected, const NDArray& actual,
                                               double tol = 1e-5) {
  if (expected.shape() != actual.shape() || expected.dtype() != actual.dtype())
    return ::testing::AssertionFailure()
           << "shape/dtype differ: " << expected.dtype().str() << shape_str(expected.shape())
           << " vs " << actual.dtype().str() << shape_str(actual.shape());
  double maxabs = 0;
  for (int64_t i = 0; i < expected.numel(); ++i)
    if (expected.dtype().is_float() && std::isfinite(expected.get(i).f))
      maxabs = std::max(maxabs, std::fabs(expected.get(i).f));
  for (int64_t i = 0; i < expected.numel(); ++i) {
    ConstValue e = expected.get(i), a = actual.get(i);
    if (expected.dtype().is_float()) {
      if (std::isnan(e.f) && std::isnan(a.f)) continue;
      if (std::isinf(e.f) || std::isinf(a.f)) {
        if (e.f != a.f)
          return ::testing::AssertionFailure() << "element " << i << ": " << e.f << " vs " << a.f;
        continue;
      }
      if (!(std::fabs(e.f - a.f) <= tol * std::max(maxabs, 1e-30)))
        return ::testing::AssertionFailure() << "element " << i << ": expected " << e.f << " got "
                                             << a.f << " (tolerance " << tol * maxabs << ")";
    } else if (e.i != a.i) {
      return ::testing::AssertionFailure()
             << "element " << i << ": expected " << e.i << " got " << a.i;
    }
  }
  return ::testing::AssertionSuccess();
}

// Plans the graph, checks its memory plan and its values (the reference interpreter against the
// eager evaluation, on random inputs from `seed`), and returns the plan.
// The id of the plan's first buffer of shape s, or -1.
inline int buffer_shaped(const Plan& p, const Shape& s) {
  for (const PlanBuffer& b : p.buffers)
    if (b.shape == s) return b.id;
  return -1;
}

inline Plan plan_and_check(Graph& g, uint64_t seed = 7) {
  auto inputs = random_inputs(g, seed);
  std::map<std::string, NDArray> expected;
  {
    EagerEvaluator ev(g, inputs);
    for (const auto& o : g.outputs()) expected.emplace(o.name, ev.eval(o.node));
  }
  Plan p = plan_graph(g, {});
  EXPECT_EQ(check_memory_plan(p), "");
  auto got = interpret(p, g, inputs);
  for (const auto& [name, arr] : expected) EXPECT_TRUE(arrays_close(arr, got.at(name))) << name;
  return p;
}

}  // namespace kiln::testing
