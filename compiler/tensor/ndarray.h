// A dense, C-order array of any kiln dtype: weight storage, eager evaluation results and the
// reference interpreter's buffers. Elements are read and written as ConstValue (slow, exact).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/uop.h"

namespace kiln {

class NDArray {
 public:
  NDArray() = default;
  NDArray(DType dtype, Shape shape);  // zero-filled
  NDArray(DType dtype, Shape shape, std::vector<uint8_t> bytes);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  int64_t nbytes() const { return static_cast<int64_t>(bytes_.size()); }
  const uint8_t* data() const { return bytes_.data(); }
  uint8_t* data() { return bytes_.data(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

  ConstValue get(int64_t i) const;
  void set(int64_t i, ConstValue v);  // v is converted to the dtype's representation

  // C-order strides in elements.
  std::vector<int64_t> strides() const;

 private:
  DType dtype_;
  Shape shape_;
  int64_t numel_ = 0;
  std::vector<uint8_t> bytes_;
};

int64_t shape_numel(const Shape& s);

}  // namespace kiln
