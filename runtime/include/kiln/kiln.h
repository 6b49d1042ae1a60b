/* libkiln_rt: load a kiln package and run it. C11, libc + pthreads only.
 *
 * Usage:
 *
 *   kiln_model* model;
 *   if (kiln_model_load_file("model.kiln", NULL, &model) != KILN_OK) {
 *     fprintf(stderr, "%s\n", kiln_last_error_message());
 *     return 1;
 *   }
 *   kiln_session* session;
 *   kiln_session_options so;
 *   kiln_session_options_init(&so);
 *   so.num_threads = 2;
 *   kiln_session_create(model, &so, &session);
 *   kiln_session_set_input(session, 0, KILN_DTYPE_FLOAT32, pixels, sizeof pixels);
 *   kiln_session_run(session);
 *   const void* logits; size_t size;
 *   kiln_session_output(session, 0, &logits, &size);
 *   kiln_session_release(session);
 *   kiln_model_release(model);
 *
 * Conventions: every function returns a kiln_status (KILN_OK is 0); on failure the thread's
 * last error message (kiln_last_error_message) says what and where. Output parameters are last
 * and named out_*. Structs passed in start with `struct_size` (set it with the *_init function):
 * fields are only ever appended. No function aborts the process on bad input.
 */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_API_VERSION 1

/* The release (CMake reads it from here: one place). */
#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0
#define KILN_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

typedef enum kiln_status {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,    /* a NULL pointer, an index out of range, a size/dtype mismatch */
  KILN_NOT_FOUND = 2,           /* no such file, input or output */
  KILN_INVALID_PACKAGE = 3,     /* the package failed a structural or semantic check */
  KILN_CHECKSUM_MISMATCH = 4,   /* a section's bytes differ from their recorded checksum */
  KILN_UNSUPPORTED = 5,         /* a format version or target this runtime does not run */
  KILN_MISSING_CPU_FEATURE = 6, /* the package needs CPU features this machine lacks */
  KILN_OUT_OF_MEMORY = 7,
  KILN_IO_ERROR = 8,
  KILN_FAILED_PRECONDITION = 9, /* the call is valid but not now (e.g. output before a run) */
  KILN_INTERNAL = 10,
  KILN_SIGNATURE_INVALID = 11 /* not signed by a trusted key, or changed since signing */
} kiln_status;

/* The library's version ("0.1.0": that of the libkiln_rt actually loaded, which may differ from
 * the header's KILN_VERSION_STRING) and the package format it reads: major |out_format_major|
 * exactly, minors up to |out_format_minor| (newer minors only add fields it may ignore). Either
 * pointer may be NULL. Thread-safe. */
KILN_API const char* kiln_version(unsigned* out_format_major, unsigned* out_format_minor);

/* "KILN_OK", "KILN_INVALID_ARGUMENT", ... Never NULL. Thread-safe. */
KILN_API const char* kiln_status_name(kiln_status status);

/* The message of the last non-OK status returned by a kiln function on the calling thread
 * ("" if none). Valid until the next kiln call on this thread. Thread-safe (thread-local). */
KILN_API const char* kiln_last_error_message(void);

/* Element types (the package's numbering). */
typedef enum kiln_dtype {
  KILN_DTYPE_BOOL = 0,
  KILN_DTYPE_INT8 = 1,
  KILN_DTYPE_INT16 = 2,
  KILN_DTYPE_INT32 = 3,
  KILN_DTYPE_INT64 = 4,
  KILN_DTYPE_UINT8 = 5,
  KILN_DTYPE_UINT16 = 6,
  KILN_DTYPE_UINT32 = 7,
  KILN_DTYPE_UINT64 = 8,
  KILN_DTYPE_FLOAT16 = 9,
  KILN_DTYPE_BFLOAT16 = 10,
  KILN_DTYPE_FLOAT32 = 11,
  KILN_DTYPE_FLOAT64 = 12
} kiln_dtype;

/* Bytes per element of |dtype|, or 0 for a value that is not a kiln_dtype. Thread-safe. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);
/* "float32", ... or "unknown". Thread-safe. */
KILN_API const char* kiln_dtype_name(kiln_dtype dtype);

/* A caller-supplied allocator. |alloc| returns |size| bytes aligned to |alignment| (a power of
 * two) or NULL; |free| releases what |alloc| returned. Must be thread-safe if models or sessions
 * using it are created from several threads. */
