/* A persistent pool of worker threads. kiln_pool_run splits n work items into one contiguous
 * share per thread (the caller is thread 0 and works too) and returns when all are done. A thread
 * takes its own share first, in order, then what is left of the others' (an atomic counter per
 * share carries the job's generation, so a late worker can never take an item of a newer job).
 * The same share of every launch goes to the same thread: consecutive kernels split alike (the
 * first half of a layer's output channels or rows, then the next layer's) mostly read what their
 * own core wrote, where a shared counter handed items out in arrival order and a core read half
 * its inputs from the other's cache, at a third of the bandwidth (tools/bench/cross_core_read).
 * A share's counter holds a generation and the items taken in that job; an older generation
 * counts none yet, so the caller does not reset the counters per job. Where they live depends on
 * the job (tools/bench/pool_bench, vCPUs ~900 ns apart): a small job's (at most two items per
 * thread, up to four threads) are in the one line the job's words are in, which every thread
 * reads anyway, as a recurrent net's many tiny launches want (a line more per launch cost
 * lstm_classifier 5-9% at 2 threads); a larger job's have a line per thread, which only that
 * thread writes until it steals or is stolen from: with one line written by both threads at
 * every item, 16 items cost 0.5-1.2 us more per job. A thread adds the items it ran from a
 * share to the job's count when it finds no more in that share, its own first: the thread that
 * completes the count returns without looking at any other counter.
 * Idle workers spin briefly, then sleep on a condition variable; waking them is the only system
 * call a run makes. */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

#if !defined(KILN_RT_NO_THREADS)
#include <pthread.h>
#include <sched.h>

#define KILN_SPINS 4000

/* The small jobs' counters: up to this many threads, at most two items each. */
#define KILN_SMALL_THREADS 4

/* A larger job's share counter: generation << 32 | items taken from the share (rewritten once
 * every 2^30 jobs, in kiln_pool_run). */
struct share {
  _Alignas(64) _Atomic uint64_t taken;
};

struct kiln_pool {
  size_t nworkers;
  pthread_t* threads;
  pthread_mutex_t mu;
  pthread_cond_t wake;
  _Atomic int stop;
  _Atomic int sleepers;
  _Atomic uint32_t started; /* workers numbered so far (kiln_pool_thread_index) */
  /* What a job writes and its threads read, in one cache line. fn and ctx are plain fields: the
   * caller rewrites them only after every item of the job before has run, and a late worker of
   * that job finds no item left to call them for. */
  _Alignas(64) kiln_work_fn fn;
  void* ctx;
  _Atomic uint64_t limit; /* generation << 32 | item count */
  _Atomic uint32_t job;   /* generation of the current job */
  _Atomic uint32_t done;  /* items run, added once per thread and job */
  /* A small job's share counters (as struct share's), the caller's first. */
  _Atomic uint64_t small[KILN_SMALL_THREADS];
  /* A larger job's, per thread, the caller's first. */
  struct share shares[];
};

/* A worker's number in its pool (a thread serves one pool); 0 on every other thread. */
static _Thread_local uint32_t t_index;

uint32_t kiln_pool_thread_index(void) {
  return t_index;
}

/* Every share counter, small and larger, set to job gen with none taken. */
static void tag_counters(kiln_pool* p, uint32_t gen) {
  for (size_t t = 0; t <= p->nworkers; ++t) {
    atomic_store_explicit(&p->shares[t].taken, (uint64_t)gen << 32, memory_order_relaxed);
    if (t < KILN_SMALL_THREADS)
      atomic_store_explicit(&p->small[t], (uint64_t)gen << 32, memory_order_relaxed);
  }
}

#if defined(KILN_RT_TEST_HOOKS)
/* Tests only (the sanitizer builds), on an idle pool: the next job's generation is gen + 1, the
 * counters as a pool that ran job gen would hold them, so that a test can run jobs across the
 * counters' rewrite (every 2^30 jobs) and the generation's wrap. */
void kiln_pool_set_generation(kiln_pool* p, uint32_t gen) {
  tag_counters(p, gen);
  atomic_store(&p->job, gen);
}
#endif

