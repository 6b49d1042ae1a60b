// ONNX element types and TensorProto data.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/support/half.h"

namespace kiln::onnxfe {

DType dtype_of(int t) {
  using T = onnx::TensorProto;
  switch (t) {
    case T::FLOAT:
      return dtypes::float32;
    case T::DOUBLE:
      return dtypes::float64;
    case T::FLOAT16:
      return dtypes::float16;
    case T::BFLOAT16:
      return dtypes::bfloat16;
    case T::INT8:
      return dtypes::int8;
    case T::INT16:
      return dtypes::int16;
    case T::INT32:
      return dtypes::int32;
    case T::INT64:
      return dtypes::int64;
    case T::UINT8:
      return dtypes::uint8;
    case T::UINT16:
      return dtypes::uint16;
    case T::UINT32:
      return dtypes::uint32;
    case T::UINT64:
      return dtypes::uint64;
    case T::BOOL:
      return dtypes::bool_;
    case T::STRING:
      throw Unsupported("string tensors are not supported");
    case T::COMPLEX64:
    case T::COMPLEX128:
      throw Unsupported("complex tensors are not supported");
    default:
      throw Unsupported("element type " + std::to_string(t) + " is not supported");
  }
}

NDArray tensor_data(const onnx::TensorProto& t, const std::string& dir) {
  DType d = dtype_of(t.data_type());
  Shape shape(t.dims().begin(), t.dims().end());
  NDArray a(d, shape);
  size_t bytes = static_cast<size_t>(a.nbytes());
  auto fail = [&](const std::string& why) { throw Error("tensor '" + t.name() + "': " + why); };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    auto number = [&](const std::string& key, const std::string& v) {
      size_t used = 0;
      int64_t r = -1;
      try {
        r = std::stoll(v, &used);
      } catch (const std::exception&) {
      }
      if (r < 0 || used != v.size())
        fail("external data " + key + " '" + v + "' is not a byte count");
      return r;
    };
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = number("offset", kv.value());
      else if (kv.key() == "length")
        length = number("length", kv.value());
    }
    if (location.empty()) fail("external data without a location");
    // The data must live beside the model: no absolute paths, no way out of its folder.
    std::filesystem::path rel(location);
    if (rel.is_absolute()) fail("external data location '" + location + "' is an absolute path");
    for (const auto& part : rel)
      if (part == "..") fail("external data location '" + location + "' leaves the model's folder");
    std::filesystem::path p = std::filesystem::path(dir) / location;
    std::ifstream f(p, std::ios::binary);
    if (!f) fail("cannot open external data file '" + p.string() + "'");
    if (length >= 0 && static_cast<size_t>(length) != bytes)
      fail("external data length does not match the shape");
    f.seekg(offset);
    f.read(reinterpret_cast<char*>(a.data()), static_cast<std::streamsize>(bytes));
    if (static_cast<size_t>(f.gcount()) != bytes)
      fail("external data file '" + p.string() + "' is too short");
    return a;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      fail("raw data has " + std::to_string(t.raw_data().size()) + " bytes, the shape needs " +
           std::to_string(bytes));
    std::memcpy(a.data(), t.raw_data().data(), bytes);
    return a;
  }
  int64_t n = a.numel();
  auto need = [&](int have) {
    if (have != n)
      fail("has " + std::to_string(have) + " values for " + std::to_string(n) + " elements");
  };
  using T = onnx::TensorProto;
  switch (t.data_type()) {
    case T::FLOAT:
      need(t.float_data_size());
      for (int64_t i = 0; i < n; ++i)
        a.set(i, ConstValue::of_float(t.float_data(static_cast<int>(i))));
      break;
    case T::DOUBLE:
      need(t.double_data_size());
      for (int64_t i = 0; i < n; ++i)
        a.set(i, ConstValue::of_float(t.double_data(static_cast<int>(i))));
      break;
    case T::INT64:
      need(t.int64_data_size());
      for (int64_t i = 0; i < n; ++i)
        a.set(i, ConstValue::of_int(t.int64_data(static_cast<int>(i))));
      break;
    case T::UINT32:
    case T::UINT64:
      need(t.uint64_data_size());
      for (int64_t i = 0; i < n; ++i)
        a.set(i, ConstValue::of_int(static_cast<int64_t>(t.uint64_data(static_cast<int>(i)))));
      break;
    case T::FLOAT16:
    case T::BFLOAT16: {
      need(t.int32_data_size());
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        float f =
            t.data_type() == T::FLOAT16 ? half_bits_to_float(bits) : bfloat16_bits_to_float(bits);
        a.set(i, ConstValue::of_float(f));
      }
      break;
    }
    default:  // int8..int32, uint8, uint16, bool are held in int32_data
      need(t.int32_data_size());
      for (int64_t i = 0; i < n; ++i)
        a.set(i, ConstValue::of_int(t.int32_data(static_cast<int>(i))));
      break;
  }
  return a;
}

Tensor iota(NodeContext& n, int64_t len, DType d) {
  std::vector<double> v(static_cast<size_t>(len));
  std::iota(v.begin(), v.end(), 0.0);
  return n.constant(make_array(d, {len}, v));
}

NDArray make_array(DType d, const Shape& s, const std::vector<double>& values) {
  NDArray a(d, s);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = values.at(static_cast<size_t>(i));
    a.set(i, d.is_float() ? ConstValue::of_float(v) : ConstValue::of_int(static_cast<int64_t>(v)));
  }
  return a;
}

int64_t norm_axis(int64_t axis, int64_t rank, const NodeContext& n) {
  if (axis < -rank || axis >= rank)
    n.invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace kiln::onnxfe
