// Every allocation the runtime makes can fail: with an allocator that fails its Nth allocation,
// for every N until loading, session creation and a run all succeed, each call returns
// KILN_OUT_OF_MEMORY (or succeeds) and everything allocated is released — no crash, no leak,
// no free of memory never allocated (hole 8 of #13). Run under AddressSanitizer, which also
// reports leaks and bad frees.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "kiln/kiln.h"
#include "tests/runtime/package_files.h"

namespace {

struct Failing {
  int fail_at = 0;  // the allocation (1-based) that returns NULL; 0: none
  int count = 0;
  std::set<void*> live;
};

void* failing_alloc(void* self, size_t size, size_t alignment) {
  auto* f = static_cast<Failing*>(self);
  if (++f->count == f->fail_at) return nullptr;
  void* p = nullptr;
  if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, size ? size : 1))
    return nullptr;
  f->live.insert(p);
  return p;
}

void failing_free(void* self, void* p) {
  auto* f = static_cast<Failing*>(self);
  EXPECT_EQ(f->live.erase(p), 1u) << "a free of memory this allocator did not hand out";
  std::free(p);
}

// Load, create a session with two threads, run: the first failure's status.
kiln_status attempt(const std::vector<uint8_t>& pkg, Failing& f, bool* ran) {
  kiln_allocator a{&f, failing_alloc, failing_free};
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.allocator = &a;
  *ran = false;
  kiln_model* m = nullptr;
  kiln_status st = kiln_model_load_memory(pkg.data(), pkg.size(), &mo, &m);
  if (st != KILN_OK) return st;
  kiln_session_options so;
  kiln_session_options_init(&so);
  so.num_threads = 2;
  kiln_session* s = nullptr;
  st = kiln_session_create(m, &so, &s);
  if (st == KILN_OK) {
    kiln_tensor_info info;
    info.struct_size = sizeof info;
    kiln_model_input_info(m, 0, &info);
    std::vector<uint8_t> x(info.size_bytes);
    kiln_session_set_input(s, 0, info.dtype, x.data(), x.size());
    st = kiln_session_run(s);
    *ran = st == KILN_OK;
    kiln_session_release(s);
  }
  EXPECT_EQ(kiln_model_release(m), KILN_OK);
  return st;
}

TEST(AllocationFailure, EveryAllocationMayFail) {
  // (Unaligned on purpose: the loader then copies the package with the allocator too.)
  std::vector<uint8_t> pkg = kiln::testing::read_bytes(kiln::testing::package_path("convnet"));
  int n = 1;
  for (;; ++n) {
    Failing f;
    f.fail_at = n;
    bool ran = false;
    kiln_status st = attempt(pkg, f, &ran);
    EXPECT_TRUE(f.live.empty()) << f.live.size() << " allocations leaked when allocation " << n
                                << " failed";
    if (ran) break;
    ASSERT_EQ(st, KILN_OUT_OF_MEMORY) << "allocation " << n << ": " << kiln_last_error_message();
    ASSERT_LT(n, 10000) << "no run after 10,000 allocations";
  }
  std::printf("failed each of the %d allocations of load + session + run in turn\n", n - 1);
  EXPECT_GT(n, 10);
}

// Session creation writes every page of the arena it allocates (so the first run does not
// page-fault inside its kernels): the allocator hands out poisoned memory, and the block of the
// arena's size is all zeros once the session exists.
struct Poisoning {
  std::map<void*, size_t> live;
};
void* poisoning_alloc(void* self, size_t size, size_t alignment) {
  void* p = nullptr;
  if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, size ? size : 1))
    return nullptr;
  std::memset(p, 0xAB, size);
  static_cast<Poisoning*>(self)->live[p] = size;
  return p;
}
void poisoning_free(void* self, void* p) {
  static_cast<Poisoning*>(self)->live.erase(p);
  std::free(p);
}

TEST(SessionArena, IsWrittenWhenTheSessionIsCreated) {
  std::vector<uint8_t> pkg = kiln::testing::read_bytes(kiln::testing::package_path("convnet"));
  Poisoning pz;
  kiln_allocator a{&pz, poisoning_alloc, poisoning_free};
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.allocator = &a;
  kiln_model* m = nullptr;
  ASSERT_EQ(kiln_model_load_memory(pkg.data(), pkg.size(), &mo, &m), KILN_OK);
  size_t arena = 0, align = 0;
  ASSERT_EQ(kiln_model_arena_requirements(m, &arena, &align), KILN_OK);
  ASSERT_GT(arena, 4096u);
  std::set<void*> before;
  for (const auto& [p, n] : pz.live) before.insert(p);
  kiln_session_options so;
  kiln_session_options_init(&so);
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(m, &so, &s), KILN_OK);
  int arenas = 0;
  for (const auto& [p, n] : pz.live) {
    if (before.count(p) || n != arena) continue;
    ++arenas;
    const auto* b = static_cast<const uint8_t*>(p);
    size_t poisoned = 0;
    for (size_t i = 0; i < n; ++i) poisoned += b[i] == 0xAB;
    EXPECT_EQ(poisoned, 0u) << "of " << n << " arena bytes";
  }
  EXPECT_EQ(arenas, 1);
  kiln_session_release(s);
  EXPECT_EQ(kiln_model_release(m), KILN_OK);
}

}  // namespace
