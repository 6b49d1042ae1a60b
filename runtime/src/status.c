/* Status names, the thread's last error message, and allocation helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local char g_message[1024];

const char* kiln_status_name(kiln_status s) {
  switch (s) {
    case KILN_OK: return "KILN_OK";
    case KILN_INVALID_ARGUMENT: return "KILN_INVALID_ARGUMENT";
    case KILN_NOT_FOUND: return "KILN_NOT_FOUND";
    case KILN_INVALID_PACKAGE: return "KILN_INVALID_PACKAGE";
    case KILN_CHECKSUM_MISMATCH: return "KILN_CHECKSUM_MISMATCH";
    case KILN_UNSUPPORTED: return "KILN_UNSUPPORTED";
    case KILN_MISSING_CPU_FEATURE: return "KILN_MISSING_CPU_FEATURE";
    case KILN_OUT_OF_MEMORY: return "KILN_OUT_OF_MEMORY";
    case KILN_IO_ERROR: return "KILN_IO_ERROR";
    case KILN_FAILED_PRECONDITION: return "KILN_FAILED_PRECONDITION";
    case KILN_INTERNAL: return "KILN_INTERNAL";
  }
  return "KILN_UNKNOWN_STATUS";
}

const char* kiln_last_error_message(void) { return g_message; }

kiln_status kiln_error(kiln_status status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_message, sizeof g_message, fmt, ap);
  va_end(ap);
  return status;
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
  if (a) a->free(a->self, p);
  else free(p);
}

static const size_t kSizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
static const char* kNames[] = {"bool",   "int8",    "int16",    "int32",   "int64",   "uint8",  "uint16",
                               "uint32", "uint64", "float16", "bfloat16", "float32", "float64"};

size_t kiln_dtype_size(kiln_dtype d) { return (unsigned)d < 13 ? kSizes[d] : 0; }
const char* kiln_dtype_name(kiln_dtype d) { return (unsigned)d < 13 ? kNames[d] : "unknown"; }
