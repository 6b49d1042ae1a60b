// Recomputes a package's checksums (each section's CRC-32C, then the metadata checksum) in
// place, the way an attacker who edits a package would: for tests and fuzz targets whose edits
// must reach the verifier's other checks. Returns false when the package is too broken to find
// its checksum fields (the runtime refuses it anyway). C++ for tests; runtime-only (no compiler).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/src/fb_reader.h"
#include "schema/kiln_abi.h"

namespace kiln::testing {

// With |fix_code| false the code section keeps its checksum (a fuzzer's mutated machine code is
// then refused instead of run).
inline bool fix_checksums(std::vector<uint8_t>& b, uint64_t* code_out = nullptr,
                          uint64_t* code_size_out = nullptr, bool fix_code = true) {
  fbr r = {b.data(), b.size(), nullptr, 0};
  if (b.size() < 8) return false;
  uint64_t root = fbr_u32(&r, 0);
  if (r.error || root == 0 || root >= b.size()) return false;
  uint64_t code = 0, consts = 0;
  uint32_t code_size =
      fbr_vector(&r, fbr_ref(&r, fbr_field(&r, root, KILN_ABI_PACKAGE_CODE)), 1, &code);
  uint32_t const_size =
      fbr_vector(&r, fbr_ref(&r, fbr_field(&r, root, KILN_ABI_PACKAGE_CONSTANTS)), 1, &consts);
  uint64_t crc_field = fbr_field(&r, root, KILN_ABI_PACKAGE_METADATA_CRC32C);
  uint64_t secs;
  uint32_t nsec =
      fbr_vector(&r, fbr_ref(&r, fbr_field(&r, root, KILN_ABI_PACKAGE_SECTIONS)), 4, &secs);
  if (r.error || !crc_field) return false;
  if (code_out) *code_out = code;
  if (code_size_out) *code_size_out = code_size;
  for (uint32_t i = 0; i < nsec; ++i) {
    uint64_t s = fbr_table_at(&r, secs, i);
    const char* name = fbr_string(&r, fbr_ref(&r, fbr_field(&r, s, KILN_ABI_SECTION_NAME)));
    uint64_t crc_at = fbr_field(&r, s, KILN_ABI_SECTION_CRC32C);
    if (r.error || !name || !crc_at || crc_at + 4 > b.size()) return false;
    uint32_t crc = 0;
    if (!std::strcmp(name, "code"))
      crc = kiln_abi_crc32c(0, b.data() + code, code_size, 0);
    else if (!std::strcmp(name, "constants"))
      crc = kiln_abi_crc32c(0, b.data() + consts, const_size, 0);
    else
      continue;
    std::memcpy(b.data() + crc_at, &crc, 4);
  }
  uint32_t crc;
  if (crc_field + 4 > b.size() ||
      kiln_abi_metadata_crc32c(b.data(), b.size(), {code, code_size},
                               {const_size ? consts : 0, const_size}, crc_field, 0, &crc) != 0)
    return false;
  std::memcpy(b.data() + crc_field, &crc, 4);
  return true;
}

}  // namespace kiln::testing
