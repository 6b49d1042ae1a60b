#include "compiler/ir/verify.h"

#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

OpSet allowed(IrStage s) {
  OpSet base = ops::alu() | OpSet{Op::CONST, Op::CAST, Op::BITCAST, Op::SINK, Op::NOOP};
  switch (s) {
    case IrStage::Tensor:
      // (DEFINE_VAR: a loop's iteration number, as CAST(DEFINE_VAR) — a scalar tensor.)
      return base | ops::movement() |
             OpSet{Op::BUFFER, Op::REDUCE_AXIS, Op::CONTIGUOUS, Op::GATHER, Op::DEFINE_VAR};
    case IrStage::Kernel:
      return base | OpSet{Op::DEFINE_GLOBAL, Op::DEFINE_VAR, Op::RANGE, Op::INDEX,
                          Op::LOAD,          Op::STORE,      Op::REDUCE};
    case IrStage::Lowered:
      return base | OpSet{Op::DEFINE_GLOBAL, Op::DEFINE_VAR, Op::RANGE,     Op::INDEX, Op::LOAD,
                          Op::STORE,         Op::REDUCE,     Op::VECTORIZE, Op::GEP,   Op::VCONST,
                          Op::TASK,          Op::ACC,        Op::DOT4};
  }
  return base;
}

class Verifier {
 public:
  explicit Verifier(IrStage s) : stage_(s), allowed_(allowed(s)) {}

  void node(const UOp* u) {
    if (!allowed_.has(u->op)) fail(u, "op not allowed at this stage");
    int arity = alu_arity(u->op);
    if (arity && static_cast<int>(u->src.size()) != arity)
      fail(u, str_cat("ALU op takes ", arity, " sources, has ", u->src.size()));
    if (arity) alu(u);
    switch (u->op) {
      case Op::CONST:
        if (!u->src.empty()) fail(u, "CONST has sources");
        if (!std::holds_alternative<ConstValue>(u->arg)) fail(u, "CONST without a value");
        if (u->cval().is_invalid() && !u->dtype.is_index())
          fail(u, "Invalid must have dtype index");
        break;
      case Op::RANGE:
        if (u->src.size() != 1 || !u->src[0]->dtype.is_index())
          fail(u, "RANGE needs one index source (its end)");
        if (!u->dtype.is_index()) fail(u, "RANGE must have dtype index");
        break;
      case Op::INDEX:
        if (u->src.size() != 2 || !u->src[0]->dtype.is_ptr || !u->src[1]->dtype.is_index())
          fail(u, "INDEX needs (pointer, index)");
        break;
      case Op::LOAD:
        if (u->src.empty() || u->src[0]->op != Op::INDEX) fail(u, "LOAD needs an INDEX");
        if (u->dtype.scalar != u->src[0]->dtype.scalar)
          fail(u, "LOAD dtype differs from the buffer's");
        break;
      case Op::GEP:
        if (u->src.empty() || u->varg().size() != u->dtype.lanes)
          fail(u, "GEP lane list does not match its dtype");
        break;
      case Op::VECTORIZE:
        if (u->src.size() != u->dtype.lanes)
          fail(u, "VECTORIZE source count does not match its dtype");
        break;
      case Op::STORE:
        if (u->src.size() != 2 || u->src[0]->op != Op::INDEX) fail(u, "STORE needs (INDEX, value)");
        if (u->src[1]->dtype.scalar != u->src[0]->dtype.scalar)
          fail(u, "STORE value dtype differs from the buffer's");
        break;
      case Op::REDUCE: {
        // Kernel stage: REDUCE(value, ranges...). Lowered stage: REDUCE(body, ACC, ranges...)
        // where body computes the next accumulator value from ACC.
        size_t first = stage_ == IrStage::Lowered ? 2 : 1;
        if (u->src.size() < first + (stage_ == IrStage::Lowered ? 0 : 1))
          fail(u, "REDUCE needs a value and at least one range");
        if (stage_ == IrStage::Lowered &&
            (u->src[1]->op != Op::ACC || u->src[1]->dtype != u->dtype))
          fail(u, "lowered REDUCE needs its accumulator (ACC of its dtype) as source 1");
        for (size_t i = first; i < u->src.size(); ++i)
          if (u->src[i]->op != Op::RANGE) fail(u, "REDUCE closes a non-RANGE");
        if (!std::holds_alternative<Op>(u->arg)) fail(u, "REDUCE without a reduction op");
        break;
      }
      case Op::DOT4: {
        DType acc = u->dtype;
        if (u->src.size() != 3 || acc.scalar != ScalarKind::Int32 || u->src[0]->dtype != acc ||
            u->src[1]->dtype != dtypes::uint8.vec(static_cast<uint16_t>(4 * acc.lanes)) ||
            u->src[2]->dtype != dtypes::int8.vec(static_cast<uint16_t>(4 * acc.lanes)))
          fail(u, "DOT4 needs (acc <n x int32>, <4n x uint8>, <4n x int8>)");
        break;
      }
      case Op::REDUCE_AXIS: {
        const Shape& s = u->src.at(0)->shape();
        for (int64_t a : u->reduce_arg().axes)
          if (a < 0 || a >= static_cast<int64_t>(s.size()))
            fail(u, "REDUCE_AXIS axis out of range");
        break;
      }
      case Op::BUFFER:
        for (int64_t d : u->buffer().shape)
          if (d < 0) fail(u, "BUFFER with a negative dimension");
        break;
      default:
        break;
    }
    bool symbol_value = u->op == Op::CAST && u->src[0]->op == Op::DEFINE_VAR;
    if (stage_ == IrStage::Tensor && !symbol_value &&
        (arity || u->op == Op::CAST || u->op == Op::BITCAST)) {
      const Shape& s0 = u->src[0]->shape();
      for (const UOp* s : u->src)
        if (s->shape() != s0) fail(u, "sources of an elementwise op differ in shape");
    }
  }

