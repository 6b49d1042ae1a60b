/* Internal structures and helpers of libkiln_rt. Not installed. */
#ifndef KILN_RT_INTERNAL_H_
#define KILN_RT_INTERNAL_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Functions shared between the runtime's source files. The libraries are compiled as one
 * translation unit (CMake's unity build defines KILN_RT_AMALGAMATION, as SQLite's amalgamation
 * does): there these are static, so the archive carries no symbols and no relocations for them.
 * Compiled file by file (the sanitizer builds in tests/) they are extern. */
#ifdef KILN_RT_AMALGAMATION
#define KILN_RT_PRIVATE static
#else
#define KILN_RT_PRIVATE
#endif

#include "kiln/kiln.h"
#include "kiln_abi.h"
#include "messages.h"

/* Compiled file by file, a message is its literal: the compiler checks the arguments. */
#ifdef KILN_RT_AMALGAMATION
#define KILN_MESSAGE_FORMAT(fmt, args)
#else
#define KILN_MESSAGE_FORMAT(fmt, args) __attribute__((format(printf, fmt, args)))
#endif

/* Sets the thread's last error message, message |msg| (messages.h: KM(ID)) formatted with the
 * arguments, and returns |status|. */
KILN_RT_PRIVATE kiln_status kiln_error(kiln_status status, kiln_message msg, ...)
    KILN_MESSAGE_FORMAT(2, 3);
/* Puts "|a||b|: " before the thread's last error message; returns |status|. */
KILN_RT_PRIVATE kiln_status kiln_error_context(kiln_status status, const char* a, const char* b);
/* kiln_error(KILN_INVALID_PACKAGE, "invalid package: " fmt, ...): the verifier's many messages
 * share their prefix. */
KILN_RT_PRIVATE kiln_status kiln_invalid(kiln_message msg, ...) KILN_MESSAGE_FORMAT(1, 2);
#define KILN_RETURN_IF_ERROR(expr)          \
  do {                                      \
    kiln_status kiln_s_ = (expr);           \
    if (kiln_s_ != KILN_OK) return kiln_s_; \
  } while (0)

/* Allocation through the model's allocator (or malloc). */
KILN_RT_PRIVATE void* kiln_alloc(const kiln_allocator* a, size_t size, size_t alignment);
KILN_RT_PRIVATE void kiln_free(const kiln_allocator* a, void* p);

