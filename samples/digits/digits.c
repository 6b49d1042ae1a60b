/* The digits sample: a C program that embeds the kiln runtime. It compiles nothing: it loads a
 * package, runs it on held-out 8x8 handwritten digits, prints each digit as ASCII art with the
 * predicted and the true label, and the accuracy.
 *
 *   digits MODEL.kiln TEST_IMAGES.npy TEST_LABELS.npy */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "npy.h"

static int fail(kiln_status s, const char* what) {
  fprintf(stderr, "digits: %s: %s: %s\n", what, kiln_status_name(s), kiln_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: digits MODEL.kiln TEST_IMAGES.npy TEST_LABELS.npy\n");
    return 2;
  }
  char err[512];
  npy_array images, labels;
  if (npy_read(argv[2], &images, err, sizeof err) || npy_read(argv[3], &labels, err, sizeof err)) {
    fprintf(stderr, "digits: %s\n", err);
    return 1;
  }
  if (images.dtype != KILN_DTYPE_FLOAT32 || images.rank != 4 || images.shape[2] != 8 ||
      images.shape[3] != 8 || labels.dtype != KILN_DTYPE_INT64 || labels.rank != 1 ||
      labels.shape[0] != images.shape[0]) {
    fprintf(stderr, "digits: expected float32[N,1,8,8] images and int64[N] labels\n");
    return 1;
  }
  kiln_model* model;
  kiln_status s = kiln_model_load_file(argv[1], NULL, &model);
  if (s != KILN_OK) return fail(s, "loading the model");
  kiln_session* session;
  s = kiln_session_create(model, NULL, &session);
  if (s != KILN_OK) return fail(s, "creating a session");

  const float* pixels = images.data;
  const int64_t* truth = labels.data;
  int n = (int)images.shape[0], correct = 0;
  static const char shades[] = " .:-=+*#%@";
  for (int i = 0; i < n; ++i) {
    const float* img = pixels + (size_t)i * 64;
    s = kiln_session_set_input(session, 0, KILN_DTYPE_FLOAT32, img, 64 * sizeof(float));
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
    printf("digit %d: predicted %d, true %lld%s\n", i, best, (long long)truth[i],
           best == truth[i] ? "" : "   <-- wrong");
    for (int r = 0; r < 8; ++r) {
      printf("    ");
      for (int c = 0; c < 8; ++c) {
        float v = img[r * 8 + c];
        int k = (int)(v * 9.0f + 0.5f);
        if (k < 0) k = 0;
        if (k > 9) k = 9;
        putchar(shades[k]);
        putchar(shades[k]);
      }
      putchar('\n');
    }
  }
  printf("accuracy: %d/%d = %.1f%%\n", correct, n, 100.0 * correct / n);
  kiln_session_release(session);
  kiln_model_release(model);
  npy_free(&images);
  npy_free(&labels);
  return 0;
}
