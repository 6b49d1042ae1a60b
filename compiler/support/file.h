// Whole-file reads and writes. A write goes to a temporary file next to the destination and is
// renamed over it, so a failure leaves nothing half-written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// Throws kiln::Error naming the file if it cannot be read.
std::vector<uint8_t> read_file(const std::string& path);

// Throws kiln::Error naming the file if it cannot be written.
void write_file(const std::string& path, const void* data, size_t size);
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_file(path, bytes.data(), bytes.size());
}
inline void write_file(const std::string& path, const std::string& text) {
  write_file(path, text.data(), text.size());
}

}  // namespace kiln
