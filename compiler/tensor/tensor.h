// The lazy Tensor API: every op builds UOps in the Graph's Context; nothing runs.
//
// Primitives map one-to-one to tensor-level UOps: elementwise ALU ops, casts, reductions,
// movement ops (reshape, permute, expand, pad, shrink, flip, window), gather, constants and
// buffers. Composite ops (tensor/nn.h, tensor/indexing.h, tensor/linalg.h) are built from them.
//
// Shape and dtype errors are raised here, when the op is built: kiln::Error names the op and
// the shapes or dtypes involved.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/tensor/graph.h"

namespace kiln {

class Tensor {
 public:
  Tensor() = default;
  Tensor(Graph* g, const UOp* u) : g_(g), u_(u) {}

  // ---- leaves ----
  static Tensor input(Graph& g, const std::string& name, DType dtype, const Shape& shape);
  static Tensor weight(Graph& g, const std::string& name, NDArray data);
  // A tensor of `shape` filled with `value` (a broadcast scalar constant).
  static Tensor full(Graph& g, const Shape& shape, double value, DType dtype);
  static Tensor full_int(Graph& g, const Shape& shape, int64_t value, DType dtype);
  static Tensor scalar(Graph& g, ConstValue v, DType dtype);

  const UOp* uop() const { return u_; }
  Graph* graph() const { return g_; }
  const Shape& shape() const { return u_->shape(); }
  DType dtype() const { return u_->dtype; }
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const;
  int64_t dim(int64_t axis) const;  // negative axes count from the end
  bool valid() const { return u_ != nullptr; }

  // ---- movement ----
  Tensor reshape(const Shape& shape) const;  // one -1 allowed
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor expand(const Shape& shape) const;  // numpy broadcast to shape (may add leading dims)
  // pads[i] = (before, after) per axis; negative amounts shrink.
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& pads, double value = 0.0) const;
  Tensor shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const;
  Tensor flip(const std::vector<int64_t>& axes) const;
  // Sliding windows over the last k.size() axes: (..., i...) -> (..., out..., k...).
  Tensor window(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& dilation) const;
  // numpy.take: indices (any integer dtype, negative counts from the end) along `axis`.
  Tensor gather(const Tensor& indices, int64_t axis) const;
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor squeeze(const std::vector<int64_t>& axes) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  // Forces the value into a buffer of its own (a fusion boundary).
  Tensor contiguous() const;

  // ---- reductions (axes may be negative; empty = all axes) ----
  Tensor reduce(Op op, const std::vector<int64_t>& axes, bool keepdims) const;
  Tensor sum(const std::vector<int64_t>& axes = {}, bool keepdims = false) const;
  Tensor max(const std::vector<int64_t>& axes = {}, bool keepdims = false) const;
  Tensor min(const std::vector<int64_t>& axes = {}, bool keepdims = false) const;
  Tensor prod(const std::vector<int64_t>& axes = {}, bool keepdims = false) const;
  Tensor mean(const std::vector<int64_t>& axes = {}, bool keepdims = false) const;

  // ---- conversions ----
  Tensor cast(DType d) const;
  Tensor bitcast(DType d) const;

  // ---- elementwise ----
  Tensor unary(Op op) const;
  Tensor neg() const;
  Tensor recip() const { return unary(Op::RECIP); }
  Tensor sqrt() const { return unary(Op::SQRT); }
  Tensor exp() const { return unary(Op::EXP); }
  Tensor exp2() const { return unary(Op::EXP2); }
  Tensor log() const { return unary(Op::LOG); }
  Tensor log2() const { return unary(Op::LOG2); }
  Tensor sin() const { return unary(Op::SIN); }
  Tensor cos() const { return unary(Op::COS); }
  Tensor tanh() const { return unary(Op::TANH); }
  Tensor erf() const { return unary(Op::ERF); }
  Tensor sigmoid() const { return unary(Op::SIGMOID); }
  Tensor abs() const { return unary(Op::ABS); }
  Tensor trunc() const { return unary(Op::TRUNC); }
  Tensor floor() const { return unary(Op::FLOOR); }
  Tensor ceil() const { return unary(Op::CEIL); }
  Tensor round() const { return unary(Op::ROUND); }
  Tensor logical_not() const;

  // Binary ops broadcast numpy-style; both operands must have the same dtype.
  Tensor binary(Op op, const Tensor& b) const;
  Tensor add(const Tensor& b) const { return binary(Op::ADD, b); }
  Tensor sub(const Tensor& b) const;
  Tensor mul(const Tensor& b) const { return binary(Op::MUL, b); }
  Tensor div(const Tensor& b) const;  // float: FDIV; integer: truncating IDIV
  Tensor mod(const Tensor& b) const { return binary(Op::MOD, b); }
  Tensor maximum(const Tensor& b) const { return binary(Op::MAX, b); }
  Tensor minimum(const Tensor& b) const { return binary(Op::MIN, b); }
  Tensor pow(const Tensor& b) const { return binary(Op::POW, b); }
  Tensor lt(const Tensor& b) const { return binary(Op::CMPLT, b); }
  Tensor gt(const Tensor& b) const { return b.binary(Op::CMPLT, *this); }
  Tensor le(const Tensor& b) const;
  Tensor ge(const Tensor& b) const;
  Tensor eq(const Tensor& b) const { return binary(Op::CMPEQ, b); }
  Tensor ne(const Tensor& b) const { return binary(Op::CMPNE, b); }
  Tensor logical_and(const Tensor& b) const { return binary(Op::AND, b); }
  Tensor logical_or(const Tensor& b) const { return binary(Op::OR, b); }
  Tensor logical_xor(const Tensor& b) const { return binary(Op::XOR, b); }
  // cond.where(a, b): a where cond else b (all three broadcast).
  Tensor where(const Tensor& a, const Tensor& b) const;

  // Scalar operands take this tensor's dtype.
  Tensor add(double v) const { return add(like(v)); }
  Tensor sub(double v) const { return sub(like(v)); }
  Tensor mul(double v) const { return mul(like(v)); }
  Tensor div(double v) const { return div(like(v)); }
  Tensor maximum(double v) const { return maximum(like(v)); }
  Tensor minimum(double v) const { return minimum(like(v)); }
  Tensor pow(double v) const { return pow(like(v)); }
  Tensor lt(double v) const { return lt(like(v)); }
  Tensor gt(double v) const { return gt(like(v)); }
  // A scalar constant of this tensor's dtype (shape ()).
  Tensor like(double v) const;

  // The axis normalized to [0, ndim) (negative counts from the end); throws naming `op`.
  int64_t norm_axis(int64_t axis, const char* op) const;

 private:
  Tensor make(Op op, DType dtype, std::vector<const UOp*> src, Arg arg = {}) const;

  Graph* g_ = nullptr;
  const UOp* u_ = nullptr;
};

// numpy broadcast of two shapes; throws naming `op` if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace kiln
