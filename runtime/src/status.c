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

/* The |n|-th of the NUL-separated strings in |blob| (ended by an empty one), or NULL. One string
 * for a table of names: no pointer (and no relocation in the static library) per name. */
static const char* nth_string(const char* blob, unsigned n) {
  for (; *blob; blob += strlen(blob) + 1)
    if (n-- == 0) return blob;
  return NULL;
}

const char* kiln_status_name(kiln_status s) {
  const char* name = nth_string(
      "KILN_OK\0KILN_INVALID_ARGUMENT\0KILN_NOT_FOUND\0KILN_INVALID_PACKAGE\0"
      "KILN_CHECKSUM_MISMATCH\0KILN_UNSUPPORTED\0KILN_MISSING_CPU_FEATURE\0KILN_OUT_OF_MEMORY\0"
      "KILN_IO_ERROR\0KILN_FAILED_PRECONDITION\0KILN_INTERNAL\0KILN_SIGNATURE_INVALID\0",
      (unsigned)s);
  return name ? name : "KILN_UNKNOWN_STATUS";
}

const char* kiln_last_error_message(void) {
  return g_message;
}

#ifdef KILN_RT_AMALGAMATION
/* Message |msg| (its offset in the packed table) written out in |out|: a byte 0x80 + i is word
 * i of the dictionary (messages_packed.h). */
static const char* message_text(kiln_message msg, char* out) {
  char* o = out;
  for (const unsigned char* p = kiln_messages_packed + msg; *p; ++p) {
    if (*p < 0x80) {
      *o++ = (char)*p;
      continue;
    }
    const char* w = nth_string((const char*)kiln_message_words, *p - 0x80u);
    size_t n = strlen(w);
    memcpy(o, w, n);
    o += n;
  }
  *o = 0;
  return out;
}
#define MESSAGE_BUFFER KILN_MESSAGE_MAX_LENGTH + 1
#define MESSAGE_TEXT(msg, buf) message_text(msg, buf)
#else
#define MESSAGE_BUFFER 1
#define MESSAGE_TEXT(msg, buf) ((void)(buf), (msg))
#endif

kiln_status kiln_error(kiln_status status, kiln_message msg, ...) {
  char text[MESSAGE_BUFFER];
  va_list ap;
  va_start(ap, msg);
  vsnprintf(g_message, sizeof g_message, MESSAGE_TEXT(msg, text), ap);
  va_end(ap);
  return status;
}

kiln_status kiln_error_context(kiln_status status, const char* a, const char* b) {
  size_t na = strlen(a), nb = strlen(b), n = na + nb + 2;
  size_t len = strlen(g_message);
  if (n >= sizeof g_message) return status;
  if (n + len >= sizeof g_message) len = sizeof g_message - n - 1;
  memmove(g_message + n, g_message, len);
  g_message[n + len] = 0;
  memcpy(g_message, a, na);
  memcpy(g_message + na, b, nb);
  memcpy(g_message + na + nb, ": ", 2);
  return status;
}

kiln_status kiln_invalid(kiln_message msg, ...) {
  static const char prefix[] = "invalid package: ";
  char text[MESSAGE_BUFFER];
  memcpy(g_message, prefix, sizeof prefix);
  va_list ap;
  va_start(ap, msg);
  vsnprintf(g_message + sizeof prefix - 1, sizeof g_message - (sizeof prefix - 1),
            MESSAGE_TEXT(msg, text), ap);
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

size_t kiln_dtype_size(kiln_dtype d) {
  return (unsigned)d < KILN_ABI_DTYPE_COUNT ? kSizes[d] : 0;
}
const char* kiln_dtype_name(kiln_dtype d) {
  const char* name = nth_string(KILN_ABI_DTYPE_NAME_STRING, (unsigned)d);
  return name ? name : "unknown";
}
