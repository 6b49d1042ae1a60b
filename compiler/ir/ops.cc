#include "compiler/ir/ops.h"

namespace kiln {

namespace {
constexpr const char* kNames[] = {
#define KILN_OP_NAME(name) #name,
    KILN_OPS(KILN_OP_NAME)
#undef KILN_OP_NAME
};
static_assert(kNumOps <= 128, "OpSet holds at most 128 ops");
}  // namespace

const char* op_name(Op op) {
  return kNames[static_cast<int>(op)];
}

bool parse_op(const std::string& name, Op* out) {
  for (int i = 0; i < kNumOps; ++i) {
    if (name == kNames[i]) {
      *out = static_cast<Op>(i);
      return true;
    }
  }
  return false;
}

namespace ops {
const OpSet& unary() {
  static const OpSet s = {Op::NEG,  Op::RECIP, Op::SQRT,  Op::EXP,  Op::EXP2, Op::LOG,
                          Op::LOG2, Op::SIN,   Op::COS,   Op::TANH, Op::ERF,  Op::SIGMOID,
                          Op::ABS,  Op::TRUNC, Op::FLOOR, Op::CEIL, Op::ROUND};
  return s;
}
const OpSet& binary() {
  static const OpSet s = {Op::ADD, Op::MUL, Op::FDIV,  Op::IDIV,  Op::MOD,   Op::MAX,
                          Op::MIN, Op::POW, Op::CMPLT, Op::CMPEQ, Op::CMPNE, Op::AND,
                          Op::OR,  Op::XOR, Op::SHL,   Op::SHR};
  return s;
}
const OpSet& ternary() {
  static const OpSet s = {Op::WHERE, Op::MULACC};
  return s;
}
const OpSet& alu() {
  static const OpSet s = unary() | binary() | ternary();
  return s;
}
const OpSet& commutative() {
  static const OpSet s = {Op::ADD,   Op::MUL, Op::MAX, Op::MIN, Op::CMPEQ,
                          Op::CMPNE, Op::AND, Op::OR,  Op::XOR};
  return s;
}
const OpSet& comparison() {
  static const OpSet s = {Op::CMPLT, Op::CMPEQ, Op::CMPNE};
  return s;
}
const OpSet& movement() {
  static const OpSet s = {Op::RESHAPE, Op::PERMUTE, Op::EXPAND, Op::PAD,
                          Op::SHRINK,  Op::FLIP,    Op::WINDOW};
  return s;
}
const OpSet& transcendental() {
  static const OpSet s = {Op::EXP, Op::EXP2, Op::LOG, Op::LOG2,    Op::SIN,
                          Op::COS, Op::TANH, Op::ERF, Op::SIGMOID, Op::POW};
  return s;
}
}  // namespace ops

int alu_arity(Op op) {
  if (ops::unary().has(op)) return 1;
  if (ops::binary().has(op)) return 2;
  if (ops::ternary().has(op)) return 3;
  return 0;
}

}  // namespace kiln
