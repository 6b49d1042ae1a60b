/* The static sample: the digits model linked into the program at build time, the way a bare-metal
 * application uses kiln. `kilnc compile digits.onnx --emit static-lib --embed-data -o
 * digits_static` gives digits_static.a (the kernels and the package as a C array) and
 * digits_static.h; this program links them with libkiln_rt_bare (no threads) and gives the runtime
 * a fixed memory pool, so kiln never calls malloc, mmap or a dynamic loader. It classifies the
 * held-out digits and prints the accuracy and the pool use.
 *
 *   static_digits TEST_IMAGES.npy TEST_LABELS.npy      (the .npy reading is the app's, not kiln's)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "digits_static.h"
#include "kiln/kiln.h"
#include "npy.h"

/* A bump allocator over a static pool: what a device without a heap would hand the runtime. */
static _Alignas(64) unsigned char pool[256 * 1024];
static size_t pool_used, pool_allocs;

static void* pool_alloc(void* self, size_t size, size_t alignment) {
  (void)self;
  size_t start = (pool_used + alignment - 1) & ~(alignment - 1);
  if (start + size > sizeof pool) return NULL;
  pool_used = start + size;
  ++pool_allocs;
  return pool + start;
}
static void pool_free(void* self, void* p) {
  (void)self, (void)p;
} /* released with the pool */

static int fail(kiln_status s, const char* what) {
  fprintf(stderr, "static_digits: %s: %s: %s\n", what, kiln_status_name(s),
          kiln_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: static_digits TEST_IMAGES.npy TEST_LABELS.npy\n");
    return 2;
  }
  char err[512];
  npy_array images, labels;
  if (npy_read(argv[1], &images, err, sizeof err) || npy_read(argv[2], &labels, err, sizeof err)) {
    fprintf(stderr, "static_digits: %s\n", err);
    return 1;
  }
  kiln_allocator allocator = {NULL, pool_alloc, pool_free};
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.allocator = &allocator;
  kiln_model* model;
  kiln_status s = kiln_model_load_static(digits_static_package, (size_t)digits_static_package_size,
                                         &digits_static_kernels, &mo, &model);
  if (s != KILN_OK) return fail(s, "loading the linked model");
  /* The arena from the pool too (any caller memory of the required size and alignment works). */
  size_t arena_size, arena_align;
  s = kiln_model_arena_requirements(model, &arena_size, &arena_align);
  if (s != KILN_OK) return fail(s, "arena requirements");
  kiln_session_options so;
  kiln_session_options_init(&so);
  so.arena = pool_alloc(NULL, arena_size ? arena_size : 1, arena_align);
  so.arena_size = arena_size;
  kiln_session* session;
  s = kiln_session_create(model, &so, &session);
  if (s != KILN_OK) return fail(s, "creating a session");

  const float* pixels = images.data;
  const int64_t* truth = labels.data;
  int n = (int)images.shape[0], correct = 0;
  for (int i = 0; i < n; ++i) {
    s = kiln_session_set_input(session, 0, KILN_DTYPE_FLOAT32, pixels + (size_t)i * 64,
                               64 * sizeof(float));
    if (s == KILN_OK) s = kiln_session_run(session);
    const void* out;
    size_t size;
    if (s == KILN_OK) s = kiln_session_output(session, 0, &out, &size);
    if (s != KILN_OK) return fail(s, "running the model");
    const float* logits = out;
    int best = 0;
    for (int k = 1; k < 10; ++k)
      if (logits[k] > logits[best]) best = k;
    correct += best == truth[i];
  }
  printf("accuracy: %d/%d = %.1f%%\n", correct, n, 100.0 * correct / n);
  printf("kiln memory: %zu bytes in %zu allocations, all from the static pool\n", pool_used,
         pool_allocs);
  kiln_session_release(session);
  kiln_model_release(model);
  npy_free(&images);
  npy_free(&labels);
  return 0;
}