typedef struct kiln_allocator {
  void* self;
  void* (*alloc)(void* self, size_t size, size_t alignment);
  void (*free)(void* self, void* ptr);
} kiln_allocator;

/* ------------------------------------------------------------------------------------------ */
/* Models: a loaded, verified package. Immutable: any number of threads may create sessions on
 * one model and run them concurrently. */

typedef struct kiln_model kiln_model;

typedef struct kiln_model_options {
  size_t struct_size;              /* sizeof(kiln_model_options) */
  const kiln_allocator* allocator; /* NULL: the C library's allocator */
  int skip_checksums;              /* nonzero: do not verify CRCs (every other check still runs) */
  /* Signed packages (kilnc compile --sign KEY). A signature is checked against these Ed25519
   * public keys (32 bytes each, the .pub files kilnc keygen writes): a package signed by one
   * of them must verify; with |require_signature| nonzero, every package must be signed by one
   * of them. Read during the load call only. */
  const uint8_t (*trusted_keys)[32];
  size_t num_trusted_keys;
  int require_signature;
  /* NULL, or the SHA-256 (32 bytes) the package's bytes must have: for an application that ships
   * with one known package. */
  const uint8_t* pinned_sha256;
  /* NULL, or the CPU name of the kernel variant to run (a package compiled with kilnc --cpu A,B,C
   * holds one variant per CPU; by default the runtime runs the last one listed whose CPU features
   * this CPU has). A name the package lacks is KILN_INVALID_ARGUMENT listing its variants; a
   * variant this CPU cannot run is KILN_MISSING_CPU_FEATURE. */
  const char* variant;
} kiln_model_options;

/* Fills |options| with the defaults. |options| must not be NULL. */
KILN_API void kiln_model_options_init(kiln_model_options* options);

/* Maps the package file at |path| (weights are used in place, not copied), verifies all of it
 * (the signature when keys are trusted, structure and bounds, format version, checksums, target
 * and CPU features, offsets and sizes, indices, argument counts and every kernel's access
 * extents against its slots, the memory plan's overlap proof, write-before-read and no races in
 * the schedule; docs/package-format.md lists every check and what it proves), and loads its
 * kernels with kiln's own ELF loader. |options| may be NULL (defaults). On success *|out_model|
 * is a model the caller releases with kiln_model_release.
 * Errors: KILN_INVALID_ARGUMENT (NULL path or out_model, require_signature without keys),
 * KILN_NOT_FOUND, KILN_IO_ERROR, KILN_INVALID_PACKAGE, KILN_CHECKSUM_MISMATCH, KILN_UNSUPPORTED,
 * KILN_MISSING_CPU_FEATURE, KILN_SIGNATURE_INVALID, KILN_OUT_OF_MEMORY. Thread-safe. */
KILN_API kiln_status kiln_model_load_file(const char* path, const kiln_model_options* options,
                                          kiln_model** out_model);

/* As kiln_model_load_file, from |size| bytes at |data|. The bytes are used in place when |data|
 * is 64-byte aligned (then they must stay valid and unchanged until the model is released);
 * otherwise they are copied. */
KILN_API kiln_status kiln_model_load_memory(const void* data, size_t size,
                                            const kiln_model_options* options,
                                            kiln_model** out_model);

/* Static-library packages (`kilnc compile --emit static-lib -o NAME`): the kernels are linked
 * into the application (NAME.a, declared in NAME.h as NAME_kernels) and the package holds no
 * code. |kernels| is &NAME_kernels. Otherwise as kiln_model_load_memory: no file mapping and no
 * code loading, so with a caller allocator (|options|) and 64-byte-aligned package memory nothing
 * comes from the C library's heap. Errors: those of kiln_model_load_memory, and
 * KILN_INVALID_ARGUMENT (NULL |kernels|), KILN_INVALID_PACKAGE (the table is not a kiln entry
 * table, or belongs to another package). A static package given to the other load functions is
 * KILN_INVALID_PACKAGE, naming this function. */
KILN_API kiln_status kiln_model_load_static(const void* data, size_t size, const void* kernels,
                                            const kiln_model_options* options,
                                            kiln_model** out_model);

/* Releases |model| (NULL is allowed and does nothing). Fails with KILN_FAILED_PRECONDITION, and
 * releases nothing, while sessions created on the model are alive. Not thread-safe with other
 * uses of the same model. */
KILN_API kiln_status kiln_model_release(kiln_model* model);

