// The runtime's thread pool (runtime/src/thread_pool.c), called directly: built only into the
// sanitizer test binaries, which compile the runtime file by file (its functions are extern
// there), and run under ThreadSanitizer in the suite.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kiln/kiln.h"

extern "C" {
struct kiln_pool;
typedef void (*kiln_work_fn)(void* ctx, uint32_t item);
kiln_status kiln_pool_create(const kiln_allocator* a, size_t num_workers, kiln_pool** out);
void kiln_pool_destroy(const kiln_allocator* a, kiln_pool* pool);
void kiln_pool_run(kiln_pool* pool, uint32_t n, kiln_work_fn fn, void* ctx);
uint32_t kiln_pool_thread_index(void);
void kiln_pool_set_generation(kiln_pool* pool, uint32_t gen);  // KILN_RT_TEST_HOOKS
}

namespace {

struct Record {
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<uint32_t>> thread;
  std::atomic<int64_t> first[4] = {-1, -1, -1, -1};  // the item each thread ran first
  explicit Record(size_t n) : runs(n), thread(n) {}
};

void record(void* ctx, uint32_t item) {
  auto* r = static_cast<Record*>(ctx);
  uint32_t t = kiln_pool_thread_index();
  int64_t none = -1;
  if (t < 4) r->first[t].compare_exchange_strong(none, item);
  r->thread[item].store(t);
  r->runs[item].fetch_add(1);
}

// Waits until every item in `items` has started, or 10 s have passed (then the test's
// assertions say what went wrong, rather than the test hanging). Orders the threads without
// timing: a loaded machine (the suite runs two tests at once) may leave a thread unscheduled
// for tens of milliseconds.
void await_started(const Record& r, std::initializer_list<uint32_t> items) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (uint32_t i : items)
    while (r.runs[i].load() == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
}

// Runs a job of n items on `pool`: the first item that did not run exactly once, or -1.
int64_t item_not_run_once(kiln_pool* pool, uint32_t n) {
  Record r(n);
  kiln_pool_run(pool, n, record, &r);
  for (uint32_t i = 0; i < n; ++i)
    if (r.runs[i].load() != 1) return i;
  return -1;
}

// Every item of every job runs exactly once, whatever the item count against the threads (none,
// fewer than the threads, not a multiple of them) and however the jobs follow each other: small
// jobs (up to two items a thread, up to four threads: counters in the job's line) and larger ones
// (a counter line per thread, not reset between jobs) alternating.
TEST(ThreadPool, EveryItemRunsOnce) {
  for (size_t workers : {1u, 2u, 3u, 4u}) {
    kiln_pool* pool = nullptr;
    ASSERT_EQ(kiln_pool_create(nullptr, workers, &pool), KILN_OK);
    for (int round = 0; round < 20; ++round)
      for (uint32_t n : {0u, 1u, 2u, 3u, 5u, 16u, 17u, 61u})
        ASSERT_EQ(item_not_run_once(pool, n), -1) << workers << " workers, " << n << " items";
    kiln_pool_destroy(nullptr, pool);
  }
}

// The counters carry their job's generation, which wraps (skipping 0), and are rewritten once
// every 2^30 jobs (to the new job's generation: a late worker of the previous job must find
// nothing to take). Jobs of both kinds across those points still run every item once.
TEST(ThreadPool, EveryItemRunsOnceAcrossTheGenerationsRewriteAndWrap) {
  for (size_t workers : {1u, 4u})
    for (uint32_t from : {0x3ffffff0u, 0x7ffffff0u, 0xbffffff0u, 0xfffffff0u}) {
      kiln_pool* pool = nullptr;
      ASSERT_EQ(kiln_pool_create(nullptr, workers, &pool), KILN_OK);
      kiln_pool_set_generation(pool, from);
      for (int job = 0; job < 40; ++job) {
        uint32_t n = job % 3 == 0 ? 2u : job % 3 == 1 ? 16u : 61u;
        ASSERT_EQ(item_not_run_once(pool, n), -1)
            << std::hex << from << " + " << std::dec << job << ", " << n << " items";
      }
      kiln_pool_destroy(nullptr, pool);
    }
}

// Each thread starts on its own contiguous share: the caller on the first items, the worker on
// the second half, so consecutive launches split alike keep each half of the data on one core.
// (Items 0 and n/2 each wait for the other to start, so neither thread can have reached the
// other's share first, however late it is scheduled.) Small jobs and larger ones alike.
TEST(ThreadPool, EachThreadStartsOnItsOwnShare) {
  kiln_pool* pool = nullptr;
  ASSERT_EQ(kiln_pool_create(nullptr, 1, &pool), KILN_OK);
  for (int round = 0; round < 3; ++round)
    for (uint32_t n : {4u, 8u}) {  // a small job and a larger one
      Record r(n);
      struct Job {
        Record* r;
        uint32_t half;
      } job{&r, n / 2};
      kiln_pool_run(
          pool, n,
          [](void* ctx, uint32_t item) {
            auto* j = static_cast<Job*>(ctx);
            record(j->r, item);
            if (item == 0) await_started(*j->r, {j->half});
            if (item == j->half) await_started(*j->r, {0});
          },
          &job);
      EXPECT_EQ(r.thread[0].load(), 0u) << n;
      EXPECT_EQ(r.thread[n / 2].load(), 1u) << n;
      EXPECT_EQ(r.first[0].load(), 0) << n;
      EXPECT_EQ(r.first[1].load(), n / 2) << n;  // a shared counter gave the worker item 1 first
      for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(r.runs[i].load(), 1) << n;
    }
  kiln_pool_destroy(nullptr, pool);
}

// A thread that is held up (a slow item, a descheduled worker) holds nothing else up: the other
// takes what is left of its share, from where it stands.
TEST(ThreadPool, AThreadTakesWhatIsLeftOfASlowThreadsShare) {
  kiln_pool* pool = nullptr;
  ASSERT_EQ(kiln_pool_create(nullptr, 1, &pool), KILN_OK);
  Record r(8);
  // Item 4, the worker's first, is held until items 5 to 7 have started: only the caller can
  // take them (items 0 and 4 wait for each other to start, as above).
  kiln_pool_run(
      pool, 8,
      [](void* ctx, uint32_t item) {
        record(ctx, item);
        if (item == 0) await_started(*static_cast<Record*>(ctx), {4});
        if (item == 4) await_started(*static_cast<Record*>(ctx), {0, 5, 6, 7});
      },
      &r);
  EXPECT_EQ(r.thread[4].load(), 1u);
  for (uint32_t i : {0u, 1u, 2u, 3u, 5u, 6u, 7u}) EXPECT_EQ(r.thread[i].load(), 0u) << i;
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(r.runs[i].load(), 1);
  kiln_pool_destroy(nullptr, pool);
}

}  // namespace
