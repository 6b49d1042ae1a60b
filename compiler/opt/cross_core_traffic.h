// The cache lines a planned, optimized model moves between cores per run, launch by launch (a
// diagnostic: kilnc --cross-core).
//
// At T threads the runtime's pool gives thread t the same share of every parallel group's
// items each run (runtime/src/thread_pool.c), and a task covers a fixed part of its kernel's
// parallel loop (kernel_emitter.cc), so which thread touches which line of the arena is known at
// compile time. A line read by a thread other than the one that last wrote it comes from the
// other core's cache, and a line written while another core holds a copy must first be taken
// from that core: on a host whose vCPUs are far apart such a write runs 15-20x slower than one
// to a line only the writer holds, such a read ~3x slower (tools/bench/cross_core_read,
// docs/performance.md). The analysis walks every access of every launch to intermediates,
// inputs and outputs (weights are only read and stay shared), line by line, through two runs,
// and reports the second (the steady state). It assumes no stealing and unbounded caches, so it
// counts what a split and the memory plan ask for, not what a given host's evictions forgive;
// a loop's body (a recurrent net's step) counts once.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/opt/opts.h"
#include "compiler/schedule/plan.h"

namespace kiln {

struct LaunchTraffic {
  int launch = 0;
  int64_t lines_read = 0;     // distinct 64-byte lines the launch reads (over all threads)
  int64_t lines_written = 0;  // ... and writes
  int64_t cross_reads = 0;    // lines a thread reads that another thread wrote last
  int64_t cross_writes = 0;   // lines a thread writes that another thread's core still holds
  bool analysed = true;       // false: a symbolic extent, or an index read from data (not walked)
  // Where those lines come from: the cross reads by the launch that wrote them last, and the
  // cross writes by the buffer whose access left them in the other core (the launch's own
  // output: its readers' copies since its last write; another: the earlier tenant of its bytes
  // in the arena).
  std::map<int, int64_t> read_from;     // writer launch -> lines
  std::map<int, int64_t> written_over;  // buffer -> lines
};

// The 64-byte lines one launch reads and writes, per thread (sorted, unique), in an address
// space where buffer b starts at byte base[b] (-1: not walked; weights, only read, stay shared).
// `analysed` is false where an index cannot be walked at compile time (its sets are empty).
struct LaunchLines {
  std::vector<std::vector<int64_t>> reads, writes;  // [thread]
  bool analysed = true;
};

// The lines of every launch of `plan` (in launch order) at `threads` threads, by each task's
// share of its group's items, as the runtime's pool hands them out.
std::vector<LaunchLines> lines_touched(const Plan& plan,
                                       const std::vector<OptimizedKernel>& kernels, int threads,
                                       const std::vector<int64_t>& base);

// The cores' view of the lines through two runs of the plan, as the runtime runs them with no
// stealing (the launches of a group at once: their reads see the state before the group's
// writes). For every access, on_read(launch, line, cross) or on_write(launch, line, cross), the
// line being where(l) for the launch's line l, one of `lines` tracked (the identity, or a
// layout's placement of them); `cross`, in the second run only, says it comes from another core:
// read after another thread wrote it, or written while another core holds it. The callbacks run
// before the access updates the writer and holders. cross_core_traffic counts with it, and so
// does the arena's placement for threads (thread_affine_arena.h).
template <class Where, class OnRead, class OnWrite>
void replay_two_runs(const Plan& plan, const std::vector<LaunchLines>& touched, int threads,
                     int64_t lines, Where where, OnRead on_read, OnWrite on_write) {
  std::vector<int8_t> writer(static_cast<size_t>(lines), -1);   // -1: none yet
  std::vector<uint8_t> holders(static_cast<size_t>(lines), 0);  // the threads whose cores hold it
  for (int run = 0; run < 2; ++run)
    for (const std::vector<int>& group : plan.groups) {
      for (int l : group)
        for (int th = 0; th < threads; ++th)
          for (int64_t line : touched[static_cast<size_t>(l)].reads[static_cast<size_t>(th)]) {
            int64_t at = where(line);
            int8_t w = writer[static_cast<size_t>(at)];
            on_read(l, at, run == 1 && w >= 0 && w != th);
            holders[static_cast<size_t>(at)] |= static_cast<uint8_t>(1u << th);
          }
      for (int l : group)
        for (int th = 0; th < threads; ++th)
          for (int64_t line : touched[static_cast<size_t>(l)].writes[static_cast<size_t>(th)]) {
            int64_t at = where(line);
            uint8_t mine = static_cast<uint8_t>(1u << th);
            on_write(l, at, run == 1 && (holders[static_cast<size_t>(at)] & ~mine) != 0);
            holders[static_cast<size_t>(at)] = mine;
            writer[static_cast<size_t>(at)] = static_cast<int8_t>(th);
          }
    }
}

// The steady-state traffic of every launch of `plan` (in launch order) at `threads` threads.
// `kernels` are the optimized programs (their parallel loops and task counts).
std::vector<LaunchTraffic> cross_core_traffic(const Plan& plan,
                                              const std::vector<OptimizedKernel>& kernels,
                                              int threads);

// The totals, a table of the (at most 25) launches that move the most lines between cores, and
// the (at most 10) launch pairs and buffer pairs that move the most.
std::string cross_core_report(const Plan& plan, const std::vector<LaunchTraffic>& traffic,
                              int threads);

}  // namespace kiln