typedef struct kiln_tensor_info {
  size_t struct_size; /* set by the caller: sizeof(kiln_tensor_info) */
  const char* name;   /* valid while the model lives */
  kiln_dtype dtype;
  size_t rank;
  const int64_t* shape; /* |rank| dimensions, valid while the model lives */
  size_t size_bytes;
  /* Appended in 0.2 (filled when struct_size covers it): for an input of a symbolic package,
   * per axis the symbol it sets (kiln_model_symbol_info's index) or -1; NULL otherwise. The
   * shape above is then the layout at the symbols' maximums. */
  const int32_t* axis_symbols;
} kiln_tensor_info;

/* Counts and descriptions of the model's inputs and outputs. Errors: KILN_INVALID_ARGUMENT for
 * NULL pointers, an index out of range, or a struct_size smaller than the first version's.
 * Thread-safe. */
KILN_API kiln_status kiln_model_input_count(const kiln_model* model, size_t* out_count);
KILN_API kiln_status kiln_model_output_count(const kiln_model* model, size_t* out_count);
KILN_API kiln_status kiln_model_input_info(const kiln_model* model, size_t index,
                                           kiln_tensor_info* out_info);
KILN_API kiln_status kiln_model_output_info(const kiln_model* model, size_t index,
                                            kiln_tensor_info* out_info);
/* The index of the input/output called |name|. Errors: KILN_INVALID_ARGUMENT, KILN_NOT_FOUND. */
KILN_API kiln_status kiln_model_find_input(const kiln_model* model, const char* name,
                                           size_t* out_index);
KILN_API kiln_status kiln_model_find_output(const kiln_model* model, const char* name,
                                            size_t* out_index);

/* The arena a session needs: |out_size| bytes aligned to |out_alignment|. Thread-safe. */
KILN_API kiln_status kiln_model_arena_requirements(const kiln_model* model, size_t* out_size,
                                                   size_t* out_alignment);

/* The launches, in schedule order: a launch runs one kernel on its buffers, split into tasks;
 * the launches of one parallel group may run at the same time. |label| names the model nodes
 * the launch computes ("conv1+relu1", fused nodes joined by '+'; the kernel's name for packages
 * older than format 2.1), valid while the model lives. Errors: KILN_INVALID_ARGUMENT (NULL
 * pointers, index out of range, struct_size smaller than the first version's). Thread-safe. */
typedef struct kiln_launch_info {
  size_t struct_size; /* set by the caller: sizeof(kiln_launch_info) */
  size_t kernel;      /* kiln_model_kernel_name's index */
  size_t group;
  size_t num_tasks;
  const char* label;
  uint64_t flops; /* appended: floating-point operations per run (0: unknown, format < 2.3) */
} kiln_launch_info;
KILN_API kiln_status kiln_model_launch_count(const kiln_model* model, size_t* out_count);
KILN_API kiln_status kiln_model_launch_info(const kiln_model* model, size_t index,
                                            kiln_launch_info* out_info);

/* The package's kernel variants (kilnc compile --cpu A,B,C; one for a package of one CPU), in the
 * order compiled: each variant's CPU name (valid while the model lives), whether this CPU has
 * every feature it requires, and whether it is the one loaded. Errors: KILN_INVALID_ARGUMENT
 * (NULL pointers, index out of range, struct_size smaller than the first version's).
 * Thread-safe. */
typedef struct kiln_variant_info {
  size_t struct_size; /* set by the caller: sizeof(kiln_variant_info) */
  const char* cpu;
  int runs_here;
  int chosen;
} kiln_variant_info;
KILN_API kiln_status kiln_model_variant_count(const kiln_model* model, size_t* out_count);
KILN_API kiln_status kiln_model_variant_info(const kiln_model* model, size_t index,
                                             kiln_variant_info* out_info);

/* The number of kernels and the name of kernel |index| (for profiles). Thread-safe. */
KILN_API kiln_status kiln_model_kernel_count(const kiln_model* model, size_t* out_count);
KILN_API kiln_status kiln_model_kernel_name(const kiln_model* model, size_t index,
                                            const char** out_name);

/* ------------------------------------------------------------------------------------------ */
/* Sessions: one model's state for running it: the arena, input/output bindings and a pool of
 * worker threads. A session is used by one thread at a time; use one session per thread. */

typedef struct kiln_session kiln_session;

