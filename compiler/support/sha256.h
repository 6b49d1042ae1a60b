// SHA-256 (FIPS 180-4): model provenance in packages and the stable structural digest of UOps.
// A C++ face on the one implementation the compiler and the runtime share (schema/kiln_sign.c).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "schema/kiln_sign.h"

namespace kiln {

class Sha256 {
 public:
  Sha256() { kiln_sha256_init(&state_); }
  void update(const void* data, size_t len) { kiln_sha256_update(&state_, data, len); }
  void update(std::string_view s) { update(s.data(), s.size()); }
  void update_u64(uint64_t v);  // little-endian bytes of v
  std::array<uint8_t, 32> finish();

  static std::string hex(const std::array<uint8_t, 32>& d);

 private:
  kiln_sha256 state_;
};

}  // namespace kiln
