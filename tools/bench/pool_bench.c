/* What a launch costs the runtime's thread pool (runtime/src/thread_pool.c, compiled into this
 * program file by file): a session hands each parallel group to the pool as one job and waits at
 * its end, so every group pays the pool's hand-over and barrier once. For jobs of N items that
 * each busy-wait L nanoseconds, run by the caller and T - 1 workers, it prints the time per job
 * and the overhead over a perfect split (ceil(N / T) x L), the median of ROUNDS rounds of JOBS
 * jobs. On a virtual machine the overhead follows where the host places the vCPUs (the round
 * trip of a cache line, which tools/bench/cross_core_read measures): on the AMD EPYC of
 * 2026-12-06 with the two vCPUs ~900 ns apart, 16 items of 2 us cost 1.7-1.8 us over the perfect
 * 16 (2.3-2.4 when every item's claim and count wrote one line that both cores shared), 2 items
 * 0.6-0.8 us either way.
 * Usage: pool_bench [THREADS] (default 2). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/kiln.h"

struct kiln_pool;
typedef void (*kiln_work_fn)(void* ctx, uint32_t item);
kiln_status kiln_pool_create(const kiln_allocator* a, size_t num_workers, struct kiln_pool** out);
void kiln_pool_destroy(const kiln_allocator* a, struct kiln_pool* pool);
void kiln_pool_run(struct kiln_pool* pool, uint32_t n, kiln_work_fn fn, void* ctx);

enum { ROUNDS = 7, JOBS = 2000 };

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* An item: busy for *ctx nanoseconds (a kernel's task, without its memory traffic). */
static void busy(void* ctx, uint32_t item) {
  (void)item;
  uint64_t until = now_ns() + *(const uint64_t*)ctx;
  while (now_ns() < until) {
  }
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  long threads = argc > 1 ? strtol(argv[1], NULL, 10) : 2;
  if (threads < 2 || threads > 64) {
    fprintf(stderr, "usage: pool_bench [THREADS] (2 to 64)\n");
    return 2;
  }
  struct kiln_pool* pool = NULL;
  if (kiln_pool_create(NULL, (size_t)threads - 1, &pool) != KILN_OK) {
    fprintf(stderr, "pool_bench: cannot start %ld worker threads\n", threads - 1);
    return 1;
  }
  const uint32_t counts[] = {2, 4, 8, 16};
  const uint64_t lengths_ns[] = {0, 2000, 10000};
  printf("threads: %ld, median of %d rounds of %d jobs\n", threads, ROUNDS, JOBS);
  printf("%8s %10s %12s %12s %12s\n", "items", "item_us", "job_us", "perfect_us", "overhead_us");
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c)
    for (size_t l = 0; l < sizeof lengths_ns / sizeof lengths_ns[0]; ++l) {
      uint64_t len = lengths_ns[l];
      uint32_t n = counts[c];
      double per_job[ROUNDS];
      for (int r = 0; r < ROUNDS; ++r) {
        uint64_t t0 = now_ns();
        for (int j = 0; j < JOBS; ++j) kiln_pool_run(pool, n, busy, &len);
        per_job[r] = (double)(now_ns() - t0) / 1e3 / JOBS;
      }
      qsort(per_job, ROUNDS, sizeof per_job[0], by_value);
      double perfect =
          (double)((n + (uint32_t)threads - 1) / (uint32_t)threads) * (double)len / 1e3;
      double job = per_job[ROUNDS / 2];
      printf("%8u %10.1f %12.2f %12.2f %12.2f\n", n, (double)len / 1e3, job, perfect,
             job - perfect);
    }
  kiln_pool_destroy(NULL, pool);
  return 0;
}
