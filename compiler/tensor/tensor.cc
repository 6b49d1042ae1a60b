#include "compiler/tensor/tensor.h"

#include <algorithm>
#include <numeric>

#include "compiler/support/error.h"

namespace kiln {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(str_cat(op, ": shapes ", shape_str(a), " and ", shape_str(b),
                          " do not broadcast (axis ", i, ": ", da, " vs ", db, ")"));
    r[i] = da == 1 ? db : da;
  }
  return r;
}

Tensor Tensor::make(Op op, DType dtype, std::vector<const UOp*> src, Arg arg) const {
  return Tensor(g_, g_->ctx().make(op, dtype, std::move(src), std::move(arg)));
}

int64_t Tensor::numel() const {
  return shape_numel(shape());
}

int64_t Tensor::norm_axis(int64_t axis, const char* op) const {
  int64_t n = ndim();
  if (axis < -n || axis >= n)
    throw Error(str_cat(op, ": axis ", axis, " is out of range for shape ", shape_str(shape())));
  return axis < 0 ? axis + n : axis;
}

int64_t Tensor::dim(int64_t axis) const {
  return shape()[static_cast<size_t>(norm_axis(axis, "dim"))];
}

// ---------------------------------------------------------------- leaves

Tensor Tensor::input(Graph& g, const std::string& name, DType dtype, const Shape& shape) {
  return Tensor(&g, g.add_input(name, dtype, shape));
}

Tensor Tensor::weight(Graph& g, const std::string& name, NDArray data) {
  return Tensor(&g, g.add_weight(name, std::move(data)));
}

Tensor Tensor::scalar(Graph& g, ConstValue v, DType dtype) {
  return Tensor(&g, g.ctx().const_value(dtype, v));
}

Tensor Tensor::full(Graph& g, const Shape& shape, double value, DType dtype) {
  ConstValue v = dtype.is_float() ? ConstValue::of_float(value)
                                  : ConstValue::of_int(static_cast<int64_t>(value));
  return scalar(g, v, dtype).expand(shape);
}

Tensor Tensor::full_int(Graph& g, const Shape& shape, int64_t value, DType dtype) {
  ConstValue v = dtype.is_float() ? ConstValue::of_float(static_cast<double>(value))
                                  : ConstValue::of_int(value);
  return scalar(g, v, dtype).expand(shape);
}

Tensor Tensor::like(double v) const {
  return full(*g_, {}, v, dtype());
}

// ---------------------------------------------------------------- movement

Tensor Tensor::reshape(const Shape& new_shape) const {
  Shape s = new_shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw Error("reshape: more than one -1 in " + shape_str(new_shape));
      infer = static_cast<int>(i);
    } else if (s[i] < 0) {
      throw Error("reshape: negative dimension in " + shape_str(new_shape));
    } else if (__builtin_mul_overflow(known, s[i], &known) || known > (int64_t{1} << 56)) {
      throw Error("reshape: " + shape_str(new_shape) + " has more than 2^56 elements");
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      throw Error(str_cat("reshape: cannot infer -1 in ", shape_str(new_shape), " for ", numel(),
                          " elements ", shape_str(shape())));
    s[static_cast<size_t>(infer)] = numel() / known;
    known *= s[static_cast<size_t>(infer)];
  }
  if (known != numel())
    throw Error(str_cat("reshape: ", shape_str(shape()), " (", numel(), " elements) cannot become ",
                        shape_str(s)));
  if (s == shape()) return *this;
  return make(Op::RESHAPE, dtype(), {u_}, s);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  if (static_cast<int64_t>(order.size()) != ndim())
    throw Error(str_cat("permute: order has ", order.size(), " axes, tensor ", shape_str(shape()),
                        " has ", ndim()));
  std::vector<int64_t> o(order.size());
  std::vector<bool> seen(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    o[i] = norm_axis(order[i], "permute");
    if (seen[static_cast<size_t>(o[i])])
      throw Error("permute: axis repeated in " + shape_str(order));
    seen[static_cast<size_t>(o[i])] = true;
  }
  bool identity = true;
  for (size_t i = 0; i < o.size(); ++i) identity &= o[i] == static_cast<int64_t>(i);
  if (identity) return *this;
  return make(Op::PERMUTE, dtype(), {u_}, o);
}