static inline void cpu_relax(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* The first item of thread t's share of n items; its share ends where thread t + 1's starts. */
static uint32_t share_start(uint32_t t, uint32_t n, uint32_t threads) {
  return (uint32_t)((uint64_t)t * n / threads);
}

static inline int is_small(uint32_t n, uint32_t threads) {
  return threads <= KILN_SMALL_THREADS && n <= 2 * threads;
}

/* Takes and runs items of job |gen| until none are left: this thread's share first, then the
 * others'. A share's counter holds generation << 32 | items taken; an older generation (they
 * wrap) counts none yet, a newer one means this job is over. */
static void work(kiln_pool* p, uint32_t gen) {
  uint64_t lim = atomic_load_explicit(&p->limit, memory_order_acquire);
  if ((uint32_t)(lim >> 32) != gen) return; /* a late worker of an older job */
  uint32_t n = (uint32_t)lim, threads = (uint32_t)p->nworkers + 1, ran = 0;
  int small = is_small(n, threads);
  for (uint32_t k = 0; k < threads; ++k) {
    uint32_t t = (t_index + k) % threads;
    uint32_t start = share_start(t, n, threads), end = share_start(t + 1, n, threads);
    _Atomic uint64_t* taken = small ? &p->small[t] : &p->shares[t].taken;
    for (;;) {
      uint64_t v = atomic_load_explicit(taken, memory_order_acquire);
      int32_t age = (int32_t)((uint32_t)(v >> 32) - gen);
      uint32_t i = start + (age == 0 ? (uint32_t)v : 0);
      if (age > 0 || i >= end) break;
      if (atomic_compare_exchange_weak_explicit(taken, &v, (uint64_t)gen << 32 | (i - start + 1),
                                                memory_order_acq_rel, memory_order_relaxed)) {
        p->fn(p->ctx, i);
        ++ran;
      }
    }
    if (ran) {
      /* Counted share by share, its own first, before looking at the next share's counter
       * (each look fetches a line from another core): the job's last thread finds the count
       * complete here and is done one cache-line round trip sooner than after a look. */
      uint32_t before = atomic_fetch_add_explicit(&p->done, ran, memory_order_acq_rel);
      if (before + ran == n) return;
      ran = 0;
    }
  }
}

static void* worker(void* arg) {
  kiln_pool* p = arg;
  uint32_t seen = 0;
  t_index = atomic_fetch_add(&p->started, 1) + 1;
  for (;;) {
    uint32_t gen = atomic_load_explicit(&p->job, memory_order_acquire);
    for (int i = 0; gen == seen && i < KILN_SPINS && !atomic_load(&p->stop); ++i) {
      cpu_relax();
      gen = atomic_load_explicit(&p->job, memory_order_acquire);
    }
    if (gen == seen) {
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);
      while ((gen = atomic_load(&p->job)) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) return NULL;
    seen = gen;
    work(p, gen);
  }
}

/* num_workers is below KILN_MAX_THREADS: kiln_session_create refuses more threads. */
kiln_status kiln_pool_create(const kiln_allocator* a, size_t num_workers, kiln_pool** out) {
  /* One block: the pool, its share counters, then the worker threads' handles. */
  size_t shares = sizeof(kiln_pool) + (num_workers + 1) * sizeof(struct share);
  size_t size = shares + num_workers * sizeof(pthread_t);
  kiln_pool* p = kiln_alloc(a, size, 64);
  if (!p) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_CREATING_THE_THREAD));
  memset(p, 0, size);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  p->threads = (pthread_t*)((char*)p + shares);
  for (size_t i = 0; i < num_workers; ++i) {
    if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
      kiln_pool_destroy(a, p);
      return kiln_error(KILN_INTERNAL, KM(CANNOT_START_WORKER_THREAD), i);
    }
    p->nworkers = i + 1;
  }
  *out = p;
  return KILN_OK;
}

void kiln_pool_destroy(const kiln_allocator* a, kiln_pool* p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (size_t i = 0; i < p->nworkers; ++i) pthread_join(p->threads[i], NULL);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  kiln_free(a, p);
}

void kiln_pool_run(kiln_pool* p, uint32_t n, kiln_work_fn fn, void* ctx) {
  if (!p || p->nworkers == 0 || n <= 1) {
    for (uint32_t i = 0; i < n; ++i) fn(ctx, i);
    return;
  }
  uint32_t gen = atomic_load_explicit(&p->job, memory_order_relaxed) + 1;
  if (gen == 0) gen = 1; /* 0 is the workers' initial "seen" */
  p->fn = fn;
  p->ctx = ctx;
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  /* Once every 2^30 jobs, so that no counter falls 2^31 jobs behind and looks newer: this job's
   * generation with none taken. (Not the previous job's: a worker still in that job, between
   * its check of the limit and its first counter, would take its items again.) */
  if ((gen & 0x3fffffffu) == 1) tag_counters(p, gen);
  atomic_store_explicit(&p->limit, (uint64_t)gen << 32 | n, memory_order_release);
  /* Sequentially consistent, as is the read of the sleepers count after it: a worker going to
   * sleep counts itself and then reads the job, so one of the two sees the other and the worker
   * is woken. (Were it not, the caller would take its share too: nothing waits on a sleeper.) */
  atomic_store(&p->job, gen);
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  work(p, gen);
  while (atomic_load_explicit(&p->done, memory_order_acquire) != n) cpu_relax();
}

#else /* KILN_RT_NO_THREADS: everything runs on the calling thread */

struct kiln_pool {
  int unused;
};

kiln_status kiln_pool_create(const kiln_allocator* a, size_t num_workers, kiln_pool** out) {
  (void)a;
  if (num_workers > 0)
    return kiln_error(KILN_UNSUPPORTED, KM(THIS_RUNTIME_IS_BUILT_WITHOUT_THREADS));
  *out = NULL;
  return KILN_OK;
}

void kiln_pool_destroy(const kiln_allocator* a, kiln_pool* p) {
  (void)a;
  (void)p;
}

void kiln_pool_run(kiln_pool* p, uint32_t n, kiln_work_fn fn, void* ctx) {
  (void)p;
  for (uint32_t i = 0; i < n; ++i) fn(ctx, i);
}

uint32_t kiln_pool_thread_index(void) {
  return 0;
}

#endif
