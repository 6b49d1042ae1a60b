// Comparisons, boolean logic and where.
#include <algorithm>

#include "compiler/ir/symbolic.h"
#include "compiler/ir/symbolic_internal.h"
#include "compiler/ir/symbolic_linear.h"

namespace kiln::symbolic {

namespace {

bool int_const(const UOp* u, int64_t* c) {
  if (u->op != Op::CONST || u->cval().kind != ConstValue::Kind::Int) return false;
  *c = u->cval().i;
  return true;
}

bool is_not(const UOp* u) {
  return u->op == Op::XOR && u->dtype.is_bool() && u->src[1]->is_const(1);
}

// Comparisons decided by bounds (integers and bools).
const UOp* cmp_bounds(const Match& m) {
  const UOp* u = m.root();
  const UOp* a = u->src[0];
  const UOp* b = u->src[1];
  if (u->dtype.is_vector() || a->dtype.is_float()) return nullptr;
  if (a == b) return u->ctx()->const_bool(u->op == Op::CMPEQ);
  if (u->op == Op::CMPLT) {
    if (a->vmax() < b->vmin()) return u->ctx()->const_bool(true);
    if (a->vmin() >= b->vmax()) return u->ctx()->const_bool(false);
    return nullptr;
  }
  bool never_equal = a->vmax() < b->vmin() || b->vmax() < a->vmin();
  if (never_equal) return u->ctx()->const_bool(u->op == Op::CMPNE);
  return nullptr;
}

// sum(base*coef) + k  <cmp>  c  ->  sum(base*coef/g)  <cmp>  c'   (for integer a, constant c)
const UOp* cmp_linear(const Match& m) {
  const UOp* u = m.root();
  const UOp* a = u->src[0];
  const UOp* b = u->src[1];
  if (!is_algebraic(a->dtype)) return nullptr;
  Context* ctx = u->ctx();
  int64_t c;
  if (int_const(b, &c)) {
    // (y // d) < c  for d > 0
    if (int64_t d, r; u->op == Op::CMPLT && a->op == Op::IDIV && int_const(a->src[1], &d) &&
                      d > 0 && !may_wrap(a->src[0])) {
      int64_t bound = c > 0 ? c : c - 1;
      if (!__builtin_mul_overflow(bound, d, &r) && (c > 0 || !__builtin_add_overflow(r, 1, &r)))
        return a->src[0]->lt(ctx->const_int(a->dtype, r));
    }
    if (may_wrap(a)) return nullptr;
    Linear l = linear_of(a);
    if (!l.ok || l.terms.empty()) return nullptr;
    int64_t rhs;
    if (__builtin_sub_overflow(c, l.k, &rhs)) return nullptr;
    int64_t g = 0;
    for (const auto& t : l.terms) g = gcd64(g, t.coef);
    if (g < 0) g = -g;
    if (u->op == Op::CMPLT)
      rhs = ceil_div(rhs, g);
    else if (rhs % g != 0)
      return ctx->const_bool(u->op == Op::CMPNE);
    else
      rhs /= g;
    Linear lhs;
    for (const auto& t : l.terms) lhs.terms.push_back({t.base, t.coef / g});
    const UOp* out =
        ctx->make(u->op, u->dtype, {build_sum(ctx, a->dtype, lhs), ctx->const_int(a->dtype, rhs)});
    return out == u ? nullptr : out;
  }
  // c < sum + k  ->  c - k < sum,  with a common factor: floor((c-k)/g) < sum/g
  if (u->op == Op::CMPLT && int_const(a, &c) && !may_wrap(b)) {
    Linear l = linear_of(b);
    if (!l.ok || l.terms.empty()) return nullptr;
    int64_t lhs_c;
    if (__builtin_sub_overflow(c, l.k, &lhs_c)) return nullptr;
    int64_t g = 0;
    for (const auto& t : l.terms) g = gcd64(g, t.coef);
    if (g < 0) g = -g;
    Linear rhs;
    for (const auto& t : l.terms) rhs.terms.push_back({t.base, t.coef / g});
    const UOp* out =
        ctx->const_int(b->dtype, floor_div(lhs_c, g))->lt(build_sum(ctx, b->dtype, rhs));
    return out == u ? nullptr : out;
  }
  return nullptr;
}

// !x for comparisons: !(a < c) -> (c-1) < a, !(c < a) -> a < c+1, !(a != b) -> a == b, ...
const UOp* not_cmp(const Match& m) {
  const UOp* x = m["x"];
  Context* ctx = x->ctx();
  if (x->op == Op::CMPNE) return ctx->make(Op::CMPEQ, x->dtype, x->src);
  if (x->op == Op::CMPEQ) return ctx->make(Op::CMPNE, x->dtype, x->src);
  if (x->op != Op::CMPLT || !is_algebraic(x->src[0]->dtype)) return nullptr;
  const UOp* a = x->src[0];
  const UOp* b = x->src[1];
  int64_t c, r;
  if (int_const(b, &c) && !__builtin_sub_overflow(c, 1, &r))
    return ctx->const_int(b->dtype, r)->lt(a);
  if (int_const(a, &c) && !__builtin_add_overflow(c, 1, &r))
    return b->lt(ctx->const_int(a->dtype, r));
  return nullptr;
}

void flatten(const UOp* u, Op op, std::vector<const UOp*>& out) {
  if (u->op == op && !u->dtype.is_vector()) {
    flatten(u->src[0], op, out);
    flatten(u->src[1], op, out);
  } else {
    out.push_back(u);
  }
}

// AND / OR chains of bools: deduplicated, identities removed, contradictions folded, ordered.
const UOp* bool_chain(const Match& m) {
  const UOp* u = m.root();
  if (!u->dtype.is_bool() || u->dtype.is_vector()) return nullptr;
  Context* ctx = u->ctx();
  const bool is_and = u->op == Op::AND;
  std::vector<const UOp*> xs;
  flatten(u, u->op, xs);
  std::vector<const UOp*> kept;
  for (const UOp* x : xs) {
    if (x->op == Op::CONST) {
      if ((x->cval().i != 0) != is_and) return ctx->const_bool(!is_and);  // absorbing element
      continue;                                                           // identity element
    }
    if (std::find(kept.begin(), kept.end(), x) == kept.end()) kept.push_back(x);
  }
  for (const UOp* x : kept)
    if (is_not(x) && std::find(kept.begin(), kept.end(), x->src[0]) != kept.end())
      return ctx->const_bool(!is_and);  // x & !x, x | !x
  if (kept.empty()) return ctx->const_bool(is_and);
  // A conjunction: a clause that the others imply is dropped; one they contradict makes it false.
  if (is_and && kept.size() >= 2) {
    for (size_t i = 0; i < kept.size();) {
      const UOp* others = nullptr;
      for (size_t j = 0; j < kept.size(); ++j)
        if (j != i) others = others ? others->logical_and(kept[j]) : kept[j];
      const UOp* c = simplify_given(kept[i], others);
      if (c->op == Op::CONST) {
        if (c->cval().i == 0) return ctx->const_bool(false);
        kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
        if (kept.size() < 2) break;
        continue;
      }
      ++i;
    }
  }
  std::stable_sort(kept.begin(), kept.end(), canonical_less);
  const UOp* acc = nullptr;
  for (const UOp* x : kept) acc = acc ? acc->alu(u->op, x) : x;
  return acc == u ? nullptr : acc;
}

// bool XOR with constants: (x ^ c1) ^ c2 -> x ^ (c1 ^ c2); x ^ false -> x.
const UOp* bool_xor(const Match& m) {
  const UOp* u = m.root();
  if (!u->dtype.is_bool() || u->dtype.is_vector()) return nullptr;
  const UOp* a = u->src[0];
  const UOp* b = u->src[1];
  if (b->op != Op::CONST) return nullptr;
  if (b->cval().i == 0) return a;
  if (is_not(a)) return a->src[0];
  return nullptr;
}

const UOp* where_rules(const Match& m) {
  const UOp* u = m.root();
  const UOp* c = u->src[0];
  const UOp* a = u->src[1];
  const UOp* b = u->src[2];
  if (u->dtype.is_vector() || c->dtype.is_vector()) return nullptr;
  Context* ctx = u->ctx();
  if (c->op == Op::CONST) return c->cval().i ? a : b;
  if (a == b) return a;
  if (u->dtype.is_bool() && a->op == Op::CONST && b->op == Op::CONST) {
    if (a->cval().i && !b->cval().i) return c;
    if (!a->cval().i && b->cval().i) return c->logical_not();
  }
  if (is_not(c)) return ctx->make(Op::WHERE, u->dtype, {c->src[0], b, a});
  if (a->op == Op::WHERE && a->src[0] == c)
    return ctx->make(Op::WHERE, u->dtype, {c, a->src[1], b});
  if (b->op == Op::WHERE && b->src[0] == c)
    return ctx->make(Op::WHERE, u->dtype, {c, a, b->src[2]});
  return nullptr;
}

}  // namespace

std::vector<Rule> rules_logic() {
  return {
      {Pat::op(ops::comparison()), cmp_bounds},
      {Pat::op(ops::comparison()), cmp_linear},
      {Pat::op(Op::XOR, {Pat::any("x").dtype(DTypeClass::Bool), Pat::cint(1)}), not_cmp},
      {Pat::op(OpSet{Op::AND, Op::OR}), bool_chain},
      {Pat::op(Op::XOR), bool_xor},
      {Pat::op(Op::WHERE), where_rules},
  };
}

}  // namespace kiln::symbolic