Tensor Tensor::expand(const Shape& target) const {
  if (target.size() < shape().size())
    throw Error(str_cat("expand: cannot expand ", shape_str(shape()), " to fewer axes ",
                        shape_str(target)));
  Shape s = shape();
  s.insert(s.begin(), target.size() - s.size(), 1);
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != target[i] && s[i] != 1)
      throw Error(str_cat("expand: cannot expand ", shape_str(shape()), " to ", shape_str(target),
                          " (axis ", i, ")"));
  Tensor r = reshape(s);
  if (s == target) return r;
  return r.make(Op::EXPAND, dtype(), {r.u_}, target);
}

Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>>& pads, double value) const {
  if (static_cast<int64_t>(pads.size()) != ndim())
    throw Error(str_cat("pad: ", pads.size(), " pad pairs for shape ", shape_str(shape())));
  // Negative pads crop first.
  std::vector<std::pair<int64_t, int64_t>> crop;
  bool cropping = false;
  for (size_t i = 0; i < pads.size(); ++i) {
    int64_t b = pads[i].first < 0 ? -pads[i].first : 0;
    int64_t e = shape()[i] - (pads[i].second < 0 ? -pads[i].second : 0);
    if (e < b)
      throw Error(
          str_cat("pad: negative padding removes more than axis ", i, " of ", shape_str(shape())));
    crop.push_back({b, e});
    cropping |= b != 0 || e != shape()[i];
  }
  Tensor x = cropping ? shrink(crop) : *this;
  std::vector<int64_t> arg;
  bool any = false;
  for (const auto& p : pads) {
    arg.push_back(std::max<int64_t>(p.first, 0));
    arg.push_back(std::max<int64_t>(p.second, 0));
    any |= p.first > 0 || p.second > 0;
  }
  if (!any) return x;
  return x.make(Op::PAD, dtype(), {x.u_, like(value).u_}, arg);
}

Tensor Tensor::shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const {
  if (static_cast<int64_t>(bounds.size()) != ndim())
    throw Error(str_cat("shrink: ", bounds.size(), " bounds for shape ", shape_str(shape())));
  std::vector<int64_t> arg;
  bool full_range = true;
  for (size_t i = 0; i < bounds.size(); ++i) {
    auto [b, e] = bounds[i];
    if (b < 0 || e < b || e > shape()[i])
      throw Error(str_cat("shrink: bounds [", b, ",", e, ") out of range for axis ", i, " of ",
                          shape_str(shape())));
    arg.push_back(b);
    arg.push_back(e);
    full_range &= b == 0 && e == shape()[i];
  }
  if (full_range) return *this;
  return make(Op::SHRINK, dtype(), {u_}, arg);
}

Tensor Tensor::flip(const std::vector<int64_t>& axes) const {
  std::vector<int64_t> a;
  for (int64_t x : axes) {
    int64_t n = norm_axis(x, "flip");
    if (std::find(a.begin(), a.end(), n) != a.end())
      throw Error("flip: axis repeated in " + shape_str(axes));
    if (shape()[static_cast<size_t>(n)] > 1) a.push_back(n);
  }
  if (a.empty()) return *this;
  std::sort(a.begin(), a.end());
  return make(Op::FLIP, dtype(), {u_}, a);
}

Tensor Tensor::window(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                      const std::vector<int64_t>& dilation) const {
  size_t n = kernel.size();
  if (stride.size() != n || dilation.size() != n || static_cast<int64_t>(n) > ndim() || n == 0)
    throw Error(str_cat("window: ", n, " kernel dims, ", stride.size(), " strides, ",
                        dilation.size(), " dilations for shape ", shape_str(shape())));
  std::vector<int64_t> arg;
  for (size_t j = 0; j < n; ++j) {
    int64_t i = shape()[shape().size() - n + j];
    if (kernel[j] < 1 || stride[j] < 1 || dilation[j] < 1)
      throw Error("window: kernel, stride and dilation must be >= 1");
    if (dilation[j] * (kernel[j] - 1) + 1 > i)
      throw Error(str_cat("window: kernel ", kernel[j], " (dilation ", dilation[j],
                          ") is larger than axis of size ", i, " in ", shape_str(shape())));
  }
  arg.insert(arg.end(), kernel.begin(), kernel.end());
  arg.insert(arg.end(), stride.begin(), stride.end());
  arg.insert(arg.end(), dilation.begin(), dilation.end());
  return make(Op::WINDOW, dtype(), {u_}, arg);
}

