/* How fast one core reads what another core just wrote, against what it wrote itself: the cost a
 * kernel pays at 2 threads when its tasks read a tensor the previous kernel's tasks wrote on the
 * other core. Thread 0 (pinned to CPU 0) reads a buffer of SIZE_KIB KiB after it (self) or a
 * thread on CPU 1 (other) wrote it, 200 times each, and prints both bandwidths. Then the other
 * direction: how fast thread 0 overwrites the buffer after it (own) or CPU 1 (other) read it —
 * the cost a kernel pays at 2 threads for an output region (in this run's arena, or the same
 * tensor's in the previous run) whose lines the other core's tasks read and still hold: every
 * line must be taken back from that cache first. On the AMD EPYC of 2026-12-05 with the vCPUs
 * far apart (~1000 ns round trip): 6-7 GB/s against 97-212 over its own reads, 15-30x slower,
 * where reading the other core's writes was 27-34 GB/s against 58-112. Also the round
 * trip of one cache line between the two cores (each waits for the other's store, 100000 times):
 * on a virtual machine it depends on where the host places the vCPUs (~210 ns or 750-1060 ns on
 * the AMD EPYC of 2026-12-04, within one benchmark run) and 2-thread latencies move with it, so
 * the benchmark reports it next to every 2-thread latency.
 * On x86-64, the same two with non-temporal stores, which take a line from the other core
 * without fetching it and leave it in memory, in no cache: overwriting what CPU 1 read, and
 * thread 0 reading back what it wrote so. On the AMD EPYC of 2026-12-07 (1 MB): vCPUs ~540 ns
 * apart, 36-41 GB/s against 7-9 with plain stores; ~130 ns apart, 28-40 against 54; read back,
 * 33-41 GB/s against ~120 after plain stores: a kernel's output written so is read by the next
 * one from memory (docs/performance.md, twenty-sixth session).
 * Usage: cross_core_read [SIZE_KIB] (default 1024: a kernel-sized tensor that fits L2). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

enum { ROUNDS = 200 };

static float* buf;
static size_t n;
static atomic_int turn; /* 2r+1: the other thread may take round r; 2r+2: it has */
static int other_reads; /* the other thread reads the buffer (else it writes it) */
static float other_sink;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static int nontemporal; /* fill with non-temporal stores (x86-64 only) */

/* One value per round, 16 floats a step: whole-vector stores at -O2 (a per-element loop stays
 * scalar there, and would time the stores of one float each). */
static void fill(int round) {
  float v = (float)round;
#if defined(__SSE2__)
  if (nontemporal) {
    __m128 x = _mm_set1_ps(v);
    for (size_t i = 0; i + 4 <= n; i += 4) _mm_stream_ps(buf + i, x);
    _mm_sfence();
    return;
  }
#endif
  for (size_t i = 0; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) buf[i + (size_t)j] = v;
}

static float sum(void);

static void* other_core(void* arg) {
  (void)arg;
  pin(1);
  for (int r = 0; r < ROUNDS; ++r) {
    while (atomic_load(&turn) != 2 * r + 1) {
    }
    if (other_reads)
      other_sink += sum();
    else
      fill(r);
    atomic_store(&turn, 2 * r + 2);
  }
  return NULL;
}

/* Sums the buffer with 16 independent accumulators (vectorized at -O2 -march=native). */
static float sum(void) {
  float acc[16] = {0};
  for (size_t i = 0; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += buf[i + (size_t)j];
  float s = 0;
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

/* Thread 0 reads the buffer (reading = 1) after it (self) or CPU 1 (other) wrote it, or
 * overwrites it (reading = 0) after it or CPU 1 read it — a kernel writing an arena region the
 * other core's tasks last read must take every line back from that core's cache first — 200
 * times; the timed side's bandwidth in GB/s. */
static double timed_gbps(int other, int reading, float* sink) {
  pthread_t t;
  other_reads = !reading;
  atomic_store(&turn, 0);
  if (other && pthread_create(&t, NULL, other_core, NULL) != 0) return -1;
  double total = 0;
  for (int r = 0; r < ROUNDS; ++r) {
    if (other) {
      atomic_store(&turn, 2 * r + 1);
      while (atomic_load(&turn) != 2 * r + 2) {
      }
    } else if (reading) {
      fill(r);
    } else {
      *sink += sum();
    }
    double t0 = now_s();
    if (reading)
      *sink += sum();
    else
      fill(r);
    total += now_s() - t0;
  }
  if (other) pthread_join(t, NULL);
  return (double)(n * sizeof(float)) * ROUNDS / total * 1e-9;
}

enum { PINGS = 100000 };
static _Alignas(64) atomic_int ping;
static _Alignas(64) atomic_int pong;

static void* ponger(void* arg) {
  (void)arg;
  pin(1);
  for (int i = 1; i <= PINGS; ++i) {
    while (atomic_load(&ping) != i) {
    }
    atomic_store(&pong, i);
  }
  return NULL;
}

static double round_trip_ns(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, ponger, NULL) != 0) return -1;
  double t0 = now_s();
  for (int i = 1; i <= PINGS; ++i) {
    atomic_store(&ping, i);
    while (atomic_load(&pong) != i) {
    }
  }
  double t1 = now_s();
  pthread_join(t, NULL);
  return (t1 - t0) / PINGS * 1e9;
}

int main(int argc, char** argv) {
  long kib = argc > 1 ? strtol(argv[1], NULL, 10) : 1024;
  if (kib <= 0) {
    fprintf(stderr, "usage: cross_core_read [SIZE_KIB > 0]\n");
    return 2;
  }
  n = (size_t)kib * 1024 / sizeof(float);
  buf = aligned_alloc(64, n * sizeof(float));
  /* Both threads spin: on one CPU the ping-pong would wait a time slice per round trip. */
  if (!buf || pin(0) != 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    fprintf(stderr, "cross_core_read: needs 2 CPUs and %ld KiB\n", kib);
    return 1;
  }
  memset(buf, 0, n * sizeof(float));
  float sink = 0;
  double self = timed_gbps(0, 1, &sink), other = timed_gbps(1, 1, &sink);
  double wself = timed_gbps(0, 0, &sink), wother = timed_gbps(1, 0, &sink);
  printf("size_kib: %ld\n", kib);
  printf("read_written_by_self_gbps: %.1f\n", self);
  printf("read_written_by_other_core_gbps: %.1f\n", other);
  printf("write_over_own_read_gbps: %.1f\n", wself);
  printf("write_over_other_core_read_gbps: %.1f\n", wother);
#if defined(__SSE2__)
  nontemporal = 1;
  double nt_over_other = timed_gbps(1, 0, &sink), nt_read_back = timed_gbps(0, 1, &sink);
  nontemporal = 0;
  printf("nontemporal_write_over_other_core_read_gbps: %.1f\n", nt_over_other);
  printf("read_after_own_nontemporal_write_gbps: %.1f\n", nt_read_back);
#endif
  printf("round_trip_ns: %.0f\n", round_trip_ns());
  printf("checksum: %g\n", (double)(sink + other_sink)); /* keeps the sums alive */
  free(buf);
  return 0;
}
