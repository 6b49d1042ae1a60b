// Post-order walk over the part of a graph that still lacks a cached fact: nodes for which
// `done(n)` holds are neither visited nor descended into. Iterative, so deep graphs are safe.
#pragma once

#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/ir/uop.h"

namespace kiln {

template <typename Done, typename Visit>
void walk_uncached(const UOp* root, Done&& done, Visit&& visit) {
  if (done(root)) return;
  std::unordered_set<const UOp*> seen{root};
  std::vector<std::pair<const UOp*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->src.size()) {
      const UOp* s = n->src[i++];
      if (!done(s) && seen.insert(s).second) stack.push_back({s, 0});
    } else {
      const UOp* v = n;
      stack.pop_back();
      visit(v);
    }
  }
}

}  // namespace kiln