Tensor Tensor::gather(const Tensor& indices, int64_t axis) const {
  if (!indices.dtype().is_int())
    throw Error("gather: indices must be integers, got " + indices.dtype().str());
  int64_t a = norm_axis(axis, "gather");
  if (shape()[static_cast<size_t>(a)] == 0)
    throw Error("gather: axis " + std::to_string(a) + " has size 0");
  return make(Op::GATHER, dtype(), {u_, indices.u_}, a);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> o(static_cast<size_t>(ndim()));
  std::iota(o.begin(), o.end(), 0);
  std::swap(o[static_cast<size_t>(norm_axis(a, "transpose"))],
            o[static_cast<size_t>(norm_axis(b, "transpose"))]);
  return permute(o);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  int64_t n = ndim() + 1;
  if (axis < -n || axis >= n)
    throw Error(str_cat("unsqueeze: axis ", axis, " out of range for ", shape_str(shape())));
  if (axis < 0) axis += n;
  Shape s = shape();
  s.insert(s.begin() + axis, 1);
  return reshape(s);
}

Tensor Tensor::squeeze(const std::vector<int64_t>& axes) const {
  Shape s;
  std::vector<int64_t> a;
  for (int64_t x : axes) a.push_back(norm_axis(x, "squeeze"));
  for (int64_t i = 0; i < ndim(); ++i) {
    bool drop = axes.empty() ? shape()[static_cast<size_t>(i)] == 1
                             : std::find(a.begin(), a.end(), i) != a.end();
    if (drop && shape()[static_cast<size_t>(i)] != 1)
      throw Error(str_cat("squeeze: axis ", i, " of ", shape_str(shape()), " is not 1"));
    if (!drop) s.push_back(shape()[static_cast<size_t>(i)]);
  }
  return reshape(s);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (ndim() == 0) return reshape({1});
  int64_t s = norm_axis(start, "flatten"), e = norm_axis(end, "flatten");
  Shape r(shape().begin(), shape().begin() + s);
  int64_t p = 1;
  for (int64_t i = s; i <= e; ++i) p *= shape()[static_cast<size_t>(i)];
  r.push_back(p);
  r.insert(r.end(), shape().begin() + e + 1, shape().end());
  return reshape(r);
}

Tensor Tensor::contiguous() const {
  return make(Op::CONTIGUOUS, dtype(), {u_});
}

// ---------------------------------------------------------------- reductions

Tensor Tensor::reduce(Op op, const std::vector<int64_t>& axes, bool keepdims) const {
  std::vector<int64_t> a;
  if (axes.empty()) {
    for (int64_t i = 0; i < ndim(); ++i) a.push_back(i);
  } else {
    for (int64_t x : axes) {
      int64_t n = norm_axis(x, op_name(op));
      if (std::find(a.begin(), a.end(), n) == a.end()) a.push_back(n);
    }
  }
  std::sort(a.begin(), a.end());
  Shape kept = shape();
  std::vector<int64_t> real;  // axes whose size is not already 1
  for (int64_t x : a) {
    if (kept[static_cast<size_t>(x)] != 1) real.push_back(x);
    kept[static_cast<size_t>(x)] = 1;
  }
  Tensor r = *this;
  if (!real.empty()) {
    for (int64_t x : real)
      if (shape()[static_cast<size_t>(x)] == 0)
        throw Error(str_cat("reduce: axis ", x, " of ", shape_str(shape()), " is empty"));
    r = make(Op::REDUCE_AXIS, dtype(), {u_}, ReduceArg{op, real});
  }
  if (keepdims) return r;
  Shape out;
  for (int64_t i = 0; i < ndim(); ++i)
    if (std::find(a.begin(), a.end(), i) == a.end()) out.push_back(shape()[static_cast<size_t>(i)]);
  return r.reshape(out);
}

Tensor Tensor::sum(const std::vector<int64_t>& axes, bool keepdims) const {
  return reduce(Op::ADD, axes, keepdims);
}
Tensor Tensor::max(const std::vector<int64_t>& axes, bool keepdims) const {
  return reduce(Op::MAX, axes, keepdims);
}
Tensor Tensor::min(const std::vector<int64_t>& axes, bool keepdims) const {
  return reduce(Op::MIN, axes, keepdims);
}
Tensor Tensor::prod(const std::vector<int64_t>& axes, bool keepdims) const {
  return reduce(Op::MUL, axes, keepdims);
}

