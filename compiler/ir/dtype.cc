#include "compiler/ir/dtype.h"

#include <cstdint>
#include <functional>
#include <limits>

namespace kiln {

namespace {
struct ScalarInfo {
  const char* name;
  int bytes;
  int bits;
};

constexpr ScalarInfo kInfo[kNumScalarKinds] = {
    {"void", 0, 0},     {"bool", 1, 1},     {"int8", 1, 8},     {"int16", 2, 16},
    {"int32", 4, 32},   {"int64", 8, 64},   {"uint8", 1, 8},    {"uint16", 2, 16},
    {"uint32", 4, 32},  {"uint64", 8, 64},  {"float16", 2, 16}, {"bfloat16", 2, 16},
    {"float32", 4, 32}, {"float64", 8, 64}, {"index", 8, 64},
};

const ScalarInfo& info(ScalarKind k) {
  return kInfo[static_cast<int>(k)];
}
}  // namespace

bool DType::is_float() const {
  if (is_ptr) return false;
  switch (scalar) {
    case ScalarKind::Float16:
    case ScalarKind::BFloat16:
    case ScalarKind::Float32:
    case ScalarKind::Float64:
      return true;
    default:
      return false;
  }
}

bool DType::is_int() const {
  if (is_ptr) return false;
  switch (scalar) {
    case ScalarKind::Int8:
    case ScalarKind::Int16:
    case ScalarKind::Int32:
    case ScalarKind::Int64:
    case ScalarKind::UInt8:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32:
    case ScalarKind::UInt64:
    case ScalarKind::Index:
      return true;
    default:
      return false;
  }
}

bool DType::is_unsigned() const {
  if (is_ptr) return false;
  switch (scalar) {
    case ScalarKind::UInt8:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32:
    case ScalarKind::UInt64:
      return true;
    default:
      return false;
  }
}

int DType::itemsize() const {
  return info(scalar).bytes;
}
int DType::bits() const {
  return info(scalar).bits;
}

std::string DType::str() const {
  std::string s = info(scalar).name;
  if (is_ptr) {
    s += "*";
    if (ptr_size >= 0) s += "[" + std::to_string(ptr_size) + "]";
    return s;
  }
  if (lanes > 1) return "<" + std::to_string(lanes) + " x " + s + ">";
  return s;
}

size_t DType::hash() const {
  uint64_t h = static_cast<uint64_t>(scalar) | (static_cast<uint64_t>(lanes) << 8) |
               (static_cast<uint64_t>(is_ptr) << 24);
  h ^= static_cast<uint64_t>(ptr_size) * 0x9E3779B97F4A7C15ull;
  return std::hash<uint64_t>{}(h);
}

const char* scalar_name(ScalarKind k) {
  return info(k).name;
}

bool parse_scalar(const std::string& name, ScalarKind* out) {
  for (int i = 0; i < kNumScalarKinds; ++i) {
    if (name == kInfo[i].name) {
      *out = static_cast<ScalarKind>(i);
      return true;
    }
  }
  return false;
}

int64_t dtype_min(DType d) {
  switch (d.scalar) {
    case ScalarKind::Bool:
      return 0;
    case ScalarKind::Int8:
      return INT8_MIN;
    case ScalarKind::Int16:
      return INT16_MIN;
    case ScalarKind::Int32:
      return INT32_MIN;
    case ScalarKind::UInt8:
    case ScalarKind::UInt16:
    case ScalarKind::UInt32:
    case ScalarKind::UInt64:
      return 0;
    default:
      return std::numeric_limits<int64_t>::min();
  }
}

int64_t dtype_max(DType d) {
  switch (d.scalar) {
    case ScalarKind::Bool:
      return 1;
    case ScalarKind::Int8:
      return INT8_MAX;
    case ScalarKind::Int16:
      return INT16_MAX;
    case ScalarKind::Int32:
      return INT32_MAX;
    case ScalarKind::UInt8:
      return UINT8_MAX;
    case ScalarKind::UInt16:
      return UINT16_MAX;
    case ScalarKind::UInt32:
      return UINT32_MAX;
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

}  // namespace kiln
