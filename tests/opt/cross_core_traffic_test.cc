// The lines launches move between cores (compiler/opt/cross_core_traffic.h), on two kernels: y =
// 2 x stored, then z = 3 y (or 3 yᵀ), each split in two tasks along its first output axis. Split
// alike, each thread reads the half of y it wrote; transposed, each reads half its lines from
// the other thread's half, and in the steady state each thread's next write of y must take
// those lines back.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "compiler/driver/compile.h"
#include "compiler/opt/cross_core_traffic.h"
#include "compiler/schedule/plan.h"
#include "compiler/tensor/tensor.h"
#include "tests/opt/opt_plans.h"

namespace kiln {
namespace {

using testing::Planned;

// x (64 x 256 floats: a row is 16 lines) -> y = 2 x -> z = 3 y or 3 yᵀ, every kernel split
// into `tasks` tasks along its outermost loop.
Planned two_kernels(bool transposed, int64_t tasks) {
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {64, 256});
  Tensor y = x.mul(2.0).contiguous();
  g.add_output("z", (transposed ? y.transpose(0, 1) : y).mul(3.0).uop());
  Planned p{std::move(owner), plan_graph(g, {}), {}};
  p.kernels = testing::split_outermost(p.plan, tasks);
  return p;
}

struct Totals {
  int64_t cross_reads = 0, cross_writes = 0, read = 0, written = 0;
};

Totals totals(const Planned& p, int threads) {
  Totals t;
  for (const LaunchTraffic& l : cross_core_traffic(p.plan, p.kernels, threads)) {
    EXPECT_TRUE(l.analysed);
    t.cross_reads += l.cross_reads;
    t.cross_writes += l.cross_writes;
    t.read += l.lines_read;
    t.written += l.lines_written;
  }
  return t;
}

TEST(CrossCoreTraffic, KernelsSplitAlikeMoveNoLines) {
  Planned p = two_kernels(false, 2);
  ASSERT_EQ(p.plan.launches.size(), 2u);
  Totals t = totals(p, 2);
  EXPECT_EQ(t.cross_reads, 0);
  EXPECT_EQ(t.cross_writes, 0);
  EXPECT_EQ(t.read, 2 * 1024);     // x by the first kernel, y by the second: 64 KiB each
  EXPECT_EQ(t.written, 2 * 1024);  // y and z
}

TEST(CrossCoreTraffic, ATransposedReaderTakesHalfItsLinesFromTheOtherCore) {
  Planned p = two_kernels(true, 2);
  ASSERT_EQ(p.plan.launches.size(), 2u);
  std::vector<LaunchTraffic> t = cross_core_traffic(p.plan, p.kernels, 2);
  // The reader's thread 0 takes z's rows 0-127, i.e. y's columns 0-127: lines 0-7 of every row
  // of y, half of them (rows 32-63) written by thread 1; thread 1 likewise.
  EXPECT_EQ(t[1].cross_reads, 2 * 32 * 8);
  EXPECT_EQ(t[1].cross_writes, 0);  // z is only written
  // The next run's writer of y finds those lines in the other core.
  EXPECT_EQ(t[0].cross_reads, 0);
  EXPECT_EQ(t[0].cross_writes, 2 * 32 * 8);
  EXPECT_NE(cross_core_report(p.plan, t, 2)
                .find("32 KiB read from another core's writes, 32 KiB "
                      "written over lines another core held"),
            std::string::npos)
      << cross_core_report(p.plan, t, 2);
  // Every line read across was written last by the first launch, and every line written across
  // was left in the other core by y's own readers.
  int y = p.plan.launches[0].args[0];
  EXPECT_EQ(t[1].read_from, (std::map<int, int64_t>{{0, 2 * 32 * 8}}));
  EXPECT_EQ(t[0].written_over, (std::map<int, int64_t>{{y, 2 * 32 * 8}}));
  std::string report = cross_core_report(p.plan, t, 2);
  EXPECT_NE(report.find("0       1       32\n"), std::string::npos) << report;
  EXPECT_NE(report.find("<-  itself (its readers' copies)"), std::string::npos) << report;
}

TEST(CrossCoreTraffic, AWriteOverAnEarlierTenantsLinesNamesThatTenant) {
  // x -> y = 2 x -> z = 3 yᵀ -> w = 4 zᵀ -> 5 w, every kernel split in two along its rows. w
  // is planned on y's bytes (y is dead once z is written, and w reads z transposed, so it
  // cannot take z's place). y's rows 0-31 were written by thread 0, but thread 1 read their
  // columns 128-255 for z: when thread 0 writes w's rows 0-31 there, 8 of every row's 16 lines
  // are in the other core, and likewise for thread 1.
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {64, 256});
  Tensor y = x.mul(2.0).contiguous();
  Tensor z = y.transpose(0, 1).mul(3.0).contiguous();
  Tensor w = z.transpose(0, 1).mul(4.0).contiguous();
  g.add_output("o", w.mul(5.0).uop());
  Plan plan = plan_graph(g, {});
  ASSERT_EQ(plan.launches.size(), 4u);
  std::vector<OptimizedKernel> kernels = testing::split_outermost(plan, 2);
  int yb = plan.launches[0].args[0], wb = plan.launches[2].args[0];
  auto offset = [&](int b) {
    for (const MemorySlot& s : plan.memory.slots)
      if (s.buffer == b) return s.offset;
    return int64_t{-1};
  };
  ASSERT_EQ(offset(wb), offset(yb)) << "the test needs w planned on y's bytes";
  std::vector<LaunchTraffic> t = cross_core_traffic(plan, kernels, 2);
  EXPECT_EQ(t[2].written_over, (std::map<int, int64_t>{{yb, 2 * 32 * 8}}));
  std::string report = cross_core_report(plan, t, 2);
  EXPECT_NE(report.find(plan.buffer(wb).name + ", 64 KiB (launch 2)  <-  " + plan.buffer(yb).name +
                        ", 64 KiB (launch 0)"),
            std::string::npos)
      << report;
}

