/* The checksums of kiln_abi.h: one CRC-32C for the compiler (which writes packages) and the
 * runtime (which verifies them), and the metadata checksum's regions. C11, libc only. */
#include "kiln_abi.h"

#include <string.h>

static uint32_t g_table[8][256];
static int g_table_ready; /* a benign race: every thread computes the same table */

static void make_tables(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    g_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int t = 1; t < 8; ++t)
      g_table[t][i] = (g_table[t - 1][i] >> 8) ^ g_table[0][g_table[t - 1][i] & 0xFF];
  __atomic_store_n(&g_table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_soft(uint32_t crc, const uint8_t* p, size_t n) {
  if (!__atomic_load_n(&g_table_ready, __ATOMIC_ACQUIRE)) make_tables();
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    v ^= crc;
    crc = g_table[7][v & 0xFF] ^ g_table[6][(v >> 8) & 0xFF] ^ g_table[5][(v >> 16) & 0xFF] ^
          g_table[4][(v >> 24) & 0xFF] ^ g_table[3][(v >> 32) & 0xFF] ^
          g_table[2][(v >> 40) & 0xFF] ^ g_table[1][(v >> 48) & 0xFF] ^ g_table[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = g_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
#elif defined(__aarch64__)
__attribute__((target("+crc"))) static uint32_t crc_hw(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    crc = __builtin_aarch64_crc32cx(crc, v);
    p += 8;
    n -= 8;
  }
  while (n--) crc = __builtin_aarch64_crc32cb(crc, *p++);
  return crc;
}
#endif

uint32_t kiln_abi_crc32c(uint32_t crc, const void* data, size_t len, int use_hardware) {
  const uint8_t* p = (const uint8_t*)data;
  crc = ~crc;
#if defined(__x86_64__) || defined(__aarch64__)
  if (use_hardware) return ~crc_hw(crc, p, len);
#else
  (void)use_hardware;
#endif
  return ~crc_soft(crc, p, len);
}

int kiln_abi_metadata_crc32c(const uint8_t* buf, size_t size, kiln_abi_region code,
                             kiln_abi_region constants, uint64_t crc_field, int use_hardware,
                             uint32_t* out_crc) {
  /* The skipped regions in position order (absent payloads have size 0 and are left out). */
  kiln_abi_region r[3] = {code, constants, {crc_field, 4}};
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j)
      if (r[j].offset < r[i].offset) {
        kiln_abi_region t = r[i];
        r[i] = r[j];
        r[j] = t;
      }
  static const uint8_t zeros[4] = {0, 0, 0, 0};
  uint32_t crc = 0;
  uint64_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    if (!r[i].size) continue;
    if (r[i].offset < pos || r[i].offset > size || r[i].size > size - r[i].offset) return -1;
    crc = kiln_abi_crc32c(crc, buf + pos, (size_t)(r[i].offset - pos), use_hardware);
    if (r[i].offset == crc_field) crc = kiln_abi_crc32c(crc, zeros, 4, use_hardware);
    pos = r[i].offset + r[i].size;
  }
  *out_crc = kiln_abi_crc32c(crc, buf + pos, (size_t)(size - pos), use_hardware);
  return 0;
}
