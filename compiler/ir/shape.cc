// Tensor shapes of tensor-level UOps (the lazy graph), derived from sources and args.
// The Tensor API validates shapes when it builds ops; here a bad shape is an internal error.
#include <numeric>

#include "compiler/ir/uop.h"
#include "compiler/ir/walk.h"
#include "compiler/support/error.h"

namespace kiln {

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + ")";
}

namespace {

bool has_tensor_shape(Op op) {
  if (alu_arity(op) > 0) return true;
  switch (op) {
    case Op::BUFFER:
    case Op::CONST:
    case Op::RESHAPE:
    case Op::PERMUTE:
    case Op::EXPAND:
    case Op::PAD:
    case Op::SHRINK:
    case Op::FLIP:
    case Op::WINDOW:
    case Op::GATHER:
    case Op::REDUCE_AXIS:
    case Op::CONTIGUOUS:
    case Op::CAST:
    case Op::BITCAST:
      return true;
    default:
      return false;
  }
}

Shape infer(const UOp* u) {
  auto src_shape = [&](size_t i) -> const Shape& { return *u->src[i]->shape_ptr(); };
  switch (u->op) {
    case Op::BUFFER:
      return u->buffer().shape;
    case Op::CONST:
      return {};
    case Op::RESHAPE:
    case Op::EXPAND:
      return u->varg();
    case Op::PERMUTE: {
      const Shape& s = src_shape(0);
      const auto& p = u->varg();
      KILN_CHECK(p.size() == s.size(), "PERMUTE ", shape_str(p), " of shape ", shape_str(s));
      Shape r(s.size());
      for (size_t i = 0; i < p.size(); ++i) r[i] = s.at(p[i]);
      return r;
    }
    case Op::PAD: {
      Shape r = src_shape(0);
      const auto& p = u->varg();
      KILN_CHECK(p.size() == 2 * r.size(), "PAD args ", shape_str(p), " for shape ", shape_str(r));
      for (size_t i = 0; i < r.size(); ++i) r[i] += p[2 * i] + p[2 * i + 1];
      return r;
    }
    case Op::SHRINK: {
      Shape r = src_shape(0);
      const auto& p = u->varg();
      KILN_CHECK(p.size() == 2 * r.size(), "SHRINK args ", shape_str(p), " for shape ",
                 shape_str(r));
      for (size_t i = 0; i < r.size(); ++i) r[i] = p[2 * i + 1] - p[2 * i];
      return r;
    }
    case Op::WINDOW: {
      // arg = kernel[n], stride[n], dilation[n] over the last n dims; output (..., out[n],
      // kernel[n])
      Shape s = src_shape(0);
      const auto& a = u->varg();
      size_t n = a.size() / 3;
      KILN_CHECK(a.size() == 3 * n && n <= s.size(), "WINDOW args ", shape_str(a), " for shape ",
                 shape_str(s));
      Shape r(s.begin(), s.end() - static_cast<std::ptrdiff_t>(n));
      for (size_t j = 0; j < n; ++j) {
        int64_t i = s[s.size() - n + j], k = a[j], st = a[n + j], d = a[2 * n + j];
        r.push_back((i - d * (k - 1) - 1) / st + 1);
      }
      for (size_t j = 0; j < n; ++j) r.push_back(a[j]);
      return r;
    }
    case Op::GATHER: {
      // src[0] data, src[1] indices, arg = axis: data.shape[:axis] + idx.shape +
      // data.shape[axis+1:]
      const Shape& d = src_shape(0);
      const Shape& idx = src_shape(1);
      int64_t axis = u->iarg();
      Shape r(d.begin(), d.begin() + axis);
      r.insert(r.end(), idx.begin(), idx.end());
      r.insert(r.end(), d.begin() + axis + 1, d.end());
      return r;
    }
    case Op::REDUCE_AXIS: {
      Shape r = src_shape(0);
      for (int64_t a : u->reduce_arg().axes) r.at(a) = 1;
      return r;
    }
    case Op::WHERE:
      return src_shape(1);
    default:
      return src_shape(0);  // FLIP, CONTIGUOUS, CAST, BITCAST, ALU
  }
}

}  // namespace

const Shape* UOp::shape_ptr() const {
  if (shape_known_) return shape_.get();
  walk_uncached(
      this, [](const UOp* n) { return n->shape_known_; },
      [](const UOp* n) {
        n->shape_known_ = true;
        if (!has_tensor_shape(n->op)) return;
        // A symbol's value as a tensor (a loop's iteration number): a scalar.
        if (n->op == Op::CAST && n->src[0]->op == Op::DEFINE_VAR) {
          n->shape_ = std::make_unique<Shape>();
          return;
        }
        for (const UOp* s : n->src)
          if (!s->shape_) return;  // a kernel-level source: this node is not a tensor
        n->shape_ = std::make_unique<Shape>(infer(n));
      });
  return shape_.get();
}

bool UOp::has_shape() const {
  return shape_ptr() != nullptr;
}

const Shape& UOp::shape() const {
  const Shape* s = shape_ptr();
  if (!s) throw InternalError(str_cat(op_name(op), " node has no tensor shape"));
  return *s;
}

}  // namespace kiln
