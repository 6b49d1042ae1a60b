/* CPU feature detection by feature bits (never by model number): cpuid + xgetbv on x86-64,
 * HWCAP on AArch64. The features and their bits are kiln_abi.h's lists, the same lists the
 * compiler takes a package's required features from. */
#include <string.h>

#include "internal.h"

/* The row of feature |name| in a name string as kFeatureNames, or -1. */
static inline int feature_row(const char* names, const char* name) {
  int i = 0;
  for (const char* p = names; *p; p += strlen(p) + 1, ++i)
    if (!strcmp(p, name)) return i;
  return -1;
}

#if defined(__x86_64__)
#include <cpuid.h>

typedef struct {
  uint32_t leaf;
  uint8_t subleaf;
  uint8_t reg; /* 0 eax, 1 ebx, 2 ecx, 3 edx */
  uint8_t bit;
  uint8_t state; /* 0 none, 1 AVX state (XCR0 bits 1,2), 2 AVX-512 state (XCR0 bits 1,2,5,6,7) */
} feature_bit;

/* The names as one string ("sse3\0ssse3\0...\0"), row i's name the i-th: no pointer per row, so
 * no relocation per row in the static library. */
#define KILN_X86_NAME(name, ...) name "\0"
#define KILN_X86_ROW(name, leaf, subleaf, reg, bit, state) {leaf, subleaf, reg, bit, state},
static const char kFeatureNames[] = KILN_ABI_X86_FEATURES(KILN_X86_NAME);
static const feature_bit kX86[] = {KILN_ABI_X86_FEATURES(KILN_X86_ROW)};
#undef KILN_X86_ROW
#undef KILN_X86_NAME

static uint64_t xcr0(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* no OSXSAVE */
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

int kiln_cpu_has_feature(const char* name) {
  int i = feature_row(kFeatureNames, name);
  if (i >= 0) {
    const feature_bit* f = &kX86[i];
    unsigned r[4] = {0, 0, 0, 0};
    if (!__get_cpuid_count(f->leaf, f->subleaf, &r[0], &r[1], &r[2], &r[3])) return 0;
    if (!(r[f->reg] & (1u << f->bit))) return 0;
    uint64_t x = f->state ? xcr0() : 0;
    if (f->state >= 1 && (x & 0x6) != 0x6) return 0;
    if (f->state == 2 && (x & 0xE0) != 0xE0) return 0;
    return 1;
  }
  return -1;
}

int kiln_cpu_has_crc32c(void) {
  return kiln_cpu_has_feature("sse4.2") == 1;
}

const char* kiln_runtime_arch(void) {
  return "x86_64";
}

#elif defined(__aarch64__)
#include <sys/auxv.h>

typedef struct {
  uint8_t hwcap2;
  uint8_t bit;
} feature_bit;

#define KILN_ARM_NAME(name, ...) name "\0"
#define KILN_ARM_ROW(name, hwcap2, bit) {hwcap2, bit},
static const char kFeatureNames[] = KILN_ABI_AARCH64_FEATURES(KILN_ARM_NAME);
static const feature_bit kArm[] = {KILN_ABI_AARCH64_FEATURES(KILN_ARM_ROW)};
#undef KILN_ARM_ROW
#undef KILN_ARM_NAME

int kiln_cpu_has_feature(const char* name) {
  int i = feature_row(kFeatureNames, name);
  if (i >= 0) {
    unsigned long caps = getauxval(kArm[i].hwcap2 ? AT_HWCAP2 : AT_HWCAP);
    return (caps & (1ul << kArm[i].bit)) != 0;
  }
  return -1;
}

int kiln_cpu_has_crc32c(void) {
  return kiln_cpu_has_feature("crc") == 1;
}

const char* kiln_runtime_arch(void) {
  return "aarch64";
}

#else
int kiln_cpu_has_feature(const char* name) {
  (void)name;
  return -1;
}
int kiln_cpu_has_crc32c(void) {
  return 0;
}
const char* kiln_runtime_arch(void) {
  return "unknown";
}
#endif

uint32_t kiln_crc32c(uint32_t crc, const void* data, size_t len) {
  return kiln_abi_crc32c(crc, data, len, kiln_cpu_has_crc32c());
}