typedef struct kiln_session_options {
  size_t struct_size; /* sizeof(kiln_session_options) */
  size_t num_threads; /* threads running the kernels, the caller's included; 0 or 1: no workers;
                         at most 1024 */
  void* arena;        /* NULL: the session allocates its arena; else caller memory of at least
                         kiln_model_arena_requirements' size and alignment, valid until release */
  size_t arena_size;
  int profile; /* nonzero: time every launch (reads the clock around each one) */
  /* Appended in 0.1 (a smaller struct_size from an older caller means 0): */
  int trace; /* nonzero: record when each thread ran each launch (kiln_session_trace) */
} kiln_session_options;

KILN_API void kiln_session_options_init(kiln_session_options* options);

/* Creates a session on |model| (which must outlive it: releasing the model fails while sessions
 * exist). Allocates everything the session will ever need here: arena (unless supplied), input
 * copies, outputs, worker threads. |options| may be NULL (one thread, own arena).
 * Errors: KILN_INVALID_ARGUMENT (NULL pointers, arena too small or misaligned, more than 1024
 * threads),
 * KILN_OUT_OF_MEMORY, KILN_INTERNAL (threads could not start). Thread-safe. */
KILN_API kiln_status kiln_session_create(kiln_model* model, const kiln_session_options* options,
                                         kiln_session** out_session);

/* Stops the workers and frees the session (NULL does nothing). Not thread-safe with other uses
 * of the same session. */
KILN_API kiln_status kiln_session_release(kiln_session* session);

/* Copies |size_bytes| bytes of input |index| into the session. |dtype| and |size_bytes| must match
 * the model's input exactly (|data| may be NULL only for a tensor with no elements). Replaces an
 * earlier binding of that input. Errors:
 * KILN_INVALID_ARGUMENT (NULL pointers, index out of range, dtype or size mismatch). */
KILN_API kiln_status kiln_session_set_input(kiln_session* session, size_t index, kiln_dtype dtype,
                                            const void* data, size_t size_bytes);

/* Binds caller memory as input |index| without copying: it is read by every later run, so it
 * must stay valid and unchanged while runs execute, and must not overlap a bound output. It must
 * be aligned to the element size (KILN_INVALID_ARGUMENT otherwise). */
KILN_API kiln_status kiln_session_bind_input(kiln_session* session, size_t index, kiln_dtype dtype,
                                             const void* data, size_t size_bytes);

/* Binds caller memory as output |index|: later runs write the output there. Aligned to the
 * element size, as for kiln_session_bind_input. */
KILN_API kiln_status kiln_session_bind_output(kiln_session* session, size_t index, kiln_dtype dtype,
                                              void* data, size_t size_bytes);

/* Runs the model once. Allocates nothing and makes no system call beyond waking its workers.
 * Errors: KILN_INVALID_ARGUMENT (NULL; a shape or shape operand the package was not compiled
 * for; a loop group whose trip count or condition would take it past the iterations it is
 * planned for, naming the model node: no output of that run is valid then),
 * KILN_FAILED_PRECONDITION (an input never set). */
KILN_API kiln_status kiln_session_run(kiln_session* session);

/* The bytes of output |index| from the last run (in session memory, or the bound memory).
 * Valid until the next run or release. Errors: KILN_INVALID_ARGUMENT,
 * KILN_FAILED_PRECONDITION (no run has completed yet). */
KILN_API kiln_status kiln_session_output(const kiln_session* session, size_t index,
                                         const void** out_data, size_t* out_size_bytes);

/* ---- symbolic shapes (packages compiled with `kilnc compile --dim NAME=MIN..MAX`) ----
 * One package runs every size in the symbols' bounds. kiln_model_input_info and
 * kiln_model_output_info describe such a tensor at the bounds (its memory is planned there;
 * kiln_tensor_info.axis_symbols names an input's symbolic axes);
 * its run-time shape is given with kiln_session_set_input_shaped and read with
 * kiln_session_output_shape. Symbolic inputs and outputs cannot be bound (bind_input and
 * bind_output return KILN_INVALID_ARGUMENT); kiln_session_set_input sets one at its bounds. */

/* The package's symbols: count, and symbol |index|'s name (valid while the model lives) and
 * inclusive bounds. Errors: KILN_INVALID_ARGUMENT (NULL pointers, index out of range). */
KILN_API kiln_status kiln_model_symbol_count(const kiln_model* model, size_t* out_count);
KILN_API kiln_status kiln_model_symbol_info(const kiln_model* model, size_t index,
                                            const char** out_name, int64_t* out_min,
                                            int64_t* out_max);

