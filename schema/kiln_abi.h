/* kiln_abi.h: the contract between kilnc and libkiln_rt that kiln.fbs cannot express.
 *
 * Plain C (C11 and C++20), no dependencies: the compiler includes it to write packages and
 * kernels, the runtime to read and run them. Anything both sides must agree on and that is not a
 * FlatBuffers field lives here, once:
 *   - the package format version the writer stamps and the reader accepts;
 *   - the kernels' entry table (symbol, magic, version, header layout) and the kernel ABI;
 *   - the element type numbering (kiln.fbs's DType, kiln.h's kiln_dtype) and element sizes;
 *   - the slot kinds (kiln.fbs's SlotKind);
 *   - the CPU features a package may require and how the runtime detects each one;
 *   - the field numbers of kiln.fbs's tables, for the runtime's reader (the compiler
 *     static_asserts them against flatc's generated code: compiler/package/schema_abi.cc);
 *   - the checksums: one CRC-32C and the rule for the metadata checksum (kiln_abi.c).
 * Values here are part of the format: never renumber, only append. */
#ifndef KILN_SCHEMA_KILN_ABI_H_
#define KILN_SCHEMA_KILN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The contract's functions (kiln_abi.c, kiln_sign.c): static where they are compiled into the
 * one translation unit that uses them (the runtime's amalgamation), else extern. */
#ifdef KILN_RT_AMALGAMATION
#define KILN_ABI_FN static
#else
#define KILN_ABI_FN
#endif

/* ---- package format version (Provenance.format_major / format_minor) ---- */

#define KILN_ABI_FORMAT_MAJOR 2u /* readers refuse other majors; 2: kernels' access extents */
#define KILN_ABI_FORMAT_MINOR                                   \
  9u /* 1: launch labels; 2: kernel variants per CPU; 3: FLOPs; \
      * 4: symbolic dims; 5: shape operands as run-time values; \
      * 6: float32 value symbols as bit patterns, bool ones;    \
      * 7: a slot written in several groups (concatenations);   \
      * 8: loop groups, sizes computed from data;               \
      * 9: slots written in place of another */

/* ---- the kernels' entry table ----
 * A package's shared object exports exactly one symbol, KILN_ABI_ENTRY_TABLE_SYMBOL; a static
 * library (kilnc --emit static-lib -o NAME) exports it as NAME_kernels. Both are laid out as
 *   kiln_abi_entry_table_header header;           at 0
 *   kiln_abi_kernel_fn entries[count];            at KILN_ABI_ENTRY_TABLE_ENTRIES_OFFSET
 *   uint32_t num_args[count];                     at KILN_ABI_ENTRY_TABLE_NARGS_OFFSET(count)
 *   ArgExtent extents[sum of num_args];           at KILN_ABI_ENTRY_TABLE_EXTENTS_OFFSET(count)
 * (ArgExtent as in kiln.fbs: KILN_ABI_ARG_EXTENT_SIZE bytes, kernel by kernel.) `id` is 0 in a
 * shared object and the package's static_kernels_id in a static library. The argument counts and
 * access extents live in the code beside the entries: the package's metadata must agree with
 * them, so no metadata edit can make a kernel read or write outside its slots. */
#define KILN_ABI_ENTRY_TABLE_SYMBOL "kiln_kernels_v1"
#define KILN_ABI_ENTRY_TABLE_MAGIC 0x4E4C494Bu /* "KILN", little-endian */
#define KILN_ABI_ENTRY_TABLE_VERSION 2u        /* 2: argument counts and extents */
#define KILN_ABI_ENTRY_TABLE_ENTRIES_OFFSET 16u
#define KILN_ABI_ENTRY_TABLE_NARGS_OFFSET(count) (16u + 8u * (uint64_t)(count))
#define KILN_ABI_ENTRY_TABLE_EXTENTS_OFFSET(count) \
  ((KILN_ABI_ENTRY_TABLE_NARGS_OFFSET(count) + 4u * (uint64_t)(count) + 7u) & ~(uint64_t)7u)

typedef struct kiln_abi_entry_table_header {
  uint32_t magic;
  uint32_t version;
  uint32_t count;
  uint32_t id;
} kiln_abi_entry_table_header;

/* The kernel ABI: |args| are the buffer pointers in the kernel's argument order, |vars| the
 * bound symbolic values; a kernel split into |ntasks| tasks computes only its share for |task|. */
typedef void (*kiln_abi_kernel_fn)(void* const* args, const int64_t* vars, uint32_t task,
                                   uint32_t ntasks);

/* ---- element types (kiln.fbs DType, kiln.h kiln_dtype) ---- */

enum {
  KILN_ABI_DTYPE_BOOL = 0,
  KILN_ABI_DTYPE_INT8 = 1,
  KILN_ABI_DTYPE_INT16 = 2,
  KILN_ABI_DTYPE_INT32 = 3,
  KILN_ABI_DTYPE_INT64 = 4,
  KILN_ABI_DTYPE_UINT8 = 5,
  KILN_ABI_DTYPE_UINT16 = 6,
  KILN_ABI_DTYPE_UINT32 = 7,
  KILN_ABI_DTYPE_UINT64 = 8,
  KILN_ABI_DTYPE_FLOAT16 = 9,
  KILN_ABI_DTYPE_BFLOAT16 = 10,
  KILN_ABI_DTYPE_FLOAT32 = 11,
  KILN_ABI_DTYPE_FLOAT64 = 12,
  KILN_ABI_DTYPE_COUNT = 13
};

/* Bytes per element, indexed by dtype; and the names kiln.h and the compiler print. */
#define KILN_ABI_DTYPE_SIZES {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8}
/* The dtypes' names, in number order, as one NUL-separated string (the runtime's table). */
#define KILN_ABI_DTYPE_NAME_STRING                                                               \
  "bool\0int8\0int16\0int32\0int64\0uint8\0uint16\0uint32\0uint64\0float16\0bfloat16\0float32\0" \
  "float64\0"

/* ---- slot kinds (kiln.fbs SlotKind) ---- */

enum {
  KILN_ABI_SLOT_ARENA = 0,
  KILN_ABI_SLOT_CONSTANT = 1,
  KILN_ABI_SLOT_INPUT = 2,
  KILN_ABI_SLOT_OUTPUT = 3
};

/* ---- CPU features a package may require (Target.required_features) ----
 * Names are LLVM's. The compiler records the target's features that appear here; the runtime
 * refuses a package naming a feature it cannot detect. Detection is by feature bits, never by
 * model number.
 *
 * x86-64: X(name, cpuid leaf, subleaf, register, bit, state) where register is 0 eax, 1 ebx,
 * 2 ecx, 3 edx and state is the register state the OS must enable (XCR0): 0 none, 1 AVX (bits 1
 * and 2), 2 AVX-512 (bits 1, 2, 5, 6 and 7). */
#define KILN_ABI_X86_FEATURES(X)  \
  X("sse3", 1, 0, 2, 0, 0)        \
  X("ssse3", 1, 0, 2, 9, 0)       \
  X("fma", 1, 0, 2, 12, 1)        \
  X("sse4.1", 1, 0, 2, 19, 0)     \
  X("sse4.2", 1, 0, 2, 20, 0)     \
  X("movbe", 1, 0, 2, 22, 0)      \
  X("popcnt", 1, 0, 2, 23, 0)     \
  X("avx", 1, 0, 2, 28, 1)        \
  X("f16c", 1, 0, 2, 29, 1)       \
  X("bmi", 7, 0, 1, 3, 0)         \
  X("avx2", 7, 0, 1, 5, 1)        \
  X("bmi2", 7, 0, 1, 8, 0)        \
  X("avx512f", 7, 0, 1, 16, 2)    \
  X("avx512dq", 7, 0, 1, 17, 2)   \
  X("avx512cd", 7, 0, 1, 28, 2)   \
  X("avx512bw", 7, 0, 1, 30, 2)   \
  X("avx512vl", 7, 0, 1, 31, 2)   \
  X("avx512vnni", 7, 0, 2, 11, 2) \
  X("avx512fp16", 7, 0, 3, 23, 2) \
  X("avxvnni", 7, 1, 0, 4, 1)     \
  X("avx512bf16", 7, 1, 0, 5, 2)  \
  X("lzcnt", 0x80000001, 0, 2, 5, 0)

/* AArch64 Linux: X(name, hwcap word (0 AT_HWCAP, 1 AT_HWCAP2), bit). */
#define KILN_ABI_AARCH64_FEATURES(X) \
  X("neon", 0, 1)                    \
  X("crc", 0, 7)                     \
  X("lse", 0, 8)                     \
  X("fullfp16", 0, 10)               \
  X("rdm", 0, 12)                    \
  X("rcpc", 0, 15)                   \
  X("dotprod", 0, 20)                \
  X("sve", 0, 22)                    \
  X("i8mm", 1, 13)                   \
  X("bf16", 1, 14)

/* ---- field numbers of kiln.fbs's tables (declaration order, from 0) ----
 * The runtime reads the package with its own bounds-checked reader (runtime/src/fb_reader.h)
 * by these numbers; compiler/package/schema_abi.cc checks each against flatc's VT_ offsets. */
enum {
  KILN_ABI_PACKAGE_PROVENANCE,
  KILN_ABI_PACKAGE_TARGET,
  KILN_ABI_PACKAGE_INPUTS,
  KILN_ABI_PACKAGE_OUTPUTS,
  KILN_ABI_PACKAGE_KERNELS,
  KILN_ABI_PACKAGE_CODE,
  KILN_ABI_PACKAGE_CONSTANTS,
  KILN_ABI_PACKAGE_SLOTS,
  KILN_ABI_PACKAGE_ARENA_SIZE,
  KILN_ABI_PACKAGE_ARENA_ALIGNMENT,
  KILN_ABI_PACKAGE_ARENA_LOWER_BOUND,
  KILN_ABI_PACKAGE_GROUPS,
  KILN_ABI_PACKAGE_SECTIONS,
  KILN_ABI_PACKAGE_METADATA_CRC32C,
  KILN_ABI_PACKAGE_SELFTEST,
  KILN_ABI_PACKAGE_STATIC_KERNELS_ID,
  KILN_ABI_PACKAGE_SIGNATURE,
  KILN_ABI_PACKAGE_VARIANTS,
  KILN_ABI_PACKAGE_SYMBOLS, /* format 2.4 */
  KILN_ABI_PACKAGE_CHECKS,  /* format 2.5 */
  KILN_ABI_PACKAGE_LOOPS,   /* format 2.8 (also a Variant's) */
  KILN_ABI_PACKAGE_COUNTS,  /* format 2.8 (also a Variant's) */
  KILN_ABI_PACKAGE_FIELD_COUNT
};
enum {
  KILN_ABI_PROVENANCE_FORMAT_MAJOR,
  KILN_ABI_PROVENANCE_FORMAT_MINOR,
  KILN_ABI_PROVENANCE_PRODUCER,
  KILN_ABI_PROVENANCE_FLAGS,
  KILN_ABI_PROVENANCE_MODEL_SHA256,
  KILN_ABI_PROVENANCE_FIELD_COUNT
};
enum {
  KILN_ABI_TARGET_TRIPLE,
  KILN_ABI_TARGET_CPU,
  KILN_ABI_TARGET_REQUIRED_FEATURES,
  KILN_ABI_TARGET_FIELD_COUNT
};
enum {
  KILN_ABI_TENSOR_INFO_NAME,
  KILN_ABI_TENSOR_INFO_DTYPE,
  KILN_ABI_TENSOR_INFO_SHAPE,
  KILN_ABI_TENSOR_INFO_SLOT,
  KILN_ABI_TENSOR_INFO_AXIS_SYMBOLS,   /* format 2.4 */
  KILN_ABI_TENSOR_INFO_EXTENTS,        /* format 2.4 */
  KILN_ABI_TENSOR_INFO_EXTENT_OFFSETS, /* format 2.4 */
  KILN_ABI_TENSOR_INFO_VALUE_SYMBOLS,  /* format 2.5 */
  KILN_ABI_TENSOR_INFO_FIELD_COUNT
};
enum {
  KILN_ABI_SYMBOL_NAME,
  KILN_ABI_SYMBOL_MIN,
  KILN_ABI_SYMBOL_MAX,
  KILN_ABI_SYMBOL_FIELD_COUNT
};
enum { KILN_ABI_CHECK_CODE, KILN_ABI_CHECK_MESSAGE, KILN_ABI_CHECK_FIELD_COUNT };
enum {
  KILN_ABI_LOOP_NAME,
  KILN_ABI_LOOP_FIRST_GROUP,
  KILN_ABI_LOOP_LAST_GROUP,
  KILN_ABI_LOOP_TRIPS_SLOT,
  KILN_ABI_LOOP_COND_SLOT,
  KILN_ABI_LOOP_MAX_TRIPS,
  KILN_ABI_LOOP_ITERATION_SYMBOL,
  KILN_ABI_LOOP_COUNT_SYMBOL,
  KILN_ABI_LOOP_FIELD_COUNT
};
enum {
  KILN_ABI_COUNT_SYMBOL,
  KILN_ABI_COUNT_SLOT,
  KILN_ABI_COUNT_GROUP,
  KILN_ABI_COUNT_FIELD_COUNT
};
/* Loop control (format 2.8), one rule for the runtime and the compiler's JIT and interpreter:
 * whether iteration |i| of a loop runs, given its trip count (|trips| < 0: none), its condition
 * (|cond| < 0: none) and the iterations the package is planned for. 1: it runs; 0: the loop
 * ends; -1: it would run past |max| (an error: a trip count above the bound fails before the
 * first iteration). */
static inline int kiln_abi_loop_continues(int64_t i, int64_t trips, int cond, int64_t max) {
  if (cond == 0 || (trips >= 0 && i >= trips)) return 0;
  return i < max && trips <= max ? 1 : -1;
}
/* The opcodes of an output extent's postfix program (TensorInfo.extents). CONST and VAR take the
 * next int64 as their operand (a value; a symbol index); the others pop b, then a, and push
 * a op b. IDIV truncates toward zero and MOD takes the dividend's sign (C), as the compiler's
 * index arithmetic does; a division by zero is an invalid program. */
enum {
  KILN_ABI_EXTENT_CONST = 0,
  KILN_ABI_EXTENT_VAR = 1,
  KILN_ABI_EXTENT_ADD = 2,
  KILN_ABI_EXTENT_MUL = 3,
  KILN_ABI_EXTENT_IDIV = 4,
  KILN_ABI_EXTENT_MOD = 5,
  KILN_ABI_EXTENT_MAX = 6,
  KILN_ABI_EXTENT_MIN = 7,
  KILN_ABI_EXTENT_EQ = 8, /* format 2.5: 1 if a == b, else 0 (checks) */
  KILN_ABI_EXTENT_LT = 9  /* format 2.5: 1 if a < b, else 0 */
};
enum {
  KILN_ABI_KERNEL_NAME,
  KILN_ABI_KERNEL_ENTRY,
  KILN_ABI_KERNEL_NUM_ARGS,
  KILN_ABI_KERNEL_ARG_DTYPES,
  KILN_ABI_KERNEL_ARG_EXTENTS,
  KILN_ABI_KERNEL_FLOPS,
  KILN_ABI_KERNEL_FIELD_COUNT
};
/* struct ArgExtent: begin (uint64) at 0, end (uint64) at 8, access (uint32) at 16, padded to 24. */
#define KILN_ABI_ARG_EXTENT_SIZE 24u
#define KILN_ABI_ARG_EXTENT_BEGIN 0u
#define KILN_ABI_ARG_EXTENT_END 8u
#define KILN_ABI_ARG_EXTENT_ACCESS 16u
enum { KILN_ABI_ACCESS_READ = 1, KILN_ABI_ACCESS_WRITE = 2 };
enum {
  KILN_ABI_SLOT_KIND,
  KILN_ABI_SLOT_INDEX,
  KILN_ABI_SLOT_OFFSET,
  KILN_ABI_SLOT_SIZE,
  KILN_ABI_SLOT_FIRST_GROUP,
  KILN_ABI_SLOT_LAST_GROUP,
  KILN_ABI_SLOT_DTYPE,
  KILN_ABI_SLOT_NUMEL,
  KILN_ABI_SLOT_IN_PLACE_OF,
  KILN_ABI_SLOT_FIELD_COUNT
};
enum {
  KILN_ABI_LAUNCH_KERNEL,
  KILN_ABI_LAUNCH_ARGS,
  KILN_ABI_LAUNCH_NTASKS,
  KILN_ABI_LAUNCH_LABEL, /* format 2.1 */
  KILN_ABI_LAUNCH_FIELD_COUNT
};
enum { KILN_ABI_GROUP_LAUNCHES, KILN_ABI_GROUP_FIELD_COUNT };
enum {
  KILN_ABI_SECTION_NAME,
  KILN_ABI_SECTION_CRC32C,
  KILN_ABI_SECTION_SIZE,
  KILN_ABI_SECTION_FIELD_COUNT
};
enum {
  KILN_ABI_SELFTEST_INPUTS,
  KILN_ABI_SELFTEST_OUTPUTS,
  KILN_ABI_SELFTEST_TOLERANCE,
  KILN_ABI_SELFTEST_FIELD_COUNT
};
enum { KILN_ABI_SELFTEST_TENSOR_DATA, KILN_ABI_SELFTEST_TENSOR_FIELD_COUNT };
enum {
  KILN_ABI_SIGNATURE_PUBLIC_KEY,
  KILN_ABI_SIGNATURE_SIGNATURE,
  KILN_ABI_SIGNATURE_FIELD_COUNT
};

/* ---- limits ----
 * The runtime refuses a package beyond these (a named check), so that verification stays linear
 * and its allocations bounded; the compiler refuses to write one. */
#define KILN_ABI_MAX_TENSORS (1u << 16) /* inputs, and outputs */
#define KILN_ABI_MAX_RANK 32u
#define KILN_ABI_MAX_SLOTS (1u << 20)
#define KILN_ABI_MAX_KERNELS (1u << 20)
#define KILN_ABI_MAX_KERNEL_ARGS 4096u
#define KILN_ABI_MAX_GROUPS (1u << 24)
#define KILN_ABI_MAX_LAUNCHES (1u << 24)
#define KILN_ABI_MAX_LAUNCH_ARGS (1u << 26) /* over all launches */
#define KILN_ABI_MAX_TASKS (1u << 20)       /* per launch */
#define KILN_ABI_MAX_FEATURES 64u
#define KILN_ABI_MAX_VARIANTS 16u       /* the package itself and 15 more */
#define KILN_ABI_MAX_SYMBOLS 16u        /* symbolic dims (a session holds their values inline) */
#define KILN_ABI_MAX_EXTENT_PROGRAM 64u /* int64 words per output axis's extent program */
#define KILN_ABI_MAX_CHECK_PROGRAM 256u /* int64 words per check's program (format 2.5) */
#define KILN_ABI_MAX_EXTENT_STACK 16u
#define KILN_ABI_MAX_CHECKS 64u /* run-time value checks (format 2.5) */
#define KILN_ABI_MAX_LOOPS 64u  /* loop groups (format 2.8) */

/* The byte offset of field |index| in a FlatBuffers vtable (flatc's VT_ constants). */
#define KILN_ABI_VTABLE_OFFSET(index) (4 + 2 * (index))

/* ---- checksums ---- */

/* Runs extent program |code| of |len| words (KILN_ABI_EXTENT_*) over the symbols' values |vars|:
 * a symbolic output's size or a check's condition into *out. Nonzero (and *out untouched) if the
 * program is malformed, overflows or divides by zero. With |vars| NULL only the program's form
 * is checked (*out is then 0). kiln_extent.c. */
KILN_ABI_FN int kiln_abi_extent_eval(const int64_t* code, uint32_t len, const int64_t* vars,
                                     uint32_t num_vars, int64_t* out);

/* CRC-32C (Castagnoli), continued: kiln_abi_crc32c(kiln_abi_crc32c(0, a), b) is the CRC of a
 * followed by b. Portable code (slicing by 8); |use_hardware| nonzero uses the SSE4.2 or ARMv8
 * CRC instructions, which the caller must know the CPU has. */
KILN_ABI_FN uint32_t kiln_abi_crc32c(uint32_t crc, const void* data, size_t len, int use_hardware);

/* The metadata checksum (Package.metadata_crc32c): CRC-32C of the whole buffer with the code and
 * constants payloads skipped (their sections have their own checksums) and the checksum field's
 * four bytes read as zero. |code| and |constants| are the payloads' byte ranges (size 0: absent),
 * |crc_field| the position of the checksum field. Returns 0 and the checksum in *|out_crc|, or
 * -1 if a region lies outside the buffer or two regions overlap. */
typedef struct kiln_abi_region {
  uint64_t offset;
  uint64_t size;
} kiln_abi_region;
KILN_ABI_FN int kiln_abi_metadata_crc32c(const uint8_t* buf, size_t size, kiln_abi_region code,
                                         kiln_abi_region constants, uint64_t crc_field,
                                         int use_hardware, uint32_t* out_crc);

#ifdef __cplusplus
}
#endif

#endif /* KILN_SCHEMA_KILN_ABI_H_ */
