// view_strides: the steps a view's axes take through the buffer below it; and matmul's use of
// them, a transposed operand read from a copy in its own layout.
#include "compiler/tensor/view_strides.h"

#include <gtest/gtest.h>

#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

using Strides = std::optional<std::vector<int64_t>>;

TEST(ViewStrides, AComputedTensorIsCOrder) {
  Graph g;
  Tensor x = relu(Tensor::input(g, "x", dtypes::float32, {2, 3, 4}));
  EXPECT_EQ(view_strides(x), Strides({12, 4, 1}));
}

TEST(ViewStrides, PermutesReshapesShrinksAndExpandsFollowTheBuffer) {
  Graph g;
  Tensor x = relu(Tensor::input(g, "x", dtypes::float32, {16, 96}));
  // The keys of an attention head: columns 32..63 as (16 positions, 2 heads, 16), heads first,
  // positions last: positions step over rows of x, the head's features along them.
  Tensor k = x.shrink({{0, 16}, {32, 64}}).reshape({16, 2, 16}).permute({1, 2, 0});
  EXPECT_EQ(view_strides(k), Strides({16, 1, 96}));
  EXPECT_EQ(view_strides(x.transpose()), Strides({1, 96}));
  // A broadcast axis does not move.
  EXPECT_EQ(view_strides(x.reshape({1, 16, 96}).expand({4, 16, 96})), Strides({0, 96, 1}));
}

TEST(ViewStrides, APadOrAFlipHasNoStrides) {
  Graph g;
  Tensor x = relu(Tensor::input(g, "x", dtypes::float32, {4, 4}));
  EXPECT_EQ(view_strides(x.pad({{1, 1}, {0, 0}})), std::nullopt);
  EXPECT_EQ(view_strides(x.flip({0}).transpose()), std::nullopt);
}

// Attention scores q k^T over a projection's output: the keys are read along the scores' last
// axis (N) one row of the projection apart, contiguous along the head's features (K). matmul
// copies them into a (heads, features, positions) buffer first (the ReLU computed into it), one
// kernel more than the scores alone, so the scores' vector lanes load contiguous runs; values
// still agree with the eager evaluation. Where the operand is already contiguous along N (the
// values, attention times v) nothing is copied: one kernel, the ReLUs inlined into it.
TEST(ViewStrides, MatmulReadsAKeyTransposeFromACopy) {
  auto heads = [](const Tensor& x, int64_t from) {
    return x.shrink({{0, 16}, {from, from + 32}}).reshape({16, 2, 16});
  };
  Graph g;
  Tensor x = relu(Tensor::input(g, "x", dtypes::float32, {16, 96}));
  Tensor q = heads(x, 0).permute({1, 0, 2}), k = heads(x, 32).permute({1, 2, 0});
  g.add_output("scores", matmul(q, k).uop());
  Plan p = testing::plan_and_check(g);
  EXPECT_EQ(p.launches.size(), 2u);  // the keys' copy, the scores

  Graph h;
  Tensor y = relu(Tensor::input(h, "x", dtypes::float32, {16, 96}));
  Tensor a = relu(Tensor::input(h, "a", dtypes::float32, {2, 16, 16}));
  h.add_output("out", matmul(a, heads(y, 64).permute({1, 0, 2})).uop());
  EXPECT_EQ(testing::plan_and_check(h).launches.size(), 1u);
}

}  // namespace
}  // namespace kiln
