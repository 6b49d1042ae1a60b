// Integer division and modulo (C truncation; x/0 == 0 and x%0 == 0 by kiln's semantics).
//
// Rules that reason with floor division require the numerator (and the remainder part) to be
// non-negative, where truncation and floor agree; they check it by bounds.
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

// Splits x = Q*c + R by coefficients: for a term with a non-negative base the floor quotient of
// its coefficient goes to Q; a term with a possibly-negative base goes to Q only if c divides
// its coefficient. Requires nothing by itself; callers check R's bounds.
struct Split {
  Linear q, r;
  bool ok = true;
};

Split split_by_const(const Linear& l, int64_t c) {
  Split s;
  for (const Term& t : l.terms) {
    int64_t q = 0, r = t.coef;
    if (t.base->vmin() >= 0) {
      q = floor_div(t.coef, c);
      r = t.coef - q * c;
    } else if (t.coef % c == 0) {
      q = t.coef / c;
      r = 0;
    }
    if (q) s.q.terms.push_back({t.base, q});
    if (r) s.r.terms.push_back({t.base, r});
  }
  s.q.k = floor_div(l.k, c);
  s.r.k = l.k - s.q.k * c;
  return s;
}

// Remainder factoring: x = g*A + R with 0 <= R < g, where g divides the divisor c. Then for
// x >= 0: x // c == A // (c/g) and x % c == (A % (c/g))*g + R. Candidates for g are the common
// factors of c with each coefficient, largest first. Returns false if no g works.
bool factor_remainder(const Linear& l, int64_t c, Linear* a_out, Linear* r_out, int64_t* g_out) {
  std::vector<int64_t> cands;
  for (const Term& t : l.terms) {
    int64_t g = gcd64(c, t.coef);
    if (g > 1 && std::find(cands.begin(), cands.end(), g) == cands.end()) cands.push_back(g);
  }
  std::sort(cands.rbegin(), cands.rend());
  for (int64_t g : cands) {
    Linear a, r;
    for (const Term& t : l.terms) {
      if (t.coef % g == 0)
        a.terms.push_back({t.base, t.coef / g});
      else
        r.terms.push_back(t);
    }
    // The constant goes where it keeps R in [0, g): its least part that lifts R's terms to 0
    // or more (a padded row's index, r1*4 + r2 - 5 with r1, r2 >= 1, keeps its -5 in R; the
    // floor split would move -12 to A and leave R in [12, 23]).
    int64_t lo, hi;
    if (!linear_bounds(r, &lo, &hi)) continue;
    r.k = floor_mod(l.k + lo, g) - lo;
    a.k = (l.k - r.k) / g;
    lo += r.k;
    hi += r.k;
    if (lo < 0 || hi >= g) continue;
    *a_out = a;
    *r_out = r;
    *g_out = g;
    return true;
  }
  return false;
}

// The factor list of a product (a MUL chain), for division by a variable.
void factors_of(const UOp* u, std::vector<const UOp*>& out) {
  if (u->op == Op::MUL) {
    factors_of(u->src[0], out);
    factors_of(u->src[1], out);
  } else {
    out.push_back(u);
  }
}

// base / y when y is one of base's factors (nullptr otherwise).
const UOp* divide_factor(const UOp* base, const UOp* y) {
  if (base == y) return base->const_like(int64_t{1});
  std::vector<const UOp*> f;
  factors_of(base, f);
  auto it = std::find(f.begin(), f.end(), y);
  if (it == f.end()) return nullptr;
  f.erase(it);
  const UOp* acc = nullptr;
  for (const UOp* x : f) acc = acc ? acc->mul(x) : x;
  return acc;
}

const UOp* idiv_const(const UOp* u, const UOp* x, int64_t c) {
  Context* ctx = u->ctx();
  DType d = u->dtype;
  if (c == 0) return u->const_like(int64_t{0});
  if (c == 1) return x;
  if (c < 0) return nullptr;
  // The quotient is constant over x's range (truncation is monotone).
  if (x->vmin() / c == x->vmax() / c && !may_wrap(x)) return u->const_like(x->vmin() / c);
  // (y // a) // c -> y // (a*c)
  if (int64_t a, ac;
      x->op == Op::IDIV && int_const(x->src[1], &a) && a > 0 && !__builtin_mul_overflow(a, c, &ac))
    return x->src[0]->idiv(ac);
  if (may_wrap(x)) return nullptr;
  Linear l = linear_of(x, true);
  if (!l.ok) return nullptr;
  // Exact division of every term.
  bool exact = l.k % c == 0;
  for (const Term& t : l.terms) exact = exact && t.coef % c == 0;
  if (exact) {
    Linear q;
    q.k = l.k / c;
    for (const Term& t : l.terms) q.terms.push_back({t.base, t.coef / c});
    return build_sum(ctx, d, q);
  }
  if (x->vmin() < 0) return nullptr;
  // x = Q*c + R with 0 <= R < c  ->  Q
  Split s = split_by_const(l, c);
  int64_t lo, hi;
  if (!linear_bounds(s.r, &lo, &hi) || lo < 0) return nullptr;
  if (hi < c) return build_sum(ctx, d, s.q);
  // x = g*A + R with 0 <= R < g and g | c  ->  A // (c/g)
  Linear a, r;
  int64_t g;
  if (factor_remainder(l, c, &a, &r, &g)) {
    const UOp* as = build_sum(ctx, d, a);
    return g == c ? as : as->idiv(c / g);
  }
  // Q + R//c with R >= 0, when that does not grow the expression.
  if (!s.q.terms.empty() || s.q.k != 0) {
    const UOp* out = build_sum(ctx, d, s.q)->add(build_sum(ctx, d, s.r)->idiv(c));
    if (expr_size(out) <= expr_size(u)) return out;
  }
  return nullptr;
}

