// graph_rewrite: the one rewrite engine.
//
// Semantics:
//  - Post-order (RewriteMode::BottomUp, the default): the sources of a node are rewritten first;
//    the node, rebuilt on the rewritten sources, is then rewritten by the pass until no rule
//    applies (a fixpoint). A node produced by a rule is itself rewritten completely (its sources
//    first, then it) before it replaces the original.
//  - Pre-order (RewriteMode::TopDown): a node is rewritten to a fixpoint *before* its sources are
//    visited; then its sources are rewritten (pre-order) and the node is rebuilt on them; if the
//    rebuilt node differs, it is rewritten again in the same way.
//  - Memoized: every node is rewritten once per call; shared subgraphs stay shared.
//  - Cycle-safe: a rule whose result leads back to a node still being rewritten (a -> b -> a) is
//    an error naming the pass and the node, never an infinite loop.
//  - Bounded: more than `max_rewrites` successful rule applications in one call is an error
//    naming the pass (a rule set that does not converge).
//  - A rule returning its input node counts as "no change".
#pragma once

#include <cstddef>
#include <unordered_map>

#include "compiler/ir/pattern.h"

namespace kiln {

enum class RewriteMode : uint8_t { BottomUp, TopDown };

struct RewriteOptions {
  RewriteMode mode = RewriteMode::BottomUp;
  // 0 means the default bound: 100000 + 64 x (nodes in the input graph).
  size_t max_rewrites = 0;
};

const UOp* graph_rewrite(const UOp* root, const PatternMatcher& pm, RewriteOptions opts = {});

// Replaces nodes by the mapping (keys are replaced wherever they occur), rebuilding users.
// With `rebuilt`, also every node of root's graph -> what it became (itself if unchanged).
const UOp* substitute(const UOp* root, const std::unordered_map<const UOp*, const UOp*>& map,
                      std::unordered_map<const UOp*, const UOp*>* rebuilt = nullptr);

}  // namespace kiln
