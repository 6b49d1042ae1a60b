// Reading and writing NumPy .npy files (format versions 1.0-3.0, C order, little-endian):
// float16/32/64, int8-64, uint8-64 and bool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"

namespace kiln {

struct NpyArray {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // dense, C order, little-endian

  int64_t numel() const;
};

// Throws kiln::Error naming the file and what is wrong (bad magic, unsupported dtype,
// Fortran order, truncated data).
NpyArray read_npy(const std::string& path);
NpyArray parse_npy(const std::vector<uint8_t>& bytes, const std::string& what);
void write_npy(const std::string& path, const NpyArray& a);
std::vector<uint8_t> serialize_npy(const NpyArray& a);

// "<f4", "|b1", ... for a dtype; empty if the dtype has no .npy representation.
std::string npy_descr(DType d);

}  // namespace kiln
