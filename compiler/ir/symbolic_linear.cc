#include "compiler/ir/symbolic_linear.h"

#include <algorithm>
#include <numeric>

#include "compiler/ir/const_eval.h"
#include "compiler/ir/symbolic.h"

namespace kiln::symbolic {

namespace {

bool mul_ok(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_mul_overflow(a, b, r);
}
bool add_ok(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_add_overflow(a, b, r);
}

void add_to(const UOp* u, int64_t mult, Linear& out, bool distribute) {
  if (!out.ok) return;
  if (u->op == Op::CONST && u->cval().kind == ConstValue::Kind::Int) {
    int64_t v;
    if (!mul_ok(u->cval().i, mult, &v) || !add_ok(out.k, v, &out.k)) out.ok = false;
    return;
  }
  if (u->op == Op::ADD) {
    add_to(u->src[0], mult, out, distribute);
    add_to(u->src[1], mult, out, distribute);
    return;
  }
  if (u->op == Op::MUL && u->src[1]->op == Op::CONST &&
      u->src[1]->cval().kind == ConstValue::Kind::Int) {
    int64_t m;
    if (!mul_ok(mult, u->src[1]->cval().i, &m)) {
      out.ok = false;
      return;
    }
    if (distribute || u->src[0]->op != Op::ADD) {
      add_to(u->src[0], m, out, distribute);
      return;
    }
    out.terms.push_back({u->src[0], m});
    return;
  }
  out.terms.push_back({u, mult});
}

}  // namespace

Linear linear_of(const UOp* u, bool distribute) {
  Linear l;
  add_to(u, 1, l, distribute);
  if (!l.ok) return l;
  // Combine like terms, keeping first-occurrence order.
  std::vector<Term> merged;
  for (const Term& t : l.terms) {
    auto it =
        std::find_if(merged.begin(), merged.end(), [&](const Term& m) { return m.base == t.base; });
    if (it == merged.end())
      merged.push_back(t);
    else if (!add_ok(it->coef, t.coef, &it->coef))
      l.ok = false;
  }
  std::erase_if(merged, [](const Term& t) { return t.coef == 0; });
  l.terms = std::move(merged);
  return l;
}

const UOp* build_sum(Context* ctx, DType d, const Linear& l) {
  std::vector<Term> terms = l.terms;
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& a, const Term& b) { return canonical_less(a.base, b.base); });
  // Narrow types wrap: a coefficient congruent modulo 2^bits gives the same values.
  auto cst = [&](int64_t v) {
    return ctx->const_value(d, normalize_const(d, ConstValue::of_int(v)));
  };
  const UOp* acc = nullptr;
  for (const Term& t : terms) {
    const UOp* term = t.coef == 1 ? t.base : t.base->mul(cst(t.coef));
    acc = acc ? acc->add(term) : term;
  }
  if (!acc) return cst(l.k);
  if (l.k != 0) acc = acc->add(cst(l.k));
  return acc;
}

bool linear_bounds(const Linear& l, int64_t* lo, int64_t* hi) {
  int64_t a = l.k, b = l.k;
  for (const Term& t : l.terms) {
    int64_t x, y;
    if (!mul_ok(t.base->vmin(), t.coef, &x) || !mul_ok(t.base->vmax(), t.coef, &y)) return false;
    if (!add_ok(a, std::min(x, y), &a) || !add_ok(b, std::max(x, y), &b)) return false;
  }
  *lo = a;
  *hi = b;
  return true;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  return a - floor_div(a, b) * b;
}
int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}
int64_t gcd64(int64_t a, int64_t b) {
  return std::gcd(a, b);
}

bool may_wrap(const UOp* u) {
  return u->vmin() == dtype_min(u->dtype) || u->vmax() == dtype_max(u->dtype);
}

bool is_algebraic(DType d) {
  if (d.is_vector() || d.is_ptr) return false;
  switch (d.scalar) {
    case ScalarKind::Index:
    case ScalarKind::Int8:
    case ScalarKind::Int16:
    case ScalarKind::Int32:
    case ScalarKind::Int64:
      return true;
    default:
      return false;
  }
}

}  // namespace kiln::symbolic
