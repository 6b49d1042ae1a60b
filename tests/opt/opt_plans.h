// Plans shared by the opt tests.
#pragma once

#include "compiler/driver/compile.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"

namespace kiln::testing {

// The plan of relu(a @ b) for an m x k input a and a k x n input b.
inline Plan matmul_plan(Graph& g, int64_t m, int64_t k, int64_t n) {
  Tensor a = Tensor::input(g, "a", dtypes::float32, {m, k});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {k, n});
  g.add_output("c", relu(matmul(a, b)).uop());
  return plan_graph(g, {});
}

}  // namespace kiln::testing
