// Integer bounds (vmin/vmax) of UOps by interval analysis. Bounds are inclusive, live in int64,
// and are conservative: any value the node can take at run time lies inside them.
#include <algorithm>
#include <limits>

#include "compiler/ir/uop.h"
#include "compiler/ir/walk.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

struct Interval {
  int64_t lo, hi;
};

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

Interval full(DType d) {
  if (d.is_float() || d.is_ptr || d.is_void()) return {kMin, kMax};
  return {dtype_min(d), dtype_max(d)};
}

// Clamps to the dtype; a result outside it (wrap-around possible) gives the full range.
Interval fit(DType d, int64_t lo, int64_t hi) {
  Interval f = full(d);
  if (lo < f.lo || hi > f.hi) return f;
  return {lo, hi};
}

bool add_ov(int64_t a, int64_t b, int64_t* r) {
  return __builtin_add_overflow(a, b, r);
}
bool mul_ov(int64_t a, int64_t b, int64_t* r) {
  return __builtin_mul_overflow(a, b, r);
}

Interval bounds_add(DType d, Interval a, Interval b) {
  int64_t lo, hi;
  if (add_ov(a.lo, b.lo, &lo) || add_ov(a.hi, b.hi, &hi)) return full(d);
  return fit(d, lo, hi);
}

Interval bounds_mul(DType d, Interval a, Interval b) {
  int64_t c[4];
  if (mul_ov(a.lo, b.lo, &c[0]) || mul_ov(a.lo, b.hi, &c[1]) || mul_ov(a.hi, b.lo, &c[2]) ||
      mul_ov(a.hi, b.hi, &c[3]))
    return full(d);
  return fit(d, *std::min_element(c, c + 4), *std::max_element(c, c + 4));
}

// Truncating division. With a divisor interval that excludes 0, the extremes are at corners.
Interval bounds_idiv(DType d, Interval a, Interval b) {
  if (b.lo > 0 || b.hi < 0) {
    auto div = [](int64_t x, int64_t y) { return (x == kMin && y == -1) ? kMin : x / y; };
    int64_t c[4] = {div(a.lo, b.lo), div(a.lo, b.hi), div(a.hi, b.lo), div(a.hi, b.hi)};
    if ((a.lo == kMin && (b.lo == -1 || b.hi == -1))) return full(d);
    return fit(d, *std::min_element(c, c + 4), *std::max_element(c, c + 4));
  }
  // The divisor may be 0 (result 0) or +-1 (result +-x).
  if (a.lo == kMin) return full(d);
  int64_t m = std::max(std::abs(a.lo), std::abs(a.hi));
  return fit(d, -m, m);
}

Interval bounds_mod(DType d, Interval a, Interval b) {
  if (b.lo == kMin) return full(d);
  // |x % y| < |y| and the result has the sign of x (or is 0, also for y == 0).
  int64_t ymax = std::max(std::abs(b.lo), std::abs(b.hi));
  int64_t lim = ymax > 0 ? ymax - 1 : 0;
  if (a.lo >= 0) {
    // x smaller than every possible |y| is left unchanged.
    int64_t ymin_abs = (b.lo > 0) ? b.lo : (b.hi < 0 ? -b.hi : 0);
    if (ymin_abs > 0 && a.hi < ymin_abs) return {a.lo, a.hi};
    return {0, std::min(a.hi, lim)};
  }
  if (a.hi <= 0) return {std::max(a.lo, -lim), 0};
  return {std::max(a.lo, -lim), std::min(a.hi, lim)};
}

