// UOp: the one node type of the kiln IR.
//
// A UOp is {op, dtype, src[], arg}. Nodes are immutable and hash-consed in a Context: building a
// node that is structurally equal to an existing one returns the existing object, so pointer
// equality is structural equality within one Context. The intern hash is computed once, at
// construction, from (op, dtype, arg) and the identities (addresses) of the sources.
//
// Derived facts are computed on first use and cached in the node: the topological order of its
// graph, integer bounds (vmin/vmax), the set of open RANGE nodes, the tensor shape of tensor-level
// nodes, and a stable structural digest (SHA-256 based, identical across processes and runs) that
// keys on-disk caches.
//
// Thread-safety: a Context and its nodes belong to one compile and one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/ops.h"

namespace kiln {

class Context;
class UOp;
using UOpPtr = const UOp*;
using Shape = std::vector<int64_t>;
// "(2,3,4)", for messages.
std::string shape_str(const Shape& s);

// The value of a CONST. Integers (including bool and index) are held as int64 (uint64 by its bit
// pattern); floats as double. `invalid` marks a masked index: an index expression
// `where(valid, idx, invalid)` says the access must not happen when `valid` is false.
struct ConstValue {
  enum class Kind : uint8_t { Int, Float, Invalid };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0.0;

  static ConstValue of_int(int64_t v) { return {Kind::Int, v, 0.0}; }
  static ConstValue of_float(double v) { return {Kind::Float, 0, v}; }
  static ConstValue invalid() { return {Kind::Invalid, 0, 0.0}; }
  bool is_invalid() const { return kind == Kind::Invalid; }
  // Value as double / int64 whatever the kind (floats truncate toward zero).
  double as_double() const { return kind == Kind::Float ? f : static_cast<double>(i); }
  int64_t as_int() const { return kind == Kind::Float ? static_cast<int64_t>(f) : i; }
  // Bitwise equality for floats, so that NaN == NaN and -0.0 != 0.0 for interning.
  bool operator==(const ConstValue& o) const;
  std::string str() const;
};

// The kind of loop a RANGE stands for.
enum class AxisKind : uint8_t {
  Loop,      // an output loop of a kernel
  Reduce,    // a reduction loop (closed by a REDUCE)
  Upcast,    // expanded into vector lanes / registers
  Unroll,    // a reduction loop unrolled in place
  Parallel,  // an output loop whose iterations are split across tasks
};
const char* axis_kind_name(AxisKind k);

struct RangeArg {
  int64_t id = 0;
  AxisKind kind = AxisKind::Loop;
  bool operator==(const RangeArg&) const = default;
};

enum class BufferKind : uint8_t { Input, Weight, Output, Intermediate };
const char* buffer_kind_name(BufferKind k);

// A tensor-level buffer: a model input or a weight (whose bytes live outside the IR, keyed by id).
struct BufferArg {
  std::string name;
  int64_t id = 0;
  BufferKind kind = BufferKind::Input;
  Shape shape;
  bool operator==(const BufferArg&) const = default;
};

// REDUCE_AXIS: the reduction op (ADD, MUL, MAX, MIN) and the reduced axes (kept as size 1).
struct ReduceArg {
  Op op = Op::ADD;
  std::vector<int64_t> axes;
  bool operator==(const ReduceArg&) const = default;
};

// DEFINE_VAR: a named symbolic integer with inclusive bounds. `slot` is its position in the
// values a kernel receives at run time (the ABI's `vars`; the package's symbol index).
struct VarArg {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
  int64_t slot = 0;
  bool operator==(const VarArg&) const = default;
};

using Arg = std::variant<std::monostate, ConstValue, int64_t, std::string, std::vector<int64_t>,
                         RangeArg, BufferArg, ReduceArg, VarArg, Op, std::vector<ConstValue>>;

size_t hash_arg(const Arg& a);
std::string arg_str(const Arg& a);

// A 128-bit content digest, stable across runs.
struct Digest {
  std::array<uint64_t, 2> w{0, 0};
  bool operator==(const Digest&) const = default;
  bool operator<(const Digest& o) const { return w < o.w; }
  std::string hex() const;
};

class UOp {
 public:
  const Op op;
  const DType dtype;
  const std::vector<UOpPtr> src;
  const Arg arg;

  Context* ctx() const { return ctx_; }
  size_t hash() const { return hash_; }
  // Creation order within the Context: a deterministic tie-breaker for orderings.
  uint64_t id() const { return id_; }

  // ---- typed access to arg ----
  const ConstValue& cval() const;
  int64_t iarg() const;  // for int64_t args
  const std::string& sarg() const;
  const std::vector<int64_t>& varg() const;
  const RangeArg& range() const;
  const BufferArg& buffer() const;
  const ReduceArg& reduce_arg() const;
  const VarArg& var() const;
  Op op_arg() const;

  bool is_const() const { return op == Op::CONST; }
  bool is_const(int64_t v) const;  // an integer/bool constant equal to v
  bool is_invalid() const { return op == Op::CONST && cval().is_invalid(); }

  // ---- derived, cached ----
  // All nodes reachable from this one (including it), sources before users, deterministic.
  const std::vector<UOpPtr>& toposort() const;
  // Inclusive integer bounds by interval analysis (bool: 0/1). Floats give the dtype's full range.
  int64_t vmin() const;
  int64_t vmax() const;
  // The RANGE nodes this node depends on that no REDUCE below it closes, sorted by range id.
  const std::vector<UOpPtr>& ranges() const;
  // Shape of a tensor-level node. Throws kiln::Error naming the op if the node has none.
  const Shape& shape() const;
  bool has_shape() const;
  const Shape* shape_ptr() const;  // nullptr for nodes that have no tensor shape
  // Stable structural digest.
  const Digest& digest() const;
  // Node count of the graph below (DAG, each node once).
  size_t graph_size() const { return toposort().size(); }

