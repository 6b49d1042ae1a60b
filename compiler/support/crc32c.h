// CRC-32C (Castagnoli), the package checksum. The runtime has its own C implementation
// (runtime/src/crc32c.c); tests check that both agree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

// Continues a CRC: crc32c(crc32c(0, a), b) == crc32c of a followed by b.
uint32_t crc32c(uint32_t crc, const void* data, size_t len);

}  // namespace kiln