Interval compute(const UOp* u, auto&& get) {
  const DType d = u->dtype;
  auto S = [&](size_t i) { return get(u->src[i]); };
  switch (u->op) {
    case Op::CONST: {
      const ConstValue& c = u->cval();
      if (c.kind == ConstValue::Kind::Int) return {c.i, c.i};
      if (c.kind == ConstValue::Kind::Float && d.is_int()) return {c.as_int(), c.as_int()};
      return full(d);
    }
    case Op::VCONST: {
      const auto& v = std::get<std::vector<ConstValue>>(u->arg);
      if (!d.is_int() && !d.is_bool()) return full(d);
      Interval r{kMax, kMin};
      for (const auto& c : v) r = {std::min(r.lo, c.i), std::max(r.hi, c.i)};
      return v.empty() ? full(d) : r;
    }
    case Op::RANGE:
      return {0, std::max<int64_t>(0, S(0).hi - 1)};
    case Op::DEFINE_VAR:
      return {u->var().min, u->var().max};
    case Op::TASK:
      return {0, std::max<int64_t>(0, u->iarg() - 1)};
    default:
      break;
  }
  if (!(d.is_int() || d.is_bool())) return full(d);
  switch (u->op) {
    case Op::ADD:
      if (d.is_bool()) return {std::max(S(0).lo, S(1).lo), std::max(S(0).hi, S(1).hi)};
      return bounds_add(d, S(0), S(1));
    case Op::MUL:
      if (d.is_bool()) return {std::min(S(0).lo, S(1).lo), std::min(S(0).hi, S(1).hi)};
      return bounds_mul(d, S(0), S(1));
    case Op::NEG: {
      Interval a = S(0);
      if (a.lo == kMin) return full(d);
      return fit(d, -a.hi, -a.lo);
    }
    case Op::IDIV:
      return bounds_idiv(d, S(0), S(1));
    case Op::MOD:
      return bounds_mod(d, S(0), S(1));
    case Op::MAX:
      return {std::max(S(0).lo, S(1).lo), std::max(S(0).hi, S(1).hi)};
    case Op::MIN:
      return {std::min(S(0).lo, S(1).lo), std::min(S(0).hi, S(1).hi)};
    case Op::CMPLT: {
      Interval a = S(0), b = S(1);
      if (a.hi < b.lo) return {1, 1};
      if (a.lo >= b.hi) return {0, 0};
      return {0, 1};
    }
    case Op::CMPNE:
    case Op::CMPEQ: {
      Interval a = S(0), b = S(1);
      bool ne_always = a.hi < b.lo || b.hi < a.lo;
      bool eq_always = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
      if (ne_always) return u->op == Op::CMPNE ? Interval{1, 1} : Interval{0, 0};
      if (eq_always) return u->op == Op::CMPNE ? Interval{0, 0} : Interval{1, 1};
      return {0, 1};
    }
    case Op::AND:
      if (d.is_bool()) return {S(0).lo & S(1).lo, S(0).hi & S(1).hi};
      if (S(0).lo >= 0 && S(1).lo >= 0) return {0, std::min(S(0).hi, S(1).hi)};
      if (S(0).lo >= 0) return {0, S(0).hi};
      if (S(1).lo >= 0) return {0, S(1).hi};
      return full(d);
    case Op::OR:
      if (d.is_bool()) return {S(0).lo | S(1).lo, S(0).hi | S(1).hi};
      return full(d);
    case Op::XOR:
      if (d.is_bool()) {
        Interval a = S(0), b = S(1);
        if (b.lo == b.hi) return b.lo ? Interval{1 - a.hi, 1 - a.lo} : a;
        if (a.lo == a.hi) return a.lo ? Interval{1 - b.hi, 1 - b.lo} : b;
        return {0, 1};
      }
      return full(d);
    case Op::SHR: {
      Interval a = S(0), b = S(1);
      if (a.lo >= 0 && b.lo >= 0 && b.hi < 64) return {a.lo >> b.hi, a.hi >> b.lo};
      return full(d);
    }
    case Op::SHL: {
      Interval a = S(0), b = S(1);
      if (a.lo >= 0 && b.lo >= 0 && b.hi < 62) {
        int64_t hi;
        if (mul_ov(a.hi, int64_t{1} << b.hi, &hi)) return full(d);
        return fit(d, a.lo << b.lo, hi);
      }
      return full(d);
    }
    case Op::WHERE: {
      Interval c = S(0);
      const UOp* x = u->src[1];
      const UOp* y = u->src[2];
      if (c.lo == 1) return get(x);
      if (c.hi == 0) return get(y);
      if (x->is_invalid()) return get(y);  // an invalid index never happens
      if (y->is_invalid()) return get(x);
      Interval a = get(x), b = get(y);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case Op::CAST: {
      const UOp* s = u->src[0];
      if (s->dtype.is_float()) return full(d);
      Interval a = S(0);
      Interval f = full(d);
      if (a.lo >= f.lo && a.hi <= f.hi) return a;
      return f;
    }
    case Op::ABS: {
      Interval a = S(0);
      if (a.lo == kMin) return full(d);
      if (a.lo >= 0) return a;
      if (a.hi <= 0) return {-a.hi, -a.lo};
      return {0, std::max(-a.lo, a.hi)};
    }
    case Op::GEP:
    case Op::VECTORIZE: {
      Interval r{kMax, kMin};
      for (size_t i = 0; i < u->src.size(); ++i) {
        Interval s = S(i);
        r = {std::min(r.lo, s.lo), std::max(r.hi, s.hi)};
      }
      return u->src.empty() ? full(d) : r;
    }
    default:
      return full(d);
  }
}

}  // namespace

void compute_bounds(const UOp* root) {
  walk_uncached(
      root, [](const UOp* n) { return n->bounds_done_; },
      [](const UOp* n) {
        Interval r = compute(n, [](const UOp* s) { return Interval{s->vmin_, s->vmax_}; });
        n->vmin_ = r.lo;
        n->vmax_ = r.hi;
        n->bounds_done_ = true;
      });
}

int64_t UOp::vmin() const {
  if (!bounds_done_) compute_bounds(this);
  return vmin_;
}
int64_t UOp::vmax() const {
  if (!bounds_done_) compute_bounds(this);
  return vmax_;
}

}  // namespace kiln
