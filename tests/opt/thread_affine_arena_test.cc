// Arena offsets that keep lines on the core that last held them
// (compiler/opt/thread_affine_arena.h), on x -> a = 2 x (64 x 512 floats) -> b = a's two halves of
// columns summed (64 x 256) -> c = 3 b
// -> 4 c + b, every kernel split in two tasks along its rows: thread 0 writes and reads the first
// half of each buffer's bytes, thread 1 the second. c may take a's bytes (a is dead once b is
// written): the lifetime-only plan puts it at a's start, where thread 1 writes c's second half
// over the lines thread 0 held; centred on a, each thread writes its half of c over its own.
#include <gtest/gtest.h>

#include <memory>

#include "compiler/driver/compile.h"
#include "compiler/opt/cross_core_traffic.h"
#include "compiler/opt/thread_affine_arena.h"
#include "compiler/schedule/interpreter.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/tensor/eager.h"
#include "tests/opt/opt_plans.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

using testing::Planned;

// The chain above, each kernel in `tasks` tasks along its outermost loop.
Planned chain(int64_t tasks) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {64, 512});
  Tensor a = x.mul(2.0).contiguous();
  Tensor b = a.shrink({{0, 64}, {0, 256}}).add(a.shrink({{0, 64}, {256, 512}})).contiguous();
  Tensor c = b.mul(3.0).contiguous();
  g.add_output("y", c.mul(4.0).add(b).uop());  // b read again: c cannot take b's bytes in place
  Planned p{std::move(owner), plan_graph(g, {}), {}};
  p.kernels = testing::split_outermost(p.plan, tasks);
  return p;
}

int64_t offset_of(const Plan& plan, int buffer) {
  for (const MemorySlot& s : plan.memory.slots)
    if (s.buffer == buffer) return s.offset;
  return -1;
}

int64_t moved(const Planned& p) {
  int64_t n = 0;
  for (const LaunchTraffic& t : cross_core_traffic(p.plan, p.kernels, 2))
    n += t.cross_reads + t.cross_writes;
  return n;
}

TEST(ThreadAffineArena, ATenantIsCentredOnTheLinesItsThreadsHeld) {
  Planned p = chain(2);
  ASSERT_EQ(p.plan.launches.size(), 4u);
  int a = p.plan.launches[0].args[0], c = p.plan.launches[2].args[0];
  ASSERT_EQ(offset_of(p.plan, c), offset_of(p.plan, a)) << "the test needs c on a's first bytes";
  int64_t arena = p.plan.memory.arena_bytes;
  // Thread 1 writes c's second half (512 lines) where thread 0 wrote a's first, and the next
  // run's thread 0 writes a's first half over those lines of c.
  EXPECT_EQ(moved(p), 2 * 512);

  ArenaPlacement done = place_arena_for_threads(p.plan, p.kernels, 2);
  EXPECT_EQ(done.slots_moved, 1);  // c
  EXPECT_EQ(done.lines_before, 2 * 512);
  EXPECT_EQ(done.lines_after, 0);
  EXPECT_EQ(check_memory_plan(p.plan), "");
  EXPECT_EQ(offset_of(p.plan, c), offset_of(p.plan, a) + 32 * 1024);
  EXPECT_LE(p.plan.memory.arena_bytes, arena);
  EXPECT_EQ(moved(p), 0);
  // The values through the new offsets (the interpreter runs the plan in its arena).
  auto inputs = testing::random_inputs(*p.graph, 5);
  NDArray want = EagerEvaluator(*p.graph, inputs).eval(p.graph->outputs()[0].node);
  EXPECT_TRUE(testing::arrays_close(want, interpret(p.plan, *p.graph, inputs).at("y")));
}

// One thread moves nothing; nor does a split that leaves every line on one core: the plan stays.
TEST(ThreadAffineArena, KeepsThePlanWhereNoLineWouldMoveLess) {
  for (auto [threads, tasks] : {std::pair{1, 2}, std::pair{2, 1}}) {
    Planned p = chain(tasks);
    std::vector<MemorySlot> before = p.plan.memory.slots;
    EXPECT_EQ(place_arena_for_threads(p.plan, p.kernels, threads).slots_moved, 0)
        << threads << " " << tasks;
    ASSERT_EQ(p.plan.memory.slots.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i)
      EXPECT_EQ(p.plan.memory.slots[i].offset, before[i].offset);
  }
}

}  // namespace
}  // namespace kiln
