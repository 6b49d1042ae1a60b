// The op set of the kiln IR, from the lazy tensor graph down to linearized kernels.
//
// One enum for every level keeps one rewrite engine and one printer; the verifier (verify.h)
// says which ops are legal at which stage.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

namespace kiln {

// clang-format off
#define KILN_OPS(X)                                                                            \
  /* graph structure */                                                                       \
  X(SINK) X(NOOP)                                                                             \
  /* leaves */                                                                                \
  X(CONST) X(VCONST) X(BUFFER) X(DEFINE_GLOBAL) X(DEFINE_VAR) X(RANGE) X(TASK) X(ACC)         \
  /* tensor-level movement ops (the lazy graph) */                                            \
  X(RESHAPE) X(PERMUTE) X(EXPAND) X(PAD) X(SHRINK) X(FLIP) X(WINDOW) X(GATHER)                \
  /* tensor-level reduction and materialization */                                            \
  X(REDUCE_AXIS) X(CONTIGUOUS)                                                                \
  /* kernel-level memory and loops */                                                         \
  X(INDEX) X(LOAD) X(STORE) X(REDUCE)                                                         \
  /* vectors */                                                                               \
  X(VECTORIZE) X(GEP)                                                                         \
  /* conversions */                                                                           \
  X(CAST) X(BITCAST)                                                                          \
  /* unary ALU */                                                                             \
  X(NEG) X(RECIP) X(SQRT) X(EXP) X(EXP2) X(LOG) X(LOG2) X(SIN) X(COS) X(TANH) X(ERF)          \
  X(SIGMOID) X(ABS) X(TRUNC) X(FLOOR) X(CEIL) X(ROUND)                                        \
  /* binary ALU */                                                                            \
  X(ADD) X(MUL) X(FDIV) X(IDIV) X(MOD) X(MAX) X(MIN) X(POW)                                   \
  X(CMPLT) X(CMPEQ) X(CMPNE) X(AND) X(OR) X(XOR) X(SHL) X(SHR)                                \
  /* ternary ALU */                                                                           \
  X(WHERE) X(MULACC)                                                                          \
  /* integer dot product (expanded kernels): DOT4(acc <n x i32>, a <4n x u8>, b <4n x i8>) is */ \
  /* acc plus, per lane l, the four products a[4l+j] * b[4l+j] (exact, int32 wrapping)       */ \
  X(DOT4)
// clang-format on

enum class Op : uint8_t {
#define KILN_OP_ENUM(name) name,
  KILN_OPS(KILN_OP_ENUM)
#undef KILN_OP_ENUM
};

constexpr int kNumOps = 0
#define KILN_OP_COUNT(name) +1
    KILN_OPS(KILN_OP_COUNT)
#undef KILN_OP_COUNT
    ;

const char* op_name(Op op);
bool parse_op(const std::string& name, Op* out);

// A set of ops as a bitmask (kNumOps <= 128).
class OpSet {
 public:
  constexpr OpSet() = default;
  OpSet(std::initializer_list<Op> ops) {
    for (Op o : ops) add(o);
  }
  void add(Op o) { bits_[static_cast<int>(o) / 64] |= 1ull << (static_cast<int>(o) % 64); }
  bool has(Op o) const {
    return (bits_[static_cast<int>(o) / 64] >> (static_cast<int>(o) % 64)) & 1;
  }
  OpSet operator|(const OpSet& o) const {
    OpSet r;
    r.bits_[0] = bits_[0] | o.bits_[0];
    r.bits_[1] = bits_[1] | o.bits_[1];
    return r;
  }
  bool operator==(const OpSet&) const = default;

 private:
  uint64_t bits_[2] = {0, 0};
};

namespace ops {
// Groups used across passes.
const OpSet& unary();           // NEG..ROUND
const OpSet& binary();          // ADD..SHR
const OpSet& ternary();         // WHERE, MULACC
const OpSet& alu();             // all of the above
const OpSet& commutative();     // ADD MUL MAX MIN CMPEQ CMPNE AND OR XOR
const OpSet& comparison();      // CMPLT CMPEQ CMPNE (result is bool)
const OpSet& movement();        // RESHAPE PERMUTE EXPAND PAD SHRINK FLIP
const OpSet& transcendental();  // EXP EXP2 LOG LOG2 SIN COS TANH ERF SIGMOID POW
}  // namespace ops

// The number of sources an ALU op takes (1, 2 or 3); 0 for non-ALU ops.
int alu_arity(Op op);

}  // namespace kiln
