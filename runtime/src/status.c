/* Status names, the thread's last error message, and allocation helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local char g_message[1024];

const char* kiln_version(unsigned* out_format_major, unsigned* out_format_minor) {
  if (out_format_major) *out_format_major = KILN_ABI_FORMAT_MAJOR;
  if (out_format_minor) *out_format_minor = KILN_ABI_FORMAT_MINOR;
  return KILN_VERSION_STRING;
}

const char* kiln_status_name(kiln_status s) {
  switch (s) {
    case KILN_OK:
      return "KILN_OK";
    case KILN_INVALID_ARGUMENT:
      return "KILN_INVALID_ARGUMENT";
    case KILN_NOT_FOUND:
      return "KILN_NOT_FOUND";
    case KILN_INVALID_PACKAGE:
      return "KILN_INVALID_PACKAGE";
    case KILN_CHECKSUM_MISMATCH:
      return "KILN_CHECKSUM_MISMATCH";
    case KILN_UNSUPPORTED:
      return "KILN_UNSUPPORTED";
    case KILN_MISSING_CPU_FEATURE:
      return "KILN_MISSING_CPU_FEATURE";
    case KILN_OUT_OF_MEMORY:
      return "KILN_OUT_OF_MEMORY";
    case KILN_IO_ERROR:
      return "KILN_IO_ERROR";
    case KILN_FAILED_PRECONDITION:
      return "KILN_FAILED_PRECONDITION";
    case KILN_INTERNAL:
      return "KILN_INTERNAL";
    case KILN_SIGNATURE_INVALID:
      return "KILN_SIGNATURE_INVALID";
  }
  return "KILN_UNKNOWN_STATUS";
}

const char* kiln_last_error_message(void) {
  return g_message;
}

kiln_status kiln_error(kiln_status status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_message, sizeof g_message, fmt, ap);
  va_end(ap);
  return status;
}

kiln_status kiln_invalid(const char* fmt, ...) {
  static const char prefix[] = "invalid package: ";
  memcpy(g_message, prefix, sizeof prefix);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_message + sizeof prefix - 1, sizeof g_message - (sizeof prefix - 1), fmt, ap);
  va_end(ap);
  return KILN_INVALID_PACKAGE;
}

void* kiln_alloc(const kiln_allocator* a, size_t size, size_t alignment) {
  if (size == 0) size = 1;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (a) return a->alloc(a->self, size, alignment);
  void* p = NULL;
  if (posix_memalign(&p, alignment, size) != 0) return NULL;
  return p;
}

void kiln_free(const kiln_allocator* a, void* p) {
  if (!p) return;
  if (a)
    a->free(a->self, p);
  else
    free(p);
}

/* kiln.h's public dtype numbering is the package's (kiln_abi.h). */
#define KILN_SAME_DTYPE(name)                                          \
  _Static_assert((int)KILN_DTYPE_##name == (int)KILN_ABI_DTYPE_##name, \
                 "kiln_dtype " #name " is not kiln_abi.h's")
KILN_SAME_DTYPE(BOOL);
KILN_SAME_DTYPE(INT8);
KILN_SAME_DTYPE(INT16);
KILN_SAME_DTYPE(INT32);
KILN_SAME_DTYPE(INT64);
KILN_SAME_DTYPE(UINT8);
KILN_SAME_DTYPE(UINT16);
KILN_SAME_DTYPE(UINT32);
KILN_SAME_DTYPE(UINT64);
KILN_SAME_DTYPE(FLOAT16);
KILN_SAME_DTYPE(BFLOAT16);
KILN_SAME_DTYPE(FLOAT32);
KILN_SAME_DTYPE(FLOAT64);
#undef KILN_SAME_DTYPE

static const size_t kSizes[KILN_ABI_DTYPE_COUNT] = KILN_ABI_DTYPE_SIZES;
static const char* const kNames[KILN_ABI_DTYPE_COUNT] = KILN_ABI_DTYPE_NAMES;

size_t kiln_dtype_size(kiln_dtype d) {
  return (unsigned)d < KILN_ABI_DTYPE_COUNT ? kSizes[d] : 0;
}
const char* kiln_dtype_name(kiln_dtype d) {
  return (unsigned)d < KILN_ABI_DTYPE_COUNT ? kNames[d] : "unknown";
}