 private:
  void alu(const UOp* u) {
    const std::vector<const UOp*>& s = u->src;
    if (u->op == Op::WHERE) {
      if (s[0]->dtype.scalar != ScalarKind::Bool) fail(u, "WHERE condition is not bool");
      if (s[1]->dtype != s[2]->dtype && !s[2]->is_invalid() && !s[1]->is_invalid())
        fail(u, "WHERE branches differ in dtype");
      return;
    }
    for (const UOp* x : s)
      if (x->dtype != s[0]->dtype)
        fail(u, str_cat("operand dtypes differ: ", s[0]->dtype.str(), " vs ", x->dtype.str()));
    if (ops::comparison().has(u->op)) {
      if (u->dtype.scalar != ScalarKind::Bool) fail(u, "comparison result is not bool");
    } else if (u->dtype != s[0]->dtype) {
      fail(u, "result dtype differs from operands");
    }
    if (u->op == Op::IDIV && s[0]->dtype.is_float())
      fail(u, "integer division on floats (use FDIV)");
    if (u->op == Op::FDIV && !s[0]->dtype.is_float()) fail(u, "FDIV on integers (use IDIV)");
  }

  [[noreturn]] void fail(const UOp* u, const std::string& what) {
    throw Error(str_cat("verify(", ir_stage_name(stage_), "): ", what, ": ", op_name(u->op), " ",
                        u->dtype.str(), " ", render(u, 4)));
  }

  IrStage stage_;
  OpSet allowed_;
};

}  // namespace

const char* ir_stage_name(IrStage s) {
  switch (s) {
    case IrStage::Tensor:
      return "tensor";
    case IrStage::Kernel:
      return "kernel";
    case IrStage::Lowered:
      return "lowered";
  }
  return "?";
}

void verify(const UOp* root, IrStage stage) {
  Verifier v(stage);
  for (const UOp* u : root->toposort()) v.node(u);
}

}  // namespace kiln