/* Overflow-checked arithmetic on sizes (nonzero on overflow). */
static inline int kiln_add_overflow(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}
static inline int kiln_mul_overflow(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

/* CRC-32C (kiln_abi.h), with the CPU's CRC instructions when it has them. */
KILN_RT_PRIVATE uint32_t kiln_crc32c(uint32_t crc, const void* data, size_t len);

/* ---- the verified model ----
 * Everything here is the runtime's own memory, copied out of the package while verifying it:
 * after loading, only the weights (constants), the self-test's tensors and the code (copied into
 * its own mapping by the ELF loader) are used from the package bytes, so a package buffer that
 * changes after load cannot change what a session reads about the model. */

typedef struct kiln_slot_desc {
  uint8_t kind;
  uint8_t dtype;
  uint32_t index;
  uint64_t offset;
  uint64_t size;
  uint32_t first_group, last_group;
  uint32_t in_place_of; /* format 2.9: the slot written over in place, + 1 (0: none) */
} kiln_slot_desc;

typedef struct kiln_launch_desc {
  uint32_t kernel;
  uint32_t nargs;
  const uint32_t* args; /* slot of each argument (in m->launch_args) */
  uint32_t ntasks;
  uint32_t group;
  const char* label; /* in m->launch_strings, or the kernel's name */
} kiln_launch_desc;

typedef struct kiln_group_desc {
  uint32_t first_launch;
  uint32_t num_launches;
  uint32_t num_items; /* sum of the launches' task counts */
} kiln_group_desc;

typedef struct kiln_tensor_desc {
  const char* name; /* in the model's copy */
  uint8_t dtype;
  uint32_t rank;
  const int64_t* shape; /* in the model's copy */
  uint64_t size_bytes;  /* at the bounds for a symbolic tensor */
  uint32_t slot;
  uint32_t dims_offset; /* the tensor's first dim in a session's shape array of its list */
  /* symbolic packages (format 2.4), in the model's symbol copy; NULL for a static tensor.
   * Inputs: per axis, the symbol it sets or -1. Outputs: per axis, the extent program
   * extent_code[extent_offsets[i], extent_offsets[i + 1]) (extent_offsets has rank + 1 entries). */
  const int32_t* axis_symbols;
  const int64_t* extent_code;
  const uint32_t* extent_offsets;
  /* format 2.5, inputs: per element, the symbol its value sets (numel entries); NULL: none */
  const int32_t* value_symbols;
} kiln_tensor_desc;

/* A loop group (format 2.8): groups first_group..last_group run once per iteration. */
typedef struct kiln_loop_desc {
  const char* name; /* in m->loop_names */
  uint32_t first_group, last_group;
  int32_t trips_slot, cond_slot; /* -1: none */
  int64_t max_trips;
  uint32_t iteration, count; /* symbols */
} kiln_loop_desc;

/* A size computed from data (format 2.8): after group |group| the runtime reads slot |slot|
 * (an int64 scalar) into symbol |symbol|. */
typedef struct kiln_count_desc {
  uint32_t symbol, slot, group;
} kiln_count_desc;

typedef struct kiln_symbol_desc {
  const char* name; /* in the model's symbol copy */
  int64_t min, max;
} kiln_symbol_desc;

typedef kiln_abi_kernel_fn kiln_kernel_fn;

typedef struct kiln_kernel_desc {
  const char* name; /* in the model's copy */
  uint32_t entry;   /* index into the entry table */
  uint32_t nargs;
  uint64_t flops; /* per run (format 2.3; 0 unknown) */
  /* while loading only: positions in the package of the argument dtypes (nargs bytes) and
   * access extents (nargs ArgExtent structs), and the extents in the code's entry table */
  uint64_t arg_dtypes, arg_extents;
  const uint8_t* code_extents;
} kiln_kernel_desc;

/* The kernels' entry table (kiln_abi.h): from an ELF shared object mapped by kiln's loader, or
 * linked into the application (kiln_model_load_static). */
typedef struct kiln_code {
  uint8_t* base; /* the mapped image (NULL for a static table) */
  size_t size;
  const uint8_t* table; /* the entry table, in readable memory as far as its extents reach */
  const kiln_kernel_fn* entries;
  uint32_t num_entries;
} kiln_code;

struct kiln_model {
  kiln_allocator allocator;
  int has_allocator;
  /* the package bytes: a file mapping, a private copy, or caller memory */
  const uint8_t* buf;
  size_t size;
  void* mapping;    /* munmap on release (file), or NULL */
  void* owned_copy; /* kiln_free on release, or NULL */
  /* verified contents */
  uint32_t num_inputs, num_outputs, num_slots, num_kernels, num_launches, num_groups;
  kiln_tensor_desc* inputs;
  kiln_tensor_desc* outputs;
  kiln_slot_desc* slots;
  kiln_kernel_desc* kernel_descs;
  kiln_kernel_fn* kernels; /* by kernel index, bound from the entry table */
  kiln_launch_desc* launches;
  kiln_group_desc* groups;
  const uint8_t* constants;
  uint64_t constants_size;
  uint64_t arena_size;
  uint32_t arena_alignment;
  kiln_code code;
  const void* static_table; /* kiln_model_load_static: the linked entry table, else NULL */
  /* the optional self-test (kilnc --embed-selftest) */
  int has_selftest;
  const uint8_t** selftest_inputs;  /* per input: size_bytes bytes in the package */
  const uint8_t** selftest_outputs; /* per output: the expected bytes */
  /* the copies the descriptions point into */
  void* tensor_copy[2];  /* the shapes and names of the inputs [0] and the outputs [1] */
  char* kernel_strings;  /* kernel names */
  char* launch_strings;  /* launch labels */
  uint32_t* launch_args; /* every launch's argument slots */
  /* symbolic dims (format 2.4): their names, bounds, and the tensors' symbol data */
  uint32_t num_symbols;
  kiln_symbol_desc symbols[KILN_ABI_MAX_SYMBOLS];
  void* symbol_copy;
  /* format 2.5: conditions on the symbols' values: check i's program is check_code[i] of
   * check_len[i] words, its error check_messages[i] */
  uint32_t num_checks;
  const int64_t* check_code[KILN_ABI_MAX_CHECKS];
  uint32_t check_len[KILN_ABI_MAX_CHECKS];
  const char* check_messages[KILN_ABI_MAX_CHECKS];
  uint32_t input_dims, output_dims; /* the sum of the inputs' (outputs') ranks */
  /* format 2.8: the loop groups, in group order, and their names after them in one block */
  uint32_t num_loops;
  kiln_loop_desc* loops;
  uint32_t num_counts;
  kiln_count_desc counts[KILN_ABI_MAX_SYMBOLS];
  float selftest_tolerance;
  /* the kernel variants (kiln_model_variant_info): CPU names (truncated to 31 characters),
   * whether this CPU runs each, and the one loaded */
  uint32_t num_variants, variant;
  char variant_cpu[KILN_ABI_MAX_VARIANTS][32];
  uint8_t variant_runs[KILN_ABI_MAX_VARIANTS];
  int live_sessions; /* atomic */
};

KILN_RT_PRIVATE const kiln_allocator* kiln_model_allocator(const kiln_model* m);

/* What the application trusts (kiln_model_options' signature fields). */
typedef struct kiln_trust {
  const uint8_t (*keys)[32];
  size_t num_keys;
  int require;
  const uint8_t* pinned_sha256;
} kiln_trust;

/* package.c: verify the package bytes and fill the model's descriptions (the code too) from the
 * kernel variant named |variant| (NULL: the best this CPU runs). On failure everything it
 * allocated is released. */
KILN_RT_PRIVATE kiln_status kiln_package_load(kiln_model* m, int verify_checksums,
                                              const kiln_trust* trust, const char* variant);
/* Releases what kiln_package_load allocated (also what a failed load left); idempotent. */
KILN_RT_PRIVATE void kiln_package_unload(kiln_model* m);

/* elf_loader.c */
KILN_RT_PRIVATE kiln_status kiln_elf_load(const uint8_t* elf, size_t size, kiln_code* out);
KILN_RT_PRIVATE void kiln_elf_unload(kiln_code* code);

/* cpu_features.c: nonzero if the running CPU has the LLVM-named feature |name| (and the OS
 * enabled its registers); -1 if the name is not one kiln_abi.h lists for this architecture. */
KILN_RT_PRIVATE int kiln_cpu_has_feature(const char* name);
/* Nonzero if the CPU has CRC-32C instructions (SSE4.2, ARMv8 CRC). */
KILN_RT_PRIVATE int kiln_cpu_has_crc32c(void);
/* The architecture the runtime runs on: "x86_64" or "aarch64". */
KILN_RT_PRIVATE const char* kiln_runtime_arch(void);

/* thread_pool.c. A session runs on at most KILN_MAX_THREADS threads (kiln.h documents it). */
#define KILN_MAX_THREADS 1024
typedef struct kiln_pool kiln_pool;
typedef void (*kiln_work_fn)(void* ctx, uint32_t item);
KILN_RT_PRIVATE kiln_status kiln_pool_create(const kiln_allocator* a, size_t num_workers,
                                             kiln_pool** out);
KILN_RT_PRIVATE void kiln_pool_destroy(const kiln_allocator* a, kiln_pool* pool);
/* Runs fn(ctx, i) for every i in [0, n) on the workers and the calling thread; returns when all
 * are done. */
KILN_RT_PRIVATE void kiln_pool_run(kiln_pool* pool, uint32_t n, kiln_work_fn fn, void* ctx);
/* 0 on the thread that calls kiln_pool_run (any thread that is not a worker), 1.. on workers. */
KILN_RT_PRIVATE uint32_t kiln_pool_thread_index(void);
#if defined(KILN_RT_TEST_HOOKS)
/* Tests only: the next job's generation is gen + 1 (thread_pool.c). */
void kiln_pool_set_generation(kiln_pool* pool, uint32_t gen);
#endif

#endif /* KILN_RT_INTERNAL_H_ */
