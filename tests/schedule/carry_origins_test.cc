// Graph::carry_origins, which every rewrite of the graph calls: a rebuilt node keeps the origin of
// the node it replaces, and when hash-consing rebuilds several nodes as one, the choice must not
// follow the rewrite map's hash order (the nodes' addresses), or two builds of kilnc would label
// a package's launches differently.
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/tensor/graph.h"
#include "compiler/tensor/tensor.h"

namespace kiln {
namespace {

TEST(CarryOrigins, SeveralNodesRebuiltAsOneTakeTheEarliestOrigin) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4});
  // Many pairs, so that a choice in hash order gets some of them wrong.
  constexpr int kPairs = 48;
  std::vector<const UOp*> first, second, merged;
  for (int i = 0; i < kPairs; ++i) {
    Tensor a = x.add(static_cast<double>(i) + 0.5);
    g.label_origin({a.uop()}, "first_" + std::to_string(i));
    first.push_back(a.uop());
  }
  for (int i = 0; i < kPairs; ++i) {
    Tensor b = x.mul(static_cast<double>(i) + 2.0);
    g.label_origin({b.uop()}, "second_" + std::to_string(i));
    second.push_back(b.uop());
    merged.push_back(x.add(static_cast<double>(i) + 1000.0).uop());  // no origin of its own
  }
  std::unordered_map<const UOp*, const UOp*> rebuilt;
  for (int i = 0; i < kPairs; ++i) {
    rebuilt[second[static_cast<size_t>(i)]] = merged[static_cast<size_t>(i)];
    rebuilt[first[static_cast<size_t>(i)]] = merged[static_cast<size_t>(i)];
  }
  g.carry_origins(rebuilt);
  for (int i = 0; i < kPairs; ++i) {
    const std::string* o = g.origin(merged[static_cast<size_t>(i)]);
    ASSERT_NE(o, nullptr) << i;
    EXPECT_EQ(*o, "first_" + std::to_string(i));
  }
}

TEST(CarryOrigins, ANodeWithAnOriginKeepsIt) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4});
  Tensor old_node = x.add(1.0);
  g.label_origin({old_node.uop()}, "old");
  Tensor kept = x.mul(3.0);
  g.label_origin({kept.uop()}, "kept");
  g.carry_origins({{old_node.uop(), kept.uop()}});
  ASSERT_NE(g.origin(kept.uop()), nullptr);
  EXPECT_EQ(*g.origin(kept.uop()), "kept");
}

}  // namespace
}  // namespace kiln
