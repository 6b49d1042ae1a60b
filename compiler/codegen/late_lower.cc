#include "compiler/codegen/late_lower.h"

#include <climits>
#include <unordered_map>

#include "compiler/ir/rewrite.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"

namespace kiln {

namespace {

// Constants and conversions of one lane count, for the integer sequences below.
class Lanes {
 public:
  Lanes(Context* ctx, uint16_t lanes) : ctx_(ctx), lanes_(lanes) {}
  const UOp* u32(uint32_t v) const { return konst(dtypes::uint32, ConstValue::of_int(v)); }
  const UOp* f32(double v) const { return konst(dtypes::float32, ConstValue::of_float(v)); }
  const UOp* konst(DType d, ConstValue v) const {
    return ctx_->make(Op::CONST, d.vec(lanes_), {}, v);
  }
  const UOp* bitcast(const UOp* x, DType d) const {
    return ctx_->make(Op::BITCAST, d.vec(lanes_), {x});
  }
  const UOp* cast(const UOp* x, DType d) const { return x->cast(d.vec(lanes_)); }

 private:
  Context* ctx_;
  uint16_t lanes_;
};

// ---------------------------------------------------------------- integer division

// A divisor that needs no guard: a constant (every lane) or bounds that exclude 0 (and -1 for
// signed types, whose INT_MIN / -1 overflows).
bool safe_divisor(const UOp* y, bool is_unsigned) {
  auto safe_value = [&](int64_t v) { return v != 0 && (is_unsigned || v != -1); };
  if (y->op == Op::CONST) return safe_value(y->cval().as_int());
  if (y->op == Op::VCONST) {
    for (const ConstValue& v : std::get<std::vector<ConstValue>>(y->arg))
      if (!safe_value(v.as_int())) return false;
    return true;
  }
  if (is_unsigned) return y->vmin() > 0;
  return y->vmin() > 0 || y->vmax() < -1;
}

// The guard of divisor y: true where y is 0 (or -1 for signed types).
const UOp* unsafe_lanes(const UOp* y, bool is_unsigned) {
  Lanes k(y->ctx(), y->dtype.lanes);
  const UOp* zero = y->eq(k.konst(y->dtype.base(), ConstValue::of_int(0)));
  if (is_unsigned) return zero;
  return zero->logical_or(y->eq(k.konst(y->dtype.base(), ConstValue::of_int(-1))));
}

const UOp* guarded_divisor(const UOp* y, bool is_unsigned) {
  Lanes k(y->ctx(), y->dtype.lanes);
  return unsafe_lanes(y, is_unsigned)->where(k.konst(y->dtype.base(), ConstValue::of_int(1)), y);
}

// x / y and x % y with kiln's semantics on machine division: the divisor replaced by 1 where it
// is 0 or -1, and those lanes' results selected (x / 0 = 0, x % 0 = 0, x / -1 = -x wrapping,
// x % -1 = 0). Division by an already guarded divisor is left alone.
const PatternMatcher& pm_safe_division() {
  static const PatternMatcher pm(
      "pm_safe_division",
      {
          {Pat::op(OpSet{Op::IDIV, Op::MOD}, {Pat::any("x"), Pat::any("y")}).dtype(DTypeClass::Int),
           [](const Match& m) -> const UOp* {
             const UOp* u = m.root();
             const UOp *x = m["x"], *y = m["y"];
             bool uns = y->dtype.is_unsigned();
             if (safe_divisor(y, uns)) return nullptr;
             if (y->op == Op::WHERE && y == guarded_divisor(y->src[2], uns)) return nullptr;
             Lanes k(u->ctx(), u->dtype.lanes);
             const UOp* zero = k.konst(u->dtype.base(), ConstValue::of_int(0));
             const UOp* r = u->ctx()->make(u->op, u->dtype, {x, guarded_divisor(y, uns)});
             if (!uns) {
               const UOp* minus1 = y->eq(k.konst(y->dtype.base(), ConstValue::of_int(-1)));
               const UOp* negated = x->mul(k.konst(x->dtype.base(), ConstValue::of_int(-1)));
               r = minus1->where(u->op == Op::IDIV ? negated : zero, r);
             }
             return y->eq(zero)->where(zero, r);
           }},
      });
  return pm;
}

// ---------------------------------------------------------------- rounding without SSE4.1

// |r| with the sign of x (bit operations: keeps -0.0 and the sign of a NaN).
const UOp* copysign(const UOp* r, const UOp* x) {
  DType f = x->dtype.base();
  bool dbl = f.scalar == ScalarKind::Float64;
  DType u = dbl ? dtypes::uint64 : dtypes::uint32;
  Lanes k(x->ctx(), x->dtype.lanes);
  int64_t sign = dbl ? INT64_MIN : int64_t{0x80000000};
  int64_t rest = dbl ? INT64_MAX : int64_t{0x7fffffff};
  const UOp* mag = k.bitcast(r, u)->alu(Op::AND, k.konst(u, ConstValue::of_int(rest)));
  const UOp* sgn = k.bitcast(x, u)->alu(Op::AND, k.konst(u, ConstValue::of_int(sign)));
  return k.bitcast(mag->alu(Op::OR, sgn), f);
}

// Adding and subtracting 2^p (p = the mantissa bits) rounds |x| to an integer (ties to even);
// floor, ceil and trunc then step by one where the rounding went the wrong way. |x| >= 2^p is an
// integer already (and a NaN fails every comparison): x itself.
const UOp* add_and_subtract(Op op, const UOp* x) {
  bool dbl = x->dtype.scalar == ScalarKind::Float64;
  Lanes k(x->ctx(), x->dtype.lanes);
  DType f = x->dtype.base();
  double p = dbl ? 4503599627370496.0 : 8388608.0;  // 2^52, 2^23
  const UOp* big = k.konst(f, ConstValue::of_float(p));
  const UOp* one = k.konst(f, ConstValue::of_float(1.0));
  const UOp* minus_one = k.konst(f, ConstValue::of_float(-1.0));
  const UOp* ax = x->alu(Op::ABS);
  const UOp* r = copysign(ax->add(big)->add(k.konst(f, ConstValue::of_float(-p))), x);
  if (op == Op::FLOOR) r = x->lt(r)->where(r->add(minus_one), r);
  if (op == Op::CEIL) r = r->lt(x)->where(r->add(one), r);
  if (op == Op::TRUNC) r = ax->lt(r->alu(Op::ABS))->where(r->add(copysign(one, x)->neg()), r);
  r = copysign(r, x);  // keep -0.0
  return ax->lt(big)->where(r, x);
}

const PatternMatcher& pm_rounding_fallback() {
  static const PatternMatcher pm(
      "pm_rounding_fallback",
      {
          {Pat::op(OpSet{Op::FLOOR, Op::CEIL, Op::TRUNC, Op::ROUND}, {Pat::any("x")})
               .dtype(DTypeClass::Float),
           [](const Match& m) { return add_and_subtract(m.root()->op, m["x"]); }},
      });
  return pm;
}

// C fmod on floats: x - trunc(x / y) * y as one fused multiply-add, with a zero result taking
// the sign of x. (TRUNC is then lowered like any other on a target without rounding.)
const PatternMatcher& pm_float_mod() {
  static const PatternMatcher pm(
      "pm_float_mod",
      {
          {Pat::op(Op::MOD, {Pat::any("x"), Pat::any("y")}).dtype(DTypeClass::Float),
           [](const Match& m) {
             const UOp *x = m["x"], *y = m["y"];
             Lanes k(x->ctx(), x->dtype.lanes);
             const UOp* zero = k.konst(x->dtype.base(), ConstValue::of_float(0.0));
             const UOp* q = x->alu(Op::FDIV, y)->alu(Op::TRUNC);
             const UOp* r = q->neg()->alu(Op::MULACC, y, x);
             return r->eq(zero)->where(copysign(zero, x), r);
           }},
      });
  return pm;
}

// ---------------------------------------------------------------- integer dot products

// Lanes [first, first + n) of v.
const UOp* lanes_of(const UOp* v, int64_t first, int64_t n) {
  std::vector<int64_t> idx;
  for (int64_t l = 0; l < n; ++l) idx.push_back(first + l);
  return v->ctx()->make(Op::GEP, v->dtype.base().vec(static_cast<uint16_t>(n)), {v}, idx);
}

// DOT4 as plain integer code: byte j of every lane picked out first (one byte shuffle per
// operand), then widened to int32 (zero- and sign-extended), multiplied and summed into the lane.
// Picking before widening keeps every vector at the accumulator's width; widening all 4n bytes
// first and picking int32s afterwards made LLVM move single elements (6.5 GOP/s on AVX2).
const UOp* dot4_plain(const UOp* acc, const UOp* a, const UOp* b) {
  Context* ctx = acc->ctx();
  uint16_t n = acc->dtype.lanes;
  const UOp* sum = acc;
  for (int64_t j = 0; j < 4; ++j) {
    std::vector<int64_t> idx;
    for (int64_t l = 0; l < n; ++l) idx.push_back(4 * l + j);
    const UOp* aj = ctx->make(Op::GEP, a->dtype.base().vec(n), {a}, idx);
    const UOp* bj = ctx->make(Op::GEP, b->dtype.base().vec(n), {b}, idx);
    sum = sum->add(aj->cast(acc->dtype)->mul(bj->cast(acc->dtype)));
  }
  return sum;
}

// The widest dot-product instruction of the target, in int32 lanes (0: none).
int64_t dot4_width(const TargetInfo& t) {
  switch (t.dot_product()) {
    case DotProduct::Avx512Vnni:
      return 16;
    case DotProduct::AvxVnni:
      return 8;
    case DotProduct::ArmDot:
      return 4;  // sdot on 128-bit NEON (the emitter makes the uint8 operand signed)
    default:
      return 0;
  }
}

// DOT4s the emitter emits as instructions (4, 8 or `width` lanes), wider ones split into
// instruction-wide pieces; plain code on a target without the instruction.
PatternMatcher pm_dot_products(int64_t width) {
  return PatternMatcher(
      "pm_dot_products",
      {{Pat::op(Op::DOT4, {Pat::any("acc"), Pat::any("a"), Pat::any("b")}),
        [width](const Match& m) -> const UOp* {
          const UOp *acc = m["acc"], *a = m["a"], *b = m["b"];
          int64_t n = acc->dtype.lanes;
          if (width == 0) return dot4_plain(acc, a, b);
          if (n == width || n == 4 || (n == 8 && width > 4)) return nullptr;
          int64_t piece = n % width == 0 ? width : n % 8 == 0 && width > 4 ? 8 : n % 4 == 0 ? 4 : 0;
          if (piece == 0) return dot4_plain(acc, a, b);
          std::vector<const UOp*> parts;
          for (int64_t f = 0; f < n; f += piece)
            parts.push_back(
                acc->ctx()->make(Op::DOT4, acc->dtype.base().vec(static_cast<uint16_t>(piece)),
                                 {lanes_of(acc, f, piece), lanes_of(a, 4 * f, 4 * piece),
                                  lanes_of(b, 4 * f, 4 * piece)}));
          std::vector<int64_t> all;
          for (int64_t l = 0; l < n; ++l) all.push_back(l);
          return acc->ctx()->make(Op::GEP, acc->dtype, parts, all);
        }}});
}

// ---------------------------------------------------------------- 16-bit floats

bool is_half(ScalarKind s) {
  return s == ScalarKind::Float16 || s == ScalarKind::BFloat16;
}

// float32 lanes from 16-bit float bits (uint16 lanes).
const UOp* bits_to_float(const UOp* bits, ScalarKind kind) {
  Lanes k(bits->ctx(), bits->dtype.lanes);
  const UOp* h = k.cast(bits, dtypes::uint32);
  if (kind == ScalarKind::BFloat16) return k.bitcast(h->alu(Op::SHL, k.u32(16)), dtypes::float32);
  const UOp* sign = h->alu(Op::AND, k.u32(0x8000))->alu(Op::SHL, k.u32(16));
  const UOp* em = h->alu(Op::AND, k.u32(0x7fff));
  // (em << 13) read as a float is the value times 2^-112 (subnormals too): rescale.
  const UOp* scaled = k.bitcast(em->alu(Op::SHL, k.u32(13)), dtypes::float32)->mul(k.f32(0x1p112));
  const UOp* special =  // inf, NaN
      k.u32(0x7f800000)->alu(Op::OR, em->alu(Op::AND, k.u32(0x3ff))->alu(Op::SHL, k.u32(13)));
  const UOp* mag = em->lt(k.u32(0x7c00))->where(k.bitcast(scaled, dtypes::uint32), special);
  return k.bitcast(mag->alu(Op::OR, sign), dtypes::float32);
}

// 16-bit float bits (uint16 lanes) from float32 lanes, rounded to nearest even; overflow gives
// inf, NaN a quiet NaN.
const UOp* float_to_bits(const UOp* f, ScalarKind kind) {
  Lanes k(f->ctx(), f->dtype.lanes);
  const UOp* bits = k.bitcast(f, dtypes::uint32);
  if (kind == ScalarKind::BFloat16) {
    const UOp* rounding = k.u32(0x7fff)->add(bits->alu(Op::SHR, k.u32(16))->alu(Op::AND, k.u32(1)));
    const UOp* rounded = bits->add(rounding)->alu(Op::SHR, k.u32(16));
    const UOp* nan = k.u32(0x7f800000)->lt(bits->alu(Op::AND, k.u32(0x7fffffff)));
    const UOp* qnan = bits->alu(Op::SHR, k.u32(16))->alu(Op::OR, k.u32(0x40));
    return k.cast(nan->where(qnan, rounded), dtypes::uint16);
  }
  const UOp* sign = bits->alu(Op::AND, k.u32(0x80000000u));
  const UOp* mag = bits->alu(Op::XOR, sign);
  const UOp* over = k.u32(0x7f800000)->lt(mag)->where(k.u32(0x7e00), k.u32(0x7c00));
  const uint32_t denorm_magic = ((127 - 15) + (23 - 10) + 1) << 23;
  const UOp* sub =
      k.bitcast(
           k.bitcast(mag, dtypes::float32)->add(k.bitcast(k.u32(denorm_magic), dtypes::float32)),
           dtypes::uint32)
          ->add(k.u32(0u - denorm_magic));
  const UOp* odd = mag->alu(Op::SHR, k.u32(13))->alu(Op::AND, k.u32(1));
  const UOp* norm = mag->add(k.u32(static_cast<uint32_t>((15 - 127) << 23) + 0xfff))
                        ->add(odd)
                        ->alu(Op::SHR, k.u32(13));
  const UOp* o =
      mag->lt(k.u32((127 + 16) << 23))->where(mag->lt(k.u32(113u << 23))->where(sub, norm), over);
  return k.cast(o->alu(Op::OR, sign->alu(Op::SHR, k.u32(16))), dtypes::uint16);
}

// Rewrites every 16-bit float value to float32 (see late_lower.h). A function rather than
// patterns: it changes the dtype of whole chains, which a fixpoint rewrite of single nodes would
// revisit.
class HalfFloats {
 public:
  HalfFloats(bool native_f16) : native_f16_(native_f16) {}

