/* A fresh application built against an installed kiln (tests/install/check_install.sh builds it
 * with find_package(kiln_rt) and with pkg-config): loads PACKAGE, fills every input with a fixed
 * pattern, runs, and prints each output's first values and sum. */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: app PACKAGE\n");
    return 2;
  }
  kiln_model* m = NULL;
  kiln_session* s = NULL;
  if (kiln_model_load_file(argv[1], NULL, &m) != KILN_OK ||
      kiln_session_create(m, NULL, &s) != KILN_OK) {
    fprintf(stderr, "app: %s\n", kiln_last_error_message());
    return 1;
  }
  printf("libkiln_rt %s\n", kiln_version(NULL, NULL));
  size_t n = 0;
  kiln_model_input_count(m, &n);
  for (size_t i = 0; i < n; ++i) {
    kiln_tensor_info t;
    t.struct_size = sizeof t;
    kiln_model_input_info(m, i, &t);
    if (t.dtype != KILN_DTYPE_FLOAT32) {
      fprintf(stderr, "app: input %s is not float32\n", t.name);
      return 1;
    }
    float* x = malloc(t.size_bytes);
    for (size_t k = 0; k < t.size_bytes / 4; ++k) x[k] = (float)((k * 7) % 11) / 11.0f - 0.5f;
    kiln_session_set_input(s, i, t.dtype, x, t.size_bytes);
    free(x);
  }
  if (kiln_session_run(s) != KILN_OK) {
    fprintf(stderr, "app: %s\n", kiln_last_error_message());
    return 1;
  }
  kiln_model_output_count(m, &n);
  for (size_t o = 0; o < n; ++o) {
    kiln_tensor_info t;
    t.struct_size = sizeof t;
    kiln_model_output_info(m, o, &t);
    const void* d;
    size_t size;
    kiln_session_output(s, o, &d, &size);
    const float* y = d;
    double sum = 0;
    for (size_t k = 0; k < size / 4; ++k) sum += y[k];
    printf("%s: %.6g %.6g ... sum %.6f\n", t.name, y[0], y[1], sum);
  }
  kiln_session_release(s);
  kiln_model_release(m);
  return 0;
}