const UOp* mod_const(const UOp* u, const UOp* x, int64_t c) {
  Context* ctx = u->ctx();
  DType d = u->dtype;
  if (c == 0 || c == 1 || c == -1) return u->const_like(int64_t{0});
  if (c < 0) return x->mod(-c);  // the sign of a C remainder follows the dividend only
  if (may_wrap(x)) return nullptr;
  // Constant quotient q: x % c == x - q*c.
  if (x->vmin() / c == x->vmax() / c) {
    int64_t q = x->vmin() / c;
    return q == 0 ? x : x->add(-q * c);
  }
  // (y % (c*k)) % c -> y % c
  if (int64_t a; x->op == Op::MOD && int_const(x->src[1], &a) && a > 0 && a % c == 0)
    return x->src[0]->mod(c);
  Linear l = linear_of(x, true);
  if (!l.ok) return nullptr;
  bool exact = l.k % c == 0;
  for (const Term& t : l.terms) exact = exact && t.coef % c == 0;
  if (exact) return u->const_like(int64_t{0});
  if (x->vmin() < 0) return nullptr;
  // Congruence: drop multiples of c from x (both sides non-negative).
  Split s = split_by_const(l, c);
  int64_t lo, hi;
  if (!linear_bounds(s.r, &lo, &hi) || lo < 0) return nullptr;
  const UOp* r = build_sum(ctx, d, s.r);
  if (hi < c) return r;
  // Only when it does not grow the expression (building from the distributed form could).
  if (r != x && expr_size(r) <= expr_size(x)) return r->mod(c);
  // x = g*A + R with 0 <= R < g and g | c  ->  (A % (c/g))*g + R
  Linear a, rem;
  int64_t g;
  if (factor_remainder(l, c, &a, &rem, &g) && g < c) {
    const UOp* out = build_sum(ctx, d, a)->mod(c / g)->mul(g)->add(build_sum(ctx, d, rem));
    if (expr_size(out) <= expr_size(u)) return out;
  }
  return nullptr;
}

// Division by a variable y > 0.
const UOp* divmod_var(const UOp* u, const UOp* x, const UOp* y, bool is_div) {
  if (x == y) {
    if (!is_div) return u->const_like(int64_t{0});
    if (y->vmin() > 0 || y->vmax() < 0) return u->const_like(int64_t{1});
    return nullptr;
  }
  if (y->vmin() <= 0 || may_wrap(x) || may_wrap(y)) return nullptr;
  if (x->vmin() >= 0 && x->vmax() < y->vmin()) return is_div ? u->const_like(int64_t{0}) : x;
  Linear l = linear_of(x, true);
  if (!l.ok) return nullptr;
  Linear q, r;
  r.k = l.k;
  for (const Term& t : l.terms) {
    if (const UOp* b = divide_factor(t.base, y))
      q.terms.push_back({b, t.coef});
    else
      r.terms.push_back(t);
  }
  if (q.terms.empty()) return nullptr;
  const UOp* qs = build_sum(u->ctx(), u->dtype, q);
  if (r.terms.empty() && r.k == 0) return is_div ? qs : u->const_like(int64_t{0});
  int64_t lo, hi;
  if (x->vmin() < 0 || !linear_bounds(r, &lo, &hi) || lo < 0) return nullptr;
  const UOp* rs = build_sum(u->ctx(), u->dtype, r);
  if (hi < y->vmin()) return is_div ? qs : rs;
  return is_div ? nullptr : rs->mod(y);
}

const UOp* divmod(const Match& m) {
  const UOp* u = m.root();
  if (!is_algebraic(u->dtype)) return nullptr;
  const UOp* x = u->src[0];
  const UOp* y = u->src[1];
  bool is_div = u->op == Op::IDIV;
  if (int64_t c; int_const(y, &c)) return is_div ? idiv_const(u, x, c) : mod_const(u, x, c);
  return divmod_var(u, x, y, is_div);
}

}  // namespace

std::vector<Rule> rules_divmod() {
  return {{Pat::op(OpSet{Op::IDIV, Op::MOD}), divmod}};
}

}  // namespace kiln::symbolic