TEST(CrossCoreTraffic, OneThreadMovesNothing) {
  Totals t = totals(two_kernels(true, 2), 1);
  EXPECT_EQ(t.cross_reads, 0);
  EXPECT_EQ(t.cross_writes, 0);
  EXPECT_EQ(t.read, 2 * 1024);
}

TEST(CrossCoreTraffic, TasksOfOneThreadMoveNothing) {
  // One task: both kernels run on thread 0 whatever the thread count.
  Totals t = totals(two_kernels(true, 1), 2);
  EXPECT_EQ(t.cross_reads, 0);
  EXPECT_EQ(t.cross_writes, 0);
}

TEST(CrossCoreTraffic, AGatherIsNotWalked) {
  // Rows of a table chosen by an input: which lines a task reads is known only at run time.
  auto owner = std::make_unique<Graph>();
  Graph& g = *owner;
  Tensor table = Tensor::input(g, "table", dtypes::float32, {64, 256});
  Tensor rows = Tensor::input(g, "rows", dtypes::int64, {32});
  g.add_output("picked", table.mul(2.0).contiguous().gather(rows, 0).mul(3.0).uop());
  Plan plan = plan_graph(g, {});
  std::vector<OptimizedKernel> kernels;
  for (const KernelProgram& k : plan.programs) kernels.push_back(apply_opts(k.ast, {}));
  std::vector<LaunchTraffic> t = cross_core_traffic(plan, kernels, 2);
  int walked = 0, not_walked = 0;
  for (const LaunchTraffic& l : t) (l.analysed ? walked : not_walked) += 1;
  EXPECT_EQ(not_walked, 1);
  EXPECT_GE(walked, 1);
  EXPECT_NE(cross_core_report(plan, t, 2).find("not walked"), std::string::npos);
}

}  // namespace
}  // namespace kiln
