// Data types of the kiln IR.
//
// A DType is a small value: a scalar kind, a vector lane count and, for pointers, the element
// count of the buffer pointed to. `index` is the abstract integer of index arithmetic; it is
// lowered to i32 or i64 late, by bounds. Masked (invalid) indices are not a dtype but a constant
// value (see ConstValue::invalid in uop.h).
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

enum class ScalarKind : uint8_t {
  Void,
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Index,
};

constexpr int kNumScalarKinds = static_cast<int>(ScalarKind::Index) + 1;

struct DType {
  ScalarKind scalar = ScalarKind::Void;
  uint16_t lanes = 1;     // > 1 for vectors
  bool is_ptr = false;    // a pointer to `scalar` elements (lanes == 1 for pointers)
  int64_t ptr_size = -1;  // element count of the pointed-to buffer, -1 if unknown

  constexpr DType() = default;
  constexpr explicit DType(ScalarKind s, uint16_t l = 1) : scalar(s), lanes(l) {}

  static constexpr DType ptr(ScalarKind s, int64_t size = -1) {
    DType d(s);
    d.is_ptr = true;
    d.ptr_size = size;
    return d;
  }
  constexpr DType vec(uint16_t l) const { return DType(scalar, l); }
  constexpr DType base() const { return DType(scalar); }

  bool operator==(const DType&) const = default;

  bool is_void() const { return scalar == ScalarKind::Void && !is_ptr; }
  bool is_bool() const { return scalar == ScalarKind::Bool && !is_ptr; }
  bool is_float() const;     // float16, bfloat16, float32, float64 (scalar or vector)
  bool is_int() const;       // signed/unsigned integers and index (not bool)
  bool is_unsigned() const;  // uint8..uint64
  bool is_index() const { return scalar == ScalarKind::Index && !is_ptr; }
  bool is_vector() const { return lanes > 1; }

  // Size in bytes of one scalar element (index counts as 8).
  int itemsize() const;
  // Bits of the scalar; bool counts as 1.
  int bits() const;

  std::string str() const;  // e.g. "float32", "<8 x float32>", "float32*[64]"
  size_t hash() const;
};

namespace dtypes {
inline constexpr DType void_{ScalarKind::Void};
inline constexpr DType bool_{ScalarKind::Bool};
inline constexpr DType int8{ScalarKind::Int8};
inline constexpr DType int16{ScalarKind::Int16};
inline constexpr DType int32{ScalarKind::Int32};
inline constexpr DType int64{ScalarKind::Int64};
inline constexpr DType uint8{ScalarKind::UInt8};
inline constexpr DType uint16{ScalarKind::UInt16};
inline constexpr DType uint32{ScalarKind::UInt32};
inline constexpr DType uint64{ScalarKind::UInt64};
inline constexpr DType float16{ScalarKind::Float16};
inline constexpr DType bfloat16{ScalarKind::BFloat16};
inline constexpr DType float32{ScalarKind::Float32};
inline constexpr DType float64{ScalarKind::Float64};
inline constexpr DType index{ScalarKind::Index};
}  // namespace dtypes

const char* scalar_name(ScalarKind k);
// Parses "float32", "int64", "bool", ... (the names scalar_name prints). Returns false if unknown.
bool parse_scalar(const std::string& name, ScalarKind* out);

// The representable range of an integer (or bool/index) dtype, as int64 where it fits.
// uint64's max is clamped to INT64_MAX: the IR's integer bounds live in int64.
int64_t dtype_min(DType d);
int64_t dtype_max(DType d);

}  // namespace kiln
