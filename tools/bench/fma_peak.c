/* The machine's single-precision FMA peak, measured: per thread, 12 independent chains of
 * vector FMAs (enough to cover the FMA latency on every x86-64 and AArch64 core we target),
 * timed over ~0.3 s. Prints "fma_peak_gflops_per_core: X" and the vector width used.
 * `fma_peak --pair` runs the same on CPUs 0 and 1 at once and prints the slower one's figure as
 * "fma_peak_gflops_per_core_both_busy": about the single figure where the two CPUs are cores of
 * their own, about half where a virtual machine's host has put its two vCPUs on the two hardware
 * threads of one core (seen on the AMD EPYC of 2026-12-05, beside a cache-line round trip of
 * 78 ns: there a second thread cannot speed up compute-bound kernels, ONNX Runtime's or kiln's).
 * Built with -O2 -march=native by tools/bench/CMakeLists.txt. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 vec;
#define LANES 16
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SET1(x) _mm512_set1_ps(x)
static float hsum(vec v) {
  return _mm512_reduce_add_ps(v);
}
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
typedef __m256 vec;
#define LANES 8
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define SET1(x) _mm256_set1_ps(x)
static float hsum(vec v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#elif defined(__ARM_NEON)
#include <arm_neon.h>
typedef float32x4_t vec;
#define LANES 4
#define FMA(a, b, c) vfmaq_f32(c, a, b)
#define SET1(x) vdupq_n_f32(x)
static float hsum(vec v) {
  return vaddvq_f32(v);
}
#else
#error "fma_peak needs AVX-512, AVX2+FMA or NEON"
#endif

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak(void) {
  vec a[12];
  for (int i = 0; i < 12; ++i) a[i] = SET1(1.0f + 1e-7f * (float)i);
  const vec m = SET1(0.9999999f), c = SET1(1e-7f);
  long iters = 1 << 20;
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    double t0 = now_s();
    /* Twelve named chains, so that they live in registers. */
    vec a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5];
    vec a6 = a[6], a7 = a[7], a8 = a[8], a9 = a[9], a10 = a[10], a11 = a[11];
    for (long k = 0; k < iters; ++k) {
      a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);
      a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);
      a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);
    }
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5;
    a[6] = a6, a[7] = a7, a[8] = a8, a[9] = a9, a[10] = a10, a[11] = a11;
    double dt = now_s() - t0;
    double gflops = 2.0 * LANES * 12.0 * (double)iters / dt * 1e-9;
    if (gflops > best) best = gflops;
    if (dt < 0.05) iters *= 4;
  }
  float sink = 0;
  for (int i = 0; i < 12; ++i) sink += hsum(a[i]);
  if (sink == 12345.0f) printf("checksum: %g\n", (double)sink); /* keeps the loop alive */
  return best;
}

struct pinned {
  int cpu;
  double gflops;
};

static void* run_pinned(void* arg) {
  struct pinned* p = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(p->cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  p->gflops = peak();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--pair") == 0) {
    struct pinned p[2] = {{0, 0}, {1, 0}};
    pthread_t other;
    if (pthread_create(&other, NULL, run_pinned, &p[1]) != 0) {
      fprintf(stderr, "fma_peak: cannot start a second thread\n");
      return 1;
    }
    run_pinned(&p[0]);
    pthread_join(other, NULL);
    printf("fma_peak_gflops_per_core_both_busy: %.1f\n",
           p[0].gflops < p[1].gflops ? p[0].gflops : p[1].gflops);
  } else if (argc > 1) {
    fprintf(stderr, "usage: fma_peak [--pair]\n");
    return 2;
  } else {
    printf("fma_peak_gflops_per_core: %.1f\n", peak());
  }
  printf("vector_lanes: %d\n", LANES);
  return 0;
}
