// The symbolic simplifier: constant folding and algebra for integer (index) and boolean
// expressions, plus the exact float identities. Its quality decides the quality of every
// kernel's index math.
//
// Integer semantics are those of const_eval.h (C truncation for IDIV/MOD, division by zero
// gives 0). Every rule holds under them; rules that need non-negative operands or absence of
// overflow check it by bounds (vmin/vmax). Floating-point expressions are never reassociated:
// only exact identities (x*1, -(-x), x + -0.0, x/1) and constant folding apply to them.
//
// Canonical form of integer expressions: sums are left-associated with terms ordered by
// canonical_less and the constant last; a term is `base` or `base*coef`; products put the
// constant last; commutative comparisons and logic ops put the constant last.
#pragma once

#include "compiler/ir/pattern.h"
#include "compiler/ir/uop.h"

namespace kiln {

// Constant folding of ALU ops and casts whose sources are all constants.
const PatternMatcher& pm_constant_fold();
// The whole simplifier (includes constant folding).
const PatternMatcher& pm_symbolic();

// graph_rewrite(u, pm_symbolic()).
const UOp* simplify(const UOp* u);

// Simplifies `expr` using the facts that `valid` (a conjunction of comparisons) implies about
// its variables: bounds such as r < 5 or !(r < 2) tighten the variables' ranges while `expr` is
// simplified. Returns `expr` simplified (the caller keeps `valid` as the gate).
const UOp* simplify_given(const UOp* expr, const UOp* valid);

// Also drops clauses of `valid` that the other clauses and the variables' bounds already imply.
const UOp* simplify_valid(const UOp* valid);

// The total order used for canonical operand order (deterministic across runs).
bool canonical_less(const UOp* a, const UOp* b);

// Expression size: the number of nodes when the expression is written as a tree (a shared
// subexpression counts once per occurrence). The simplifier never makes this larger.
uint64_t expr_size(const UOp* u);

}  // namespace kiln
