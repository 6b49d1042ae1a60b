/* Minimal .npy reading and writing for kiln-run and the samples (C, no dependencies). */
#ifndef KILN_TOOLS_NPY_H_
#define KILN_TOOLS_NPY_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

typedef struct npy_array {
  kiln_dtype dtype;
  size_t rank;
  int64_t shape[16];
  void* data;
  size_t size_bytes;
} npy_array;

/* Reads |path|; on failure returns nonzero and writes a message into |err|. */
int npy_read(const char* path, npy_array* out, char* err, size_t err_size);
/* Writes |data| as a .npy file at |path| (written to a temporary name, then renamed). */
int npy_write(const char* path, kiln_dtype dtype, size_t rank, const int64_t* shape,
              const void* data, size_t size_bytes, char* err, size_t err_size);
void npy_free(npy_array* a);

#endif
