// Plans shared by the opt tests.
#pragma once

#include <memory>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"

namespace kiln::testing {

// A graph, its plan and its programs' optimized kernels (the graph owns the plan's UOps).
struct Planned {
  std::unique_ptr<Graph> graph;
  Plan plan;
  std::vector<OptimizedKernel> kernels;
};

// Every program of `plan` with its tasks split `tasks` ways along its outermost loop (the lowest
// range id), and nothing else: the splits the cross-core tests reason about.
inline std::vector<OptimizedKernel> split_outermost(const Plan& plan, int64_t tasks) {
  std::vector<OptimizedKernel> kernels;
  for (const KernelProgram& k : plan.programs) {
    const UOp* outer = nullptr;
    for (const UOp* u : k.ast->toposort())
      if (u->op == Op::RANGE && (!outer || u->range().id < outer->range().id)) outer = u;
    kernels.push_back(apply_opts(k.ast, {{OptKind::Parallel, outer->range().id, tasks}}));
  }
  return kernels;
}

// The plan of relu(a @ b) for an m x k input a and a k x n input b.
inline Plan matmul_plan(Graph& g, int64_t m, int64_t k, int64_t n) {
  Tensor a = Tensor::input(g, "a", dtypes::float32, {m, k});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {k, n});
  g.add_output("c", relu(matmul(a, b)).uop());
  return plan_graph(g, {});
}

// The plan of a stack of four different expressions of a 4 x 16 input x along a new first axis
// (x * 2, x + 1, -x, x * x), each part padded with -0.0 and the parts summed: one kernel whose
// first output loop r0 only selects the expression by gates (a Winograd input transform's
// points are stacked so).
inline Plan selector_plan(Graph& g) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 16});
  std::vector<Tensor> parts = {x.mul(2.0), x.add(1.0), x.neg(), x.mul(x)};
  Tensor sum;
  for (int64_t i = 0; i < 4; ++i) {
    Tensor part =
        parts[static_cast<size_t>(i)].reshape({1, 4, 16}).pad({{i, 3 - i}, {0, 0}, {0, 0}}, -0.0);
    sum = sum.valid() ? sum.add(part) : part;
  }
  // Stored as one tensor (contiguous): a stack stored as itself is a concatenation, whose parts
  // rangeify computes into their regions by kernels of their own.
  g.add_output("y", sum.contiguous().uop());
  return plan_graph(g, {});
}

}  // namespace kiln::testing