  // ---- construction helpers (the new node lives in the same Context) ----
  UOpPtr alu(Op op, UOpPtr b) const;
  UOpPtr alu(Op op, UOpPtr b, UOpPtr c) const;
  UOpPtr alu(Op op) const;
  UOpPtr const_like(int64_t v) const;
  UOpPtr const_like(double v) const;
  UOpPtr add(UOpPtr b) const { return alu(Op::ADD, b); }
  UOpPtr add(int64_t b) const { return add(const_like(b)); }
  UOpPtr sub(UOpPtr b) const { return add(b->neg()); }
  UOpPtr sub(int64_t b) const { return add(-b); }
  UOpPtr mul(UOpPtr b) const { return alu(Op::MUL, b); }
  UOpPtr mul(int64_t b) const { return mul(const_like(b)); }
  UOpPtr idiv(UOpPtr b) const { return alu(Op::IDIV, b); }
  UOpPtr idiv(int64_t b) const { return idiv(const_like(b)); }
  UOpPtr mod(UOpPtr b) const { return alu(Op::MOD, b); }
  UOpPtr mod(int64_t b) const { return mod(const_like(b)); }
  UOpPtr lt(UOpPtr b) const { return alu(Op::CMPLT, b); }
  UOpPtr lt(int64_t b) const { return lt(const_like(b)); }
  UOpPtr ge(UOpPtr b) const { return lt(b)->logical_not(); }
  UOpPtr ge(int64_t b) const { return lt(b)->logical_not(); }
  UOpPtr ne(UOpPtr b) const { return alu(Op::CMPNE, b); }
  UOpPtr eq(UOpPtr b) const { return alu(Op::CMPEQ, b); }
  UOpPtr maximum(UOpPtr b) const { return alu(Op::MAX, b); }
  UOpPtr minimum(UOpPtr b) const { return alu(Op::MIN, b); }
  UOpPtr logical_and(UOpPtr b) const { return alu(Op::AND, b); }
  UOpPtr logical_or(UOpPtr b) const { return alu(Op::OR, b); }
  UOpPtr logical_not() const;  // bool: x ^ true
  UOpPtr neg() const;          // ints: x * -1; floats: NEG
  UOpPtr where(UOpPtr a, UOpPtr b) const { return alu(Op::WHERE, a, b); }
  UOpPtr cast(DType d) const;
  // A copy of this node with other sources (same op, dtype, arg).
  UOpPtr with_src(std::vector<UOpPtr> new_src) const;
  UOpPtr with_arg(Arg new_arg) const;

 private:
  friend class Context;
  UOp(Context* ctx, Op op, DType dtype, std::vector<UOpPtr> src, Arg arg, size_t hash, uint64_t id);

  Context* ctx_;
  size_t hash_;
  uint64_t id_;
  // caches
  mutable std::unique_ptr<std::vector<UOpPtr>> topo_;
  mutable std::unique_ptr<std::vector<UOpPtr>> ranges_;
  mutable std::unique_ptr<Shape> shape_;
  mutable bool shape_known_ = false;
  mutable std::unique_ptr<Digest> digest_;
  mutable bool bounds_done_ = false;
  mutable int64_t vmin_ = 0, vmax_ = 0;
  friend void compute_bounds(const UOp* u);
};

class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // The interned node. Result dtype must be given; see `alu` helpers for ALU ops.
  UOpPtr make(Op op, DType dtype, std::vector<UOpPtr> src = {}, Arg arg = {});

  UOpPtr const_int(DType d, int64_t v);
  UOpPtr const_float(DType d, double v);
  UOpPtr const_bool(bool v) { return const_int(dtypes::bool_, v ? 1 : 0); }
  UOpPtr const_index(int64_t v) { return const_int(dtypes::index, v); }
  UOpPtr const_value(DType d, ConstValue v);
  UOpPtr invalid() { return const_value(dtypes::index, ConstValue::invalid()); }
  // A RANGE over [0, end) with the given id and kind.
  UOpPtr range(int64_t end, int64_t id, AxisKind kind = AxisKind::Loop);
  UOpPtr range(UOpPtr end, int64_t id, AxisKind kind = AxisKind::Loop);
  // A symbolic integer in [min, max].
  UOpPtr variable(const std::string& name, int64_t min, int64_t max, int64_t slot = 0);

  size_t size() const { return nodes_.size(); }

 private:
  // Lookup key, so that finding an existing node builds nothing.
  struct Key {
    Op op;
    DType dtype;
    const std::vector<UOpPtr>* src;
    const Arg* arg;
    size_t hash;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const UOp* u) const { return u->hash(); }
    size_t operator()(const Key& k) const { return k.hash; }
  };
  struct Eq {
    using is_transparent = void;
    bool operator()(const UOp* a, const UOp* b) const;
    bool operator()(const Key& k, const UOp* b) const;
    bool operator()(const UOp* a, const Key& k) const { return (*this)(k, a); }
  };
  std::vector<std::unique_ptr<UOp>> nodes_;
  std::unordered_set<UOp*, Hash, Eq> table_;
};

// Result dtype of an ALU op given its first (non-condition) operand.
DType alu_result_dtype(Op op, const std::vector<UOpPtr>& src);

}  // namespace kiln