/* Copies input |index| of shape |shape| (|rank| dims, row-major, |size_bytes| = the product of
 * the dims times the element size) into the session. A static axis must equal the model's; a
 * symbolic one must lie in its symbol's bounds; inputs that share a symbol must agree (checked
 * by kiln_session_run, which names both). Works for static inputs too (the shape must then be
 * the model's). Errors: KILN_INVALID_ARGUMENT naming the input, the axis, the value and the
 * bounds (or the NULL pointer, dtype, rank or size that is wrong). */
KILN_API kiln_status kiln_session_set_input_shaped(kiln_session* session, size_t index,
                                                   kiln_dtype dtype, const void* data,
                                                   size_t size_bytes, size_t rank,
                                                   const int64_t* shape);

/* The shape of output |index| in the last run (the declared shape for a static output; a loop
 * group's stacked output has as many rows as the loop ran iterations), valid until the next
 * run or release; kiln_session_output then gives that shape's bytes, row-major.
 * Errors: KILN_INVALID_ARGUMENT, KILN_FAILED_PRECONDITION (no run has completed yet). */
KILN_API kiln_status kiln_session_output_shape(const kiln_session* session, size_t index,
                                               size_t* out_rank, const int64_t** out_shape);

/* Profiles (sessions created with profile set): per launch, in schedule order, its kernel index,
 * how many runs timed it and the total milliseconds. Errors: KILN_INVALID_ARGUMENT,
 * KILN_FAILED_PRECONDITION (profiling is off). */
KILN_API kiln_status kiln_session_launch_count(const kiln_session* session, size_t* out_count);
KILN_API kiln_status kiln_session_launch_profile(const kiln_session* session, size_t index,
                                                 size_t* out_kernel, uint64_t* out_runs,
                                                 double* out_total_ms);

/* Traces (sessions created with trace set; the runs stay concurrent): for the last run, one
 * event per launch and thread that ran some of its tasks, in launch order then thread order.
 * |thread| 0 is the caller of kiln_session_run, 1.. the session's workers; times are
 * milliseconds since that run began, from the first task of the launch the thread started to
 * the last it finished. Writes at most |capacity| events and sets *|out_count| to how many the
 * run has (capacity 0 asks for the count; a session that never ran has none). Errors:
 * KILN_INVALID_ARGUMENT (NULL session or out_count, NULL events with capacity > 0),
 * KILN_FAILED_PRECONDITION (tracing is off). */
typedef struct kiln_trace_event {
  uint32_t launch; /* kiln_model_launch_info's index */
  uint32_t thread;
  double start_ms, end_ms;
} kiln_trace_event;
KILN_API kiln_status kiln_session_trace(const kiln_session* session, kiln_trace_event* events,
                                        size_t capacity, size_t* out_count);

/* ------------------------------------------------------------------------------------------ */
/* On-device self-test: packages compiled with `kilnc --embed-selftest` carry inputs and the
 * outputs the compiling machine computed for them. */

#define KILN_SELFTEST_MAX_OUTPUTS 16

typedef struct kiln_selftest_report {
  size_t struct_size; /* set by the caller: sizeof(kiln_selftest_report) */
  int passed;         /* nonzero if every output is within the tolerance */
  double tolerance;   /* the package's: float outputs may differ by tolerance * max |expected| */
  size_t num_outputs;
  /* per output (the first KILN_SELFTEST_MAX_OUTPUTS): max |got - expected| / max |expected| for
   * floating-point outputs (max |got - expected| when every expected value is 0), and the
   * fraction of differing elements for integer and boolean outputs */
  double output_error[KILN_SELFTEST_MAX_OUTPUTS];
  double max_error; /* over all outputs */
} kiln_selftest_report;

/* *|out_has| = nonzero if the package carries a self-test. Errors: KILN_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_has_selftest(const kiln_model* model, int* out_has);

/* Runs the embedded inputs on a temporary session with |num_threads| threads (this allocates,
 * like kiln_session_create) and compares every output with the embedded expectation. A failed
 * comparison is not an error: check report->passed. Errors: KILN_INVALID_ARGUMENT (NULL, or a
 * struct_size smaller than the first version's), KILN_NOT_FOUND (no self-test in the package),
 * and those of kiln_session_create. */
KILN_API kiln_status kiln_model_selftest(kiln_model* model, size_t num_threads,
                                         kiln_selftest_report* report);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H_ */
