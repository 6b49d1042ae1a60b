// Sums and products of integers in canonical form; min/max by bounds.
#include <algorithm>

#include "compiler/ir/symbolic.h"
#include "compiler/ir/symbolic_internal.h"
#include "compiler/ir/symbolic_linear.h"

namespace kiln::symbolic {

namespace {

bool is_pos_const(const UOp* u, int64_t* c) {
  if (u->op != Op::CONST || u->cval().kind != ConstValue::Kind::Int || u->cval().i <= 0)
    return false;
  *c = u->cval().i;
  return true;
}

// x//c*c*k + x%c*k -> x*k, and (x//c)%d*c*k + x%c*k -> x%(c*d)*k for x >= 0.
// Returns true if a pair was merged (the caller re-runs to find more).
bool merge_divmod_pair(Linear& l) {
  for (size_t i = 0; i < l.terms.size(); ++i) {
    const UOp* mod = l.terms[i].base;
    int64_t c;
    if (mod->op != Op::MOD || !is_pos_const(mod->src[1], &c)) continue;
    const UOp* x = mod->src[0];
    int64_t k = l.terms[i].coef, kc;
    if (__builtin_mul_overflow(k, c, &kc)) continue;
    for (size_t j = 0; j < l.terms.size(); ++j) {
      if (j == i || l.terms[j].coef != kc) continue;
      const UOp* b = l.terms[j].base;
      const UOp* replacement = nullptr;
      if (b->op == Op::IDIV && b->src[0] == x && b->src[1] == mod->src[1]) {
        replacement = x;
      } else if (int64_t d, cd; b->op == Op::MOD && is_pos_const(b->src[1], &d) &&
                                b->src[0]->op == Op::IDIV && b->src[0]->src[0] == x &&
                                b->src[0]->src[1] == mod->src[1] && x->vmin() >= 0 &&
                                !__builtin_mul_overflow(c, d, &cd)) {
        replacement = x->mod(cd);
      }
      if (!replacement) continue;
      Linear rest;
      for (size_t t = 0; t < l.terms.size(); ++t)
        if (t != i && t != j) rest.terms.push_back(l.terms[t]);
      rest.k = l.k;
      // Fold the replacement in (flattening it if it is itself a sum).
      Linear r = linear_of(replacement);
      if (!r.ok) return false;
      for (Term t : r.terms) {
        if (__builtin_mul_overflow(t.coef, k, &t.coef)) return false;
        rest.terms.push_back(t);
      }
      int64_t rk;
      if (__builtin_mul_overflow(r.k, k, &rk) || __builtin_add_overflow(rest.k, rk, &rest.k))
        return false;
      // Re-combine like terms.
      Linear combined;
      for (const Term& t : rest.terms) {
        auto it = std::find_if(combined.terms.begin(), combined.terms.end(),
                               [&](const Term& m) { return m.base == t.base; });
        if (it == combined.terms.end())
          combined.terms.push_back(t);
        else if (__builtin_add_overflow(it->coef, t.coef, &it->coef))
          return false;
      }
      std::erase_if(combined.terms, [](const Term& t) { return t.coef == 0; });
      combined.k = rest.k;
      l = combined;
      return true;
    }
  }
  return false;
}

const UOp* canonical_sum(const Match& m) {
  const UOp* u = m.root();
  if (!is_algebraic(u->dtype)) return nullptr;
  Linear l = linear_of(u);
  if (!l.ok) return nullptr;
  while (merge_divmod_pair(l)) {
  }
  const UOp* out = build_sum(u->ctx(), u->dtype, l);
  return out == u ? nullptr : out;
}

// Flattens a MUL chain: constant factors multiply into `coef`, the rest are collected.
bool collect_factors(const UOp* u, std::vector<const UOp*>& factors, int64_t& coef) {
  if (u->op == Op::MUL)
    return collect_factors(u->src[0], factors, coef) && collect_factors(u->src[1], factors, coef);
  if (u->op == Op::CONST && u->cval().kind == ConstValue::Kind::Int)
    return !__builtin_mul_overflow(coef, u->cval().i, &coef);
  factors.push_back(u);
  return true;
}

const UOp* canonical_product(const Match& m) {
  const UOp* u = m.root();
  if (!is_algebraic(u->dtype)) return nullptr;
  std::vector<const UOp*> factors;
  int64_t coef = 1;
  if (!collect_factors(u, factors, coef)) return nullptr;
  Context* ctx = u->ctx();
  if (coef == 0) return u->const_like(int64_t{0});
  std::stable_sort(factors.begin(), factors.end(), canonical_less);
  // A sum times a constant distributes when that does not grow the expression: every term but
  // at most one already carries a coefficient (or is the constant).
  if (factors.size() == 1 && factors[0]->op == Op::ADD && coef != 1) {
    Linear l = linear_of(factors[0]);
    int bare = 0;
    for (const Term& t : l.terms) bare += t.coef == 1;
    if (l.ok && bare <= 1) {
      Linear scaled;
      scaled.k = l.k;
      bool ok = !__builtin_mul_overflow(scaled.k, coef, &scaled.k);
      for (Term t : l.terms) {
        ok = ok && !__builtin_mul_overflow(t.coef, coef, &t.coef);
        scaled.terms.push_back(t);
      }
      if (ok) return build_sum(ctx, u->dtype, scaled);
    }
  }
  const UOp* acc = nullptr;
  for (const UOp* f : factors) acc = acc ? acc->mul(f) : f;
  if (!acc) return u->const_like(coef);
  if (coef != 1) {
    Linear l;
    l.terms.push_back({acc, coef});
    acc = build_sum(ctx, u->dtype, l);
  }
  return acc == u ? nullptr : acc;
}

// max/min decided by bounds; operands of int MAX/MIN in canonical order.
const UOp* minmax_bounds(const Match& m) {
  const UOp* u = m.root();
  if (!(u->dtype.is_int() || u->dtype.is_bool()) || u->dtype.is_vector()) return nullptr;
  const UOp* a = u->src[0];
  const UOp* b = u->src[1];
  bool is_max = u->op == Op::MAX;
  if (a->vmin() >= b->vmax()) return is_max ? a : b;
  if (b->vmin() >= a->vmax()) return is_max ? b : a;
  return nullptr;
}

// Two-operand commutative integer ops in canonical order (chains of ADD/MUL are handled above).
const UOp* canonical_order(const Match& m) {
  const UOp* u = m.root();
  if (!(u->dtype.is_int() || u->dtype.is_bool()) && !ops::comparison().has(u->op)) return nullptr;
  const UOp* a = u->src[0];
  const UOp* b = u->src[1];
  if (a->dtype.is_float()) return nullptr;
  if (canonical_less(b, a)) return u->ctx()->make(u->op, u->dtype, {b, a}, u->arg);
  return nullptr;
}

}  // namespace

std::vector<Rule> rules_arith() {
  return {
      {Pat::op(Op::ADD), canonical_sum},
      {Pat::op(Op::MUL), canonical_product},
      {Pat::op(OpSet{Op::MAX, Op::MIN}), minmax_bounds},
      {Pat::op(OpSet{Op::MAX, Op::MIN, Op::CMPEQ, Op::CMPNE}), canonical_order},
  };
}

}  // namespace kiln::symbolic
