/* CPU feature detection by feature bits (never by model number): cpuid + xgetbv on x86-64,
 * HWCAP on AArch64. Names are LLVM's, as the package records them. The compiler's list of
 * checkable features (compiler/package/package_writer.cc) is the same. */
#include <string.h>

#include "internal.h"

#if defined(__x86_64__)
#include <cpuid.h>

typedef struct {
  const char* name;
  int leaf, subleaf, reg; /* reg: 0 eax, 1 ebx, 2 ecx, 3 edx */
  int bit;
  int needs; /* 0 none, 1 AVX state (XCR0 bits 1,2), 2 AVX-512 state (XCR0 bits 1,2,5,6,7) */
} feature_bit;

static const feature_bit kX86[] = {
    {"sse3", 1, 0, 2, 0, 0},          {"ssse3", 1, 0, 2, 9, 0},         {"fma", 1, 0, 2, 12, 1},
    {"sse4.1", 1, 0, 2, 19, 0},       {"sse4.2", 1, 0, 2, 20, 0},       {"movbe", 1, 0, 2, 22, 0},
    {"popcnt", 1, 0, 2, 23, 0},       {"avx", 1, 0, 2, 28, 1},          {"f16c", 1, 0, 2, 29, 1},
    {"bmi", 7, 0, 1, 3, 0},           {"avx2", 7, 0, 1, 5, 1},          {"bmi2", 7, 0, 1, 8, 0},
    {"avx512f", 7, 0, 1, 16, 2},      {"avx512dq", 7, 0, 1, 17, 2},     {"avx512cd", 7, 0, 1, 28, 2},
    {"avx512bw", 7, 0, 1, 30, 2},     {"avx512vl", 7, 0, 1, 31, 2},     {"avx512vnni", 7, 0, 2, 11, 2},
    {"avx512fp16", 7, 0, 3, 23, 2},   {"avxvnni", 7, 1, 0, 4, 1},       {"avx512bf16", 7, 1, 0, 5, 2},
    {"lzcnt", (int)0x80000001, 0, 2, 5, 0},
};

static uint64_t xcr0(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* no OSXSAVE */
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

int kiln_cpu_has_feature(const char* name) {
  for (size_t i = 0; i < sizeof kX86 / sizeof kX86[0]; ++i) {
    const feature_bit* f = &kX86[i];
    if (strcmp(f->name, name) != 0) continue;
    unsigned r[4] = {0, 0, 0, 0};
    if (!__get_cpuid_count((unsigned)f->leaf, (unsigned)f->subleaf, &r[0], &r[1], &r[2], &r[3])) return 0;
    if (!(r[f->reg] & (1u << f->bit))) return 0;
    uint64_t x = f->needs ? xcr0() : 0;
    if (f->needs >= 1 && (x & 0x6) != 0x6) return 0;
    if (f->needs == 2 && (x & 0xE0) != 0xE0) return 0;
    return 1;
  }
  return -1;
}

const char* kiln_runtime_arch(void) { return "x86_64"; }

#elif defined(__aarch64__)
#include <sys/auxv.h>

typedef struct {
  const char* name;
  int hwcap2;
  unsigned long bit;
} feature_bit;

static const feature_bit kArm[] = {
    {"neon", 0, 1ul << 1},     {"crc", 0, 1ul << 7},       {"lse", 0, 1ul << 8},      {"fullfp16", 0, 1ul << 10},
    {"rdm", 0, 1ul << 12},     {"rcpc", 0, 1ul << 15},     {"dotprod", 0, 1ul << 20}, {"sve", 0, 1ul << 22},
    {"i8mm", 1, 1ul << 13},    {"bf16", 1, 1ul << 14},
};

int kiln_cpu_has_feature(const char* name) {
  for (size_t i = 0; i < sizeof kArm / sizeof kArm[0]; ++i) {
    if (strcmp(kArm[i].name, name) != 0) continue;
    unsigned long caps = getauxval(kArm[i].hwcap2 ? AT_HWCAP2 : AT_HWCAP);
    return (caps & kArm[i].bit) != 0;
  }
  return -1;
}

const char* kiln_runtime_arch(void) { return "aarch64"; }

#else
int kiln_cpu_has_feature(const char* name) {
  (void)name;
  return -1;
}
const char* kiln_runtime_arch(void) { return "unknown"; }
#endif