  const UOp* run(const UOp* ast) {
    std::unordered_map<const UOp*, const UOp*> done;
    for (const UOp* n : ast->toposort()) {
      std::vector<const UOp*> src;
      for (const UOp* s : n->src) src.push_back(done.at(s));
      done[n] = lower(n, std::move(src));
    }
    return done.at(ast);
  }

 private:
  // Emulated: held as uint16 bits in memory, integer code for conversions.
  bool emulated(ScalarKind s) const { return s == ScalarKind::BFloat16 || !native_f16_; }

  static DType f32_like(DType d) { return dtypes::float32.vec(d.lanes); }

  // float32 lanes from a value as it comes from memory (uint16 bits or native float16).
  const UOp* widen(const UOp* v, ScalarKind s) const {
    if (emulated(s)) return bits_to_float(v, s);
    return v->cast(f32_like(v->dtype));
  }
  // A float32 value as it goes to memory.
  const UOp* narrow(const UOp* v, ScalarKind s) const {
    if (emulated(s)) return float_to_bits(v, s);
    return v->cast(DType(s, v->dtype.lanes));
  }
  const UOp* round(const UOp* v, ScalarKind s) const { return widen(narrow(v, s), s); }

  const UOp* lower(const UOp* n, std::vector<const UOp*> src) const {
    Context* ctx = n->ctx();
    ScalarKind s = n->dtype.scalar;
    bool half = is_half(s);
    switch (n->op) {
      case Op::DEFINE_GLOBAL:
        if (half && emulated(s)) {
          DType d = DType::ptr(ScalarKind::UInt16, n->dtype.ptr_size);
          return ctx->make(Op::DEFINE_GLOBAL, d, {}, n->arg);
        }
        return n;
      case Op::INDEX: {
        DType buffer = src[0]->dtype;  // (uint16 now, for an emulated 16-bit float buffer)
        return ctx->make(Op::INDEX, buffer, std::move(src), n->arg);
      }
      case Op::LOAD:
        if (!half) break;
        return widen(
            ctx->make(Op::LOAD, DType(src[0]->src[0]->dtype.scalar, n->dtype.lanes), src, n->arg),
            s);
      case Op::STORE: {
        ScalarKind mem = n->src[1]->dtype.scalar;
        if (!is_half(mem)) break;
        return ctx->make(Op::STORE, n->dtype, {src[0], narrow(src[1], mem)}, n->arg);
      }
      case Op::CAST: {
        ScalarKind from = n->src[0]->dtype.scalar;
        if (!half && !is_half(from)) break;
        // The source is float32 now if it was a 16-bit float.
        if (!half) return src[0]->cast(n->dtype);
        return round(src[0]->cast(f32_like(n->dtype)), s);
      }
      case Op::BITCAST: {
        ScalarKind from = n->src[0]->dtype.scalar;
        if (is_half(from)) {
          const UOp* bits = emulated(from)
                                ? float_to_bits(src[0], from)
                                : ctx->make(Op::BITCAST, dtypes::uint16.vec(n->dtype.lanes),
                                            {narrow(src[0], from)});
          return bits->dtype == n->dtype ? bits : ctx->make(Op::BITCAST, n->dtype, {bits});
        }
        if (!half) break;
        DType u16 = dtypes::uint16.vec(n->dtype.lanes);
        const UOp* bits = src[0]->dtype == u16 ? src[0] : ctx->make(Op::BITCAST, u16, {src[0]});
        if (emulated(s)) return bits_to_float(bits, s);
        return ctx->make(Op::BITCAST, n->dtype, {bits})->cast(f32_like(n->dtype));
      }
      default:
        break;
    }
    if (!half) return n->with_src(std::move(src));
    DType f = f32_like(n->dtype);
    switch (n->op) {
      case Op::CONST:
      case Op::VCONST:
        return ctx->make(n->op, f, {}, n->arg);
      case Op::ACC:
      case Op::REDUCE:
      case Op::VECTORIZE:
      case Op::GEP:
      case Op::WHERE:  // moves values that are already rounded
        return ctx->make(n->op, f, std::move(src), n->arg);
      default:
        KILN_CHECK(alu_arity(n->op), "late_lower: ", op_name(n->op), " on ", n->dtype.str());
        return round(ctx->make(n->op, f, std::move(src), n->arg), s);
    }
  }

  bool native_f16_;
};

}  // namespace

int index_bits(const UOp* ast) {
  for (const UOp* u : ast->toposort())
    if (u->dtype.scalar == ScalarKind::Index && (u->vmin() < INT32_MIN || u->vmax() > INT32_MAX))
      return 64;
  return 32;
}

const UOp* late_lower(const UOp* expanded_ast, const TargetInfo& t) {
  const UOp* ast = HalfFloats(t.native_f16()).run(expanded_ast);
  ast = graph_rewrite(ast, pm_float_mod());
  ast = graph_rewrite(ast, pm_dot_products(dot4_width(t)));
  if (!t.rounding_instructions()) ast = graph_rewrite(ast, pm_rounding_fallback());
  return graph_rewrite(ast, pm_safe_division());
}

}  // namespace kiln