Tensor Tensor::mean(const std::vector<int64_t>& axes, bool keepdims) const {
  Tensor s = sum(axes, keepdims);
  int64_t count = numel() / std::max<int64_t>(1, s.numel());
  return s.div(s.like(static_cast<double>(count)));
}

// ---------------------------------------------------------------- conversions

Tensor Tensor::cast(DType d) const {
  if (d == dtype()) return *this;
  return make(Op::CAST, d, {u_});
}

Tensor Tensor::bitcast(DType d) const {
  if (d.itemsize() != dtype().itemsize())
    throw Error("bitcast: " + dtype().str() + " and " + d.str() + " differ in size");
  if (d == dtype()) return *this;
  return make(Op::BITCAST, d, {u_});
}

// ---------------------------------------------------------------- elementwise

Tensor Tensor::unary(Op op) const {
  bool float_only = op != Op::NEG && op != Op::ABS;
  if (float_only && !dtype().is_float())
    throw Error(str_cat(op_name(op), ": needs a float tensor, got ", dtype().str(), " ",
                        shape_str(shape())));
  if (dtype().is_bool()) throw Error(str_cat(op_name(op), ": not defined on bool"));
  return make(op, dtype(), {u_});
}

Tensor Tensor::neg() const {
  if (dtype().is_float()) return unary(Op::NEG);
  if (dtype().is_bool()) throw Error("neg: not defined on bool");
  return mul(like(-1));
}

Tensor Tensor::logical_not() const {
  if (!dtype().is_bool()) throw Error("logical_not: needs a bool tensor, got " + dtype().str());
  return binary(Op::XOR, full(*g_, {}, 1, dtypes::bool_));
}

Tensor Tensor::binary(Op op, const Tensor& b) const {
  if (dtype() != b.dtype())
    throw Error(str_cat(op_name(op), ": operand dtypes differ: ", dtype().str(), " ",
                        shape_str(shape()), " vs ", b.dtype().str(), " ", shape_str(b.shape())));
  bool logic = op == Op::AND || op == Op::OR || op == Op::XOR || op == Op::SHL || op == Op::SHR;
  if (logic && dtype().is_float())
    throw Error(str_cat(op_name(op), ": not defined on ", dtype().str()));
  if (op == Op::IDIV && dtype().is_float()) throw Error("idiv: not defined on floats (use div)");
  if (op == Op::FDIV && !dtype().is_float())
    throw Error("fdiv: not defined on " + dtype().str() + " (use div)");
  Shape s = broadcast_shapes(shape(), b.shape(), op_name(op));
  Tensor x = expand(s), y = b.expand(s);
  DType out = ops::comparison().has(op) ? dtypes::bool_ : dtype();
  return make(op, out, {x.u_, y.u_});
}

Tensor Tensor::sub(const Tensor& b) const {
  if (dtype().is_bool()) throw Error("sub: not defined on bool");
  return add(b.neg());
}

Tensor Tensor::div(const Tensor& b) const {
  return binary(dtype().is_float() ? Op::FDIV : Op::IDIV, b);
}

Tensor Tensor::le(const Tensor& b) const {
  if (dtype().is_float()) return lt(b).logical_or(eq(b));  // NaN compares false, as it must
  return b.lt(*this).logical_not();
}

Tensor Tensor::ge(const Tensor& b) const {
  return b.le(*this);
}

Tensor Tensor::where(const Tensor& a, const Tensor& b) const {
  if (!dtype().is_bool()) throw Error("where: condition must be bool, got " + dtype().str());
  if (a.dtype() != b.dtype())
    throw Error("where: branch dtypes differ: " + a.dtype().str() + " vs " + b.dtype().str());
  Shape s = broadcast_shapes(broadcast_shapes(shape(), a.shape(), "where"), b.shape(), "where");
  Tensor c = expand(s), x = a.expand(s), y = b.expand(s);
  return make(Op::WHERE, a.dtype(), {c.u_, x.u_, y.u_});
}

}  // namespace kiln
