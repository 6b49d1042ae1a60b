// Simplification under a validity condition: the bounds a gate implies.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/ir/symbolic_internal.h"
#include "compiler/ir/symbolic_linear.h"

namespace kiln {

namespace {

void and_clauses(const UOp* u, std::vector<const UOp*>& out) {
  if (u->op == Op::AND && u->dtype.is_bool()) {
    and_clauses(u->src[0], out);
    and_clauses(u->src[1], out);
  } else {
    out.push_back(u);
  }
}

bool int_const(const UOp* u, int64_t* c) {
  if (u->op != Op::CONST || u->cval().kind != ConstValue::Kind::Int) return false;
  *c = u->cval().i;
  return true;
}

struct Bound {
  int64_t lo, hi;
};

// The bounds each clause `X < c` / `c < X` implies for X (any non-constant integer node).
// Ordered by node id so that the substitution is deterministic.
std::map<std::pair<uint64_t, const UOp*>, Bound> implied_bounds(
    const std::vector<const UOp*>& clauses) {
  std::map<std::pair<uint64_t, const UOp*>, Bound> out;
  for (const UOp* c : clauses) {
    if (c->op != Op::CMPLT || !symbolic::is_algebraic(c->src[0]->dtype)) continue;
    int64_t k;
    const UOp* x;
    int64_t lo, hi;
    if (int_const(c->src[1], &k) && c->src[0]->op != Op::CONST) {
      x = c->src[0];
      lo = x->vmin();
      hi = std::min(x->vmax(), k - 1);
    } else if (int_const(c->src[0], &k) && c->src[1]->op != Op::CONST) {
      x = c->src[1];
      lo = std::max(x->vmin(), k + 1);
      hi = x->vmax();
    } else {
      continue;
    }
    auto key = std::make_pair(x->id(), x);
    auto it = out.find(key);
    if (it == out.end())
      out[key] = {lo, hi};
    else
      it->second = {std::max(it->second.lo, lo), std::min(it->second.hi, hi)};
  }
  return out;
}

}  // namespace

const UOp* simplify_given(const UOp* expr, const UOp* valid) {
  std::vector<const UOp*> clauses;
  and_clauses(valid, clauses);
  auto bounds = implied_bounds(clauses);
  if (bounds.empty()) return simplify(expr);
  Context* ctx = expr->ctx();
  std::unordered_map<const UOp*, const UOp*> to_proxy, from_proxy;
  for (const auto& [key, b] : bounds) {
    const UOp* x = key.second;
    if (b.lo > b.hi) return expr;  // the gate is never true: the expression never matters
    if (b.lo == x->vmin() && b.hi == x->vmax()) continue;
    const UOp* proxy = ctx->variable("valid:" + std::to_string(x->id()), b.lo, b.hi);
    to_proxy[x] = proxy;
    from_proxy[proxy] = x;
  }
  if (to_proxy.empty()) return simplify(expr);
  const UOp* e = simplify(substitute(expr, to_proxy));
  return simplify(substitute(e, from_proxy));
}

// The AND-chain rule (symbolic_logic.cc) already drops implied clauses and folds
// contradictions, using simplify_given on each clause.
const UOp* simplify_valid(const UOp* valid) {
  return simplify(valid);
}

namespace symbolic {

namespace {
const UOp* where_valid(const Match& m) {
  const UOp* u = m.root();
  const UOp* valid = u->src[0];
  const UOp* idx = u->src[1];
  if (valid->dtype.is_vector()) return nullptr;
  const UOp* v2 = simplify_valid(valid);
  const UOp* i2 = simplify_given(idx, v2);
  if (v2 == valid && i2 == idx) return nullptr;
  return u->ctx()->make(Op::WHERE, u->dtype, {v2, i2, u->src[2]});
}
}  // namespace

std::vector<Rule> rules_valid() {
  return {
      {Pat::op(Op::WHERE, {Pat::any(), Pat::any(), Pat::op(Op::CONST).arg(ConstValue::invalid())}),
       where_valid}};
}

}  // namespace symbolic

}  // namespace kiln
