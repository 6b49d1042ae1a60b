/* Wall-clock milliseconds and a qsort comparator for timings: shared by kiln-run and the
 * benchmarks in tools/bench (header-only; each includes it once). */
#ifndef KILN_TOOLS_TIMING_H_
#define KILN_TOOLS_TIMING_H_

#include <time.h>

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

#endif
