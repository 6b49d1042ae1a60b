// The linearizer: a lowered kernel AST (after the expander) becomes a block-structured list of
// operations that the LLVM emitter walks in order.
//
// Scopes: the kernel body, one loop per Loop/Parallel range nested in range-id order, and for
// each REDUCE a chain of loops over its ranges, nested inside the scope of the REDUCE's innermost
// dependency. Every node is placed in the innermost scope among its dependencies (its open ranges
// and the accumulators it reads), which hoists loop-invariant work out of loops. Within a scope,
// nodes and child loops are ordered topologically, ties broken by the AST's own order.
//
//   LoopBegin(r) ... LoopEnd(r)     a loop over RANGE r
//   AccInit(R)                      before R's loops: the accumulator of REDUCE R = identity
//   AccUpdate(R)                    in R's innermost loop: accumulator = R's body
//   Node(u)                         compute u (for a REDUCE: read its final accumulator)
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/uop.h"

namespace kiln {

struct LinearOp {
  enum class Kind : uint8_t { Node, LoopBegin, LoopEnd, AccInit, AccUpdate };
  Kind kind;
  const UOp* u;
};

std::vector<LinearOp> linearize(const UOp* lowered_ast);

std::string print_linear(const std::vector<LinearOp>& ops);

}  // namespace kiln
