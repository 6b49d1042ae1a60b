#include "compiler/tensor/ndarray.h"

#include "compiler/ir/const_eval.h"
#include "compiler/support/error.h"
#include "compiler/support/half.h"

namespace kiln {

int64_t shape_numel(const Shape& s) {
  // Shapes come from models and graph files: a product that overflows (or whose bytes could
  // not be addressed) is the input's error, said here once rather than wrapped silently.
  constexpr int64_t kMaxElements = int64_t{1} << 56;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements || n < -kMaxElements) {
      std::string dims;
      for (int64_t e : s) dims += (dims.empty() ? "" : ",") + std::to_string(e);
      throw Error("shape (" + dims + ") has more than 2^56 elements");
    }
  return n;
}

NDArray::NDArray(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  bytes_.assign(static_cast<size_t>(numel_ * dtype_.itemsize()), 0);
}

NDArray::NDArray(DType dtype, Shape shape, std::vector<uint8_t> bytes)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {
  numel_ = shape_numel(shape_);
  KILN_CHECK(static_cast<int64_t>(bytes_.size()) == numel_ * dtype_.itemsize(), "NDArray of ",
             numel_, " x ", dtype_.str(), " given ", bytes_.size(), " bytes");
}

std::vector<int64_t> NDArray::strides() const {
  std::vector<int64_t> st(shape_.size());
  int64_t s = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    st[i] = s;
    s *= shape_[i];
  }
  return st;
}

namespace {
template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace

ConstValue NDArray::get(int64_t i) const {
  const uint8_t* p = bytes_.data() + i * dtype_.itemsize();
  switch (dtype_.scalar) {
    case ScalarKind::Bool:
      return ConstValue::of_int(p[0] != 0);
    case ScalarKind::Int8:
      return ConstValue::of_int(load<int8_t>(p));
    case ScalarKind::Int16:
      return ConstValue::of_int(load<int16_t>(p));
    case ScalarKind::Int32:
      return ConstValue::of_int(load<int32_t>(p));
    case ScalarKind::Int64:
    case ScalarKind::Index:
    case ScalarKind::UInt64:
      return ConstValue::of_int(load<int64_t>(p));
    case ScalarKind::UInt8:
      return ConstValue::of_int(load<uint8_t>(p));
    case ScalarKind::UInt16:
      return ConstValue::of_int(load<uint16_t>(p));
    case ScalarKind::UInt32:
      return ConstValue::of_int(load<uint32_t>(p));
    case ScalarKind::Float16:
      return ConstValue::of_float(half_bits_to_float(load<uint16_t>(p)));
    case ScalarKind::BFloat16:
      return ConstValue::of_float(bfloat16_bits_to_float(load<uint16_t>(p)));
    case ScalarKind::Float32:
      return ConstValue::of_float(load<float>(p));
    case ScalarKind::Float64:
      return ConstValue::of_float(load<double>(p));
    case ScalarKind::Void:
      break;
  }
  throw InternalError("NDArray::get on void");
}

void NDArray::set(int64_t i, ConstValue v) {
  uint8_t* p = bytes_.data() + i * dtype_.itemsize();
  ConstValue n = normalize_const(dtype_, v);
  switch (dtype_.scalar) {
    case ScalarKind::Bool:
      p[0] = n.i != 0;
      return;
    case ScalarKind::Int8:
    case ScalarKind::UInt8:
      store<uint8_t>(p, static_cast<uint8_t>(n.i));
      return;
    case ScalarKind::Int16:
    case ScalarKind::UInt16:
      store<uint16_t>(p, static_cast<uint16_t>(n.i));
      return;
    case ScalarKind::Int32:
    case ScalarKind::UInt32:
      store<uint32_t>(p, static_cast<uint32_t>(n.i));
      return;
    case ScalarKind::Int64:
    case ScalarKind::UInt64:
    case ScalarKind::Index:
      store<int64_t>(p, n.i);
      return;
    case ScalarKind::Float16:
      store<uint16_t>(p, float_to_half_bits(static_cast<float>(n.f)));
      return;
    case ScalarKind::BFloat16:
      store<uint16_t>(p, float_to_bfloat16_bits(static_cast<float>(n.f)));
      return;
    case ScalarKind::Float32:
      store<float>(p, static_cast<float>(n.f));
      return;
    case ScalarKind::Float64:
      store<double>(p, n.f);
      return;
    case ScalarKind::Void:
      break;
  }
  throw InternalError("NDArray::set on void");
}

}  // namespace kiln
