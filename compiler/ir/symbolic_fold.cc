// Constant folding and algebraic identities.
#include <array>
#include <cmath>

#include "compiler/ir/const_eval.h"
#include "compiler/ir/symbolic_internal.h"
#include "compiler/ir/symbolic_linear.h"

namespace kiln::symbolic {

namespace {

bool all_const(const UOp* u) {
  for (const UOp* s : u->src)
    if (s->op != Op::CONST || s->cval().is_invalid()) return false;
  return !u->src.empty();
}

const UOp* fold_alu(const Match& m) {
  const UOp* u = m.root();
  if (u->dtype.is_vector() || !all_const(u)) return nullptr;
  std::array<ConstValue, 3> args;
  for (size_t i = 0; i < u->src.size(); ++i) args[i] = u->src[i]->cval();
  // The operand dtype: WHERE's values are sources 1 and 2; comparisons look at their inputs.
  DType d = u->op == Op::WHERE ? u->src[1]->dtype : u->src[0]->dtype;
  ConstValue v = eval_alu(u->op, d, std::span<const ConstValue>(args.data(), u->src.size()));
  return u->ctx()->const_value(u->dtype, normalize_const(u->dtype, v));
}

const UOp* fold_cast(const Match& m) {
  const UOp* u = m.root();
  const UOp* x = u->src[0];
  if (x->op != Op::CONST || x->cval().is_invalid() || u->dtype.is_vector()) return nullptr;
  ConstValue v = u->op == Op::CAST ? eval_cast(x->dtype, u->dtype, x->cval())
                                   : eval_bitcast(x->dtype, u->dtype, x->cval());
  return u->ctx()->const_value(u->dtype, v);
}

bool is_float_const(const UOp* u, double v) {
  return u->op == Op::CONST && u->cval().kind == ConstValue::Kind::Float && u->cval().f == v &&
         !std::signbit(u->cval().f) == !std::signbit(v);
}

}  // namespace

std::vector<Rule> rules_constant_fold() {
  return {
      {Pat::op(ops::alu()), fold_alu},
      {Pat::op(OpSet{Op::CAST, Op::BITCAST}), fold_cast},
  };
}

std::vector<Rule> rules_identities() {
  using P = Pat;
  auto X = [] { return P::any("x"); };
  auto not_vec = [](const Match& m) { return !m.root()->dtype.is_vector(); };
  return {
      // cast to its own dtype
      {P::op(Op::CAST),
       [](const Match& m) -> const UOp* {
         return m.root()->src[0]->dtype == m.root()->dtype ? m.root()->src[0] : nullptr;
       }},
      // x * 1 -> x (exact for every dtype)
      {P::comm(Op::MUL, X(), P::cint(1)), [](const Match& m) { return m["x"]; }},
      {P::comm(Op::MUL, X(), P::op(Op::CONST).bind("c")),
       [](const Match& m) -> const UOp* { return is_float_const(m["c"], 1.0) ? m["x"] : nullptr; }},
      // x / 1.0 -> x, -(-x) -> x, x + -0.0 -> x (exact in IEEE arithmetic)
      {P::op(Op::FDIV, {X(), P::op(Op::CONST).bind("c")}),
       [](const Match& m) -> const UOp* { return is_float_const(m["c"], 1.0) ? m["x"] : nullptr; }},
      {P::op(Op::NEG, {P::op(Op::NEG, {X()})}), [](const Match& m) { return m["x"]; }},
      {P::comm(Op::ADD, X(), P::op(Op::CONST).bind("c")),
       [](const Match& m) -> const UOp* {
         return is_float_const(m["c"], -0.0) ? m["x"] : nullptr;
       }},
      // integer identities
      {P::comm(Op::ADD, X().dtype(DTypeClass::Int), P::cint(0)),
       [](const Match& m) { return m["x"]; }},
      {P::comm(Op::MUL, X().dtype(DTypeClass::Int), P::cint(0)),
       [](const Match& m) { return m.root()->const_like(int64_t{0}); }},
      {P::op(Op::IDIV, {X(), P::cint(1)}), [](const Match& m) { return m["x"]; }},
      {P::op(Op::MOD, {X(), P::cint(1)}),
       [](const Match& m) { return m.root()->const_like(int64_t{0}); }},
      // same operand twice
      {P::op(OpSet{Op::MAX, Op::MIN, Op::AND, Op::OR}, {X(), X()}),
       [=](const Match& m) -> const UOp* { return not_vec(m) ? m["x"] : nullptr; }},
      {P::op(Op::XOR, {X(), X()}),
       [](const Match& m) -> const UOp* {
         return m.root()->dtype.is_vector() ? nullptr : m.root()->const_like(int64_t{0});
       }},
      // commutative ops: a constant goes last (float ADD/MUL are commutative too; MAX/MIN on
      // floats are not, under kiln's NaN rule, and keep their order)
      {P::op(ops::commutative(), {P::op(Op::CONST).bind("c"), X()}),
       [](const Match& m) -> const UOp* {
         const UOp* u = m.root();
         if (m["x"]->op == Op::CONST) return nullptr;
         if (u->src[0]->dtype.is_float() && (u->op == Op::MAX || u->op == Op::MIN)) return nullptr;
         return u->ctx()->make(u->op, u->dtype, {m["x"], m["c"]}, u->arg);
       }},
  };
}

}  // namespace kiln::symbolic
