// SHA-256 (FIPS 180-4): model provenance in packages and the stable structural digest of UOps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  void update_u64(uint64_t v);  // little-endian bytes of v
  std::array<uint8_t, 32> finish();

  static std::string hex(const std::array<uint8_t, 32>& d);

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

}  // namespace kiln
