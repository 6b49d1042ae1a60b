#include "compiler/opt/cross_core_traffic.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "compiler/support/error.h"

namespace kiln {

namespace {

constexpr int64_t kLine = 64;
constexpr int64_t kInvalid = std::numeric_limits<int64_t>::min();

// Thrown where an index cannot be walked at compile time (a symbolic extent or variable).
struct NotWalkable {};

int64_t extent(const UOp* r) {
  if (!r->src[0]->is_const()) throw NotWalkable{};
  return r->src[0]->cval().i;
}

// An integer index expression compiled to a straight-line program over int64 (Invalid as
// kInvalid, which every op passes through), evaluated at each point of its ranges.
class IndexProgram {
 public:
  explicit IndexProgram(const UOp* index) {
    for (const UOp* r : index->ranges()) ranges_.push_back(r);
    for (const UOp* u : index->toposort()) {
      Step s{u->op, {-1, -1, -1}, 0};
      if (u->op == Op::CONST) {
        s.value = u->cval().is_invalid() ? kInvalid : u->cval().i;
      } else if (u->op == Op::RANGE) {
        s.value =
            static_cast<int64_t>(std::find(ranges_.begin(), ranges_.end(), u) - ranges_.begin());
      } else if (u->op == Op::DEFINE_VAR || u->src.size() > 3) {
        throw NotWalkable{};
      }
      for (size_t i = 0; i < u->src.size() && u->op != Op::RANGE; ++i)
        s.src[i] = slot_.at(u->src[i]);
      slot_[u] = static_cast<int>(steps_.size());
      steps_.push_back(s);
    }
    values_.resize(steps_.size());
  }

  const std::vector<const UOp*>& ranges() const { return ranges_; }

  // The index at the point `at` (one value per range, in ranges() order).
  int64_t eval(const std::vector<int64_t>& at) {
    for (size_t i = 0; i < steps_.size(); ++i) values_[i] = step(steps_[i], at);
    return values_.back();
  }

 private:
  struct Step {
    Op op;
    int src[3];
    int64_t value;
  };

  int64_t step(const Step& s, const std::vector<int64_t>& at) const {
    auto v = [&](int i) { return values_[static_cast<size_t>(s.src[i])]; };
    switch (s.op) {
      case Op::CONST:
        return s.value;
      case Op::RANGE:
        return at[static_cast<size_t>(s.value)];
      case Op::WHERE:
        if (v(0) == kInvalid) return kInvalid;
        return v(0) ? v(1) : v(2);
      default:
        break;
    }
    int64_t a = v(0), b = s.src[1] >= 0 ? v(1) : 0;
    if (a == kInvalid || b == kInvalid) return kInvalid;
    switch (s.op) {
      case Op::ADD:
        return a + b;
      case Op::MUL:
        return a * b;
      case Op::IDIV:
        return b == 0 ? kInvalid : a / b;
      case Op::MOD:
        return b == 0 ? kInvalid : a % b;
      case Op::MAX:
        return std::max(a, b);
      case Op::MIN:
        return std::min(a, b);
      case Op::NEG:
        return -a;
      case Op::CMPLT:
        return a < b;
      case Op::CMPEQ:
        return a == b;
      case Op::CMPNE:
        return a != b;
      case Op::AND:
        return a & b;
      case Op::OR:
        return a | b;
      case Op::XOR:
        return a ^ b;
      case Op::SHL:
        return a << b;
      case Op::SHR:
        return a >> b;
      case Op::CAST:
        return a;
      default:
        throw NotWalkable{};
    }
  }

  std::vector<const UOp*> ranges_;
  std::vector<Step> steps_;
  std::vector<int64_t> values_;
  std::unordered_map<const UOp*, int> slot_;
};

// One address space: where each buffer's bytes start (intermediates at their arena offsets,
// inputs and outputs after the arena; -1 for weights, only read: their lines stay shared), and
// how many lines it spans.
struct AddressSpace {
  std::vector<int64_t> base;
  int64_t lines = 0;
};

AddressSpace address_space(const Plan& plan) {
  AddressSpace a{std::vector<int64_t>(plan.buffers.size(), -1), 0};
  for (const MemorySlot& s : plan.memory.slots) a.base[static_cast<size_t>(s.buffer)] = s.offset;
  int64_t end = (plan.memory.arena_bytes + kLine - 1) / kLine * kLine;
  for (const PlanBuffer& b : plan.buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Output) {
      a.base[static_cast<size_t>(b.id)] = end;
      end += (b.bytes() + kLine - 1) / kLine * kLine;
    }
  a.lines = end / kLine;
  return a;
}

// The lines one argument's accesses touch, per thread, counted from the buffer's first line.
struct ArgLines {
  size_t arg = 0;
  bool written = false;
  std::vector<std::vector<int64_t>> lines;  // [thread]
};

// What a launch's program touches in each argument the address space places (base >= 0): the
// same for every launch of the program at the same place in its group, so computed once.
struct ProgramLines {
  std::vector<ArgLines> args;
  bool analysed = true;
};

// `first_item`: the launch's first item in its group of `group_items`.
ProgramLines program_lines(const Plan& plan, const Launch& l, const OptimizedKernel& k,
                           const std::vector<int64_t>& base, int threads, int64_t first_item,
                           int64_t group_items) {
  ProgramLines out;
  auto thread_of_item = [&](int64_t item) {
    for (int t = threads - 1; t >= 0; --t)
      if (item >= t * group_items / threads) return t;
    return 0;
  };
  // The thread that runs each iteration of the parallel loop: task i covers [i N / T, (i + 1)
  // N / T) of its N iterations (kernel_emitter.cc).
  const UOp* parallel = nullptr;
  std::vector<const UOp*> stored;  // the INDEX nodes stores write through
  for (const UOp* u : k.ast->toposort()) {
    if (u->op == Op::RANGE && u->range().kind == AxisKind::Parallel) parallel = u;
    if (u->op == Op::STORE) stored.push_back(u->src[0]);
  }
  std::vector<int> thread_of;
  std::vector<int> running;  // threads with at least one task of the launch
  try {
    if (parallel) {
      int64_t n = extent(parallel);
      thread_of.resize(static_cast<size_t>(n));
      for (int64_t task = 0; task < k.ntasks; ++task)
        for (int64_t i = task * n / k.ntasks; i < (task + 1) * n / k.ntasks; ++i)
          thread_of[static_cast<size_t>(i)] = thread_of_item(first_item + task);
    }
    for (int64_t task = 0; task < k.ntasks; ++task) {
      int t = thread_of_item(first_item + task);
      if (std::find(running.begin(), running.end(), t) == running.end()) running.push_back(t);
    }
    for (const UOp* u : k.ast->toposort()) {
      if (u->op != Op::INDEX || u->src[0]->op != Op::DEFINE_GLOBAL) continue;
      size_t arg = static_cast<size_t>(u->src[0]->iarg());
      int buffer = l.args.at(arg);
      if (base[static_cast<size_t>(buffer)] < 0) continue;
      int64_t item = plan.buffer(buffer).dtype.itemsize();
      bool written = std::find(stored.begin(), stored.end(), u) != stored.end();
      out.args.push_back(
          {arg, written, std::vector<std::vector<int64_t>>(static_cast<size_t>(threads))});
      auto& sets = out.args.back().lines;
      IndexProgram p(u->src[1]);
      const std::vector<const UOp*>& rs = p.ranges();
      std::vector<int64_t> ends, at(rs.size(), 0);
      int par = -1;
      bool empty = false;
      for (size_t i = 0; i < rs.size(); ++i) {
        ends.push_back(extent(rs[i]));
        if (rs[i] == parallel) par = static_cast<int>(i);
        empty = empty || ends.back() == 0;
      }
      if (!empty) {
        std::vector<int64_t> last(static_cast<size_t>(threads), -1);
        for (;;) {
          int64_t idx = p.eval(at);
          if (idx != kInvalid) {
            int64_t line = idx * item / kLine;
            auto add = [&](int t) {
              if (last[static_cast<size_t>(t)] == line) return;
              last[static_cast<size_t>(t)] = line;
              sets[static_cast<size_t>(t)].push_back(line);
            };
            if (par >= 0)
              add(thread_of[static_cast<size_t>(at[static_cast<size_t>(par)])]);
            else
              for (int t : running) add(t);
          }
          size_t d = rs.size();
          while (d > 0 && ++at[d - 1] == ends[d - 1]) at[--d] = 0;
          if (d == 0) break;
        }
      }
    }
  } catch (const NotWalkable&) {
    out.analysed = false;
    out.args.clear();
  }
  return out;
}

// A launch's lines from its program's, each argument's at its buffer's first line.
LaunchLines launch_lines(const ProgramLines& p, const Launch& l, const std::vector<int64_t>& base,
                         int threads) {
  LaunchLines out;
  out.reads.resize(static_cast<size_t>(threads));
  out.writes.resize(static_cast<size_t>(threads));
  out.analysed = p.analysed;
  for (const ArgLines& a : p.args) {
    int64_t first = base[static_cast<size_t>(l.args.at(a.arg))] / kLine;
    auto& sets = a.written ? out.writes : out.reads;
    for (size_t t = 0; t < a.lines.size(); ++t)
      for (int64_t line : a.lines[t]) sets[t].push_back(first + line);
  }
  for (auto* sets : {&out.reads, &out.writes})
    for (auto& s : *sets) {
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
    }
  return out;
}

int64_t distinct(const std::vector<std::vector<int64_t>>& sets) {
  std::vector<int64_t> all;
  for (const auto& s : sets) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  return std::unique(all.begin(), all.end()) - all.begin();
}

}  // namespace

std::vector<LaunchLines> lines_touched(const Plan& plan,
                                       const std::vector<OptimizedKernel>& kernels, int threads,
                                       const std::vector<int64_t>& base) {
  std::vector<LaunchLines> touched(plan.launches.size());
  // (program, first item, group's items, the arguments placed) -> its lines
  std::map<std::tuple<int, int64_t, int64_t, std::vector<bool>>, ProgramLines> programs;
  for (const std::vector<int>& group : plan.groups) {
    // (The kernels' task counts: the optimize stage copies them into the launches.)
    auto kernel = [&](int l) -> const OptimizedKernel& {
      return kernels.at(static_cast<size_t>(plan.launches[static_cast<size_t>(l)].program));
    };
    int64_t items = 0, first = 0;
    for (int l : group) items += kernel(l).ntasks;
    for (int l : group) {
      const Launch& launch = plan.launches[static_cast<size_t>(l)];
      std::vector<bool> placed;
      for (int b : launch.args) placed.push_back(base[static_cast<size_t>(b)] >= 0);
      auto key = std::make_tuple(launch.program, first, items, placed);
      auto it = programs.find(key);
      if (it == programs.end())
        it = programs
                 .emplace(key, program_lines(plan, launch, kernel(l), base, threads, first, items))
                 .first;
      touched[static_cast<size_t>(l)] = launch_lines(it->second, launch, base, threads);
      first += kernel(l).ntasks;
    }
  }
  return touched;
}

std::vector<LaunchTraffic> cross_core_traffic(const Plan& plan,
                                              const std::vector<OptimizedKernel>& kernels,
                                              int threads) {
  KILN_CHECK(threads >= 1 && threads <= 8, "cross_core_traffic: 1 to 8 threads, not ", threads);
  AddressSpace space = address_space(plan);
  std::vector<LaunchLines> touched = lines_touched(plan, kernels, threads, space.base);
  std::vector<LaunchTraffic> out(plan.launches.size());
  // Per line: the launch that wrote it last, and the launch that touched it last and whether it
  // wrote it (which buffer that was is looked up only for the lines written across).
  std::vector<int> writer_launch(static_cast<size_t>(space.lines), -1);
  std::vector<int> toucher(static_cast<size_t>(space.lines), -1);
  std::vector<uint8_t> touched_by_write(static_cast<size_t>(space.lines), 0);
  // The buffer among launch l's inputs (or its output) that holds `line`.
  auto buffer_at = [&](int l, int64_t line, bool written) {
    if (l < 0) return -1;
    const std::vector<int>& args = plan.launches[static_cast<size_t>(l)].args;
    if (written) return args.at(0);
    for (size_t a = 1; a < args.size(); ++a) {
      int64_t at = space.base[static_cast<size_t>(args[a])];
      if (at >= 0 && line * kLine >= at && line * kLine < at + plan.buffer(args[a]).bytes())
        return args[a];
    }
    return -1;
  };
  replay_two_runs(
      plan, touched, threads, space.lines, [](int64_t line) { return line; },
      [&](int l, int64_t line, bool cross) {
        size_t at = static_cast<size_t>(line);
        if (cross) {
          ++out[static_cast<size_t>(l)].cross_reads;
          ++out[static_cast<size_t>(l)].read_from[writer_launch[at]];
        }
        toucher[at] = l;
        touched_by_write[at] = 0;
      },
      [&](int l, int64_t line, bool cross) {
        size_t at = static_cast<size_t>(line);
        if (cross) {
          ++out[static_cast<size_t>(l)].cross_writes;
          ++out[static_cast<size_t>(l)]
                .written_over[buffer_at(toucher[at], line, touched_by_write[at])];
        }
        writer_launch[at] = l;
        toucher[at] = l;
        touched_by_write[at] = 1;
      });
  for (size_t l = 0; l < out.size(); ++l) {
    out[l].launch = static_cast<int>(l);
    out[l].lines_read = distinct(touched[l].reads);
    out[l].lines_written = distinct(touched[l].writes);
    out[l].analysed = touched[l].analysed;
  }
  return out;
}

std::string cross_core_report(const Plan& plan, const std::vector<LaunchTraffic>& traffic,
                              int threads) {
  auto kib = [](int64_t lines) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", static_cast<double>(lines * kLine) / 1024.0);
    return std::string(b);
  };
  int64_t read = 0, written = 0, cross_r = 0, cross_w = 0;
  std::vector<std::string> skipped;
  std::vector<const LaunchTraffic*> moving;
  for (const LaunchTraffic& t : traffic) {
    read += t.lines_read;
    written += t.lines_written;
    cross_r += t.cross_reads;
    cross_w += t.cross_writes;
    if (!t.analysed) skipped.push_back(std::to_string(t.launch));
    if (t.cross_reads + t.cross_writes > 0) moving.push_back(&t);
  }
  std::stable_sort(moving.begin(), moving.end(), [](const auto* a, const auto* b) {
    return a->cross_reads + a->cross_writes > b->cross_reads + b->cross_writes;
  });
  std::ostringstream os;
  os << "cross-core traffic at " << threads
     << " threads, per run (steady state, no stealing): " << kib(cross_r)
     << " KiB read from another core's writes, " << kib(cross_w)
     << " KiB written over lines another core held; of " << kib(read) << " KiB read and "
     << kib(written) << " KiB written\n";
  if (!skipped.empty()) {
    os << "not walked (symbolic sizes, or indices read from data):";
    for (const std::string& s : skipped) os << " " << s;
    os << "\n";
  }
  os << "launch  cross read KiB  cross written KiB  of read KiB  of written KiB  computes\n";
  // The launches that move the most; the totals above count them all.
  constexpr size_t kRows = 25;
  if (moving.size() > kRows) {
    os << "(the " << kRows << " launches that move the most lines of " << moving.size() << ")\n";
    moving.resize(kRows);
  }
  for (const LaunchTraffic* t : moving) {
    const Launch& l = plan.launches[static_cast<size_t>(t->launch)];
    char row[96];
    std::snprintf(row, sizeof row, "%-6d  %14s  %17s  %11s  %14s  ", t->launch,
                  kib(t->cross_reads).c_str(), kib(t->cross_writes).c_str(),
                  kib(t->lines_read).c_str(), kib(t->lines_written).c_str());
    os << row << l.label(plan.programs[static_cast<size_t>(l.program)].name) << "\n";
  }
  // The pairs that move the most: which consumer reads which producer's lines across, and
  // which buffer's writes find which buffer's lines in the other core (itself: its readers'
  // copies; another: the tenant before it in the arena).
  constexpr size_t kPairs = 10;
  std::vector<std::pair<int64_t, std::pair<int, int>>> reads, writes;  // (lines, (from, to))
  for (const LaunchTraffic& t : traffic) {
    for (auto [w, n] : t.read_from) reads.push_back({n, {w, t.launch}});
    for (auto [b, n] : t.written_over)
      writes.push_back({n, {plan.launches[static_cast<size_t>(t.launch)].args.at(0), b}});
  }
  auto merge = [](std::vector<std::pair<int64_t, std::pair<int, int>>>& v) {
    std::map<std::pair<int, int>, int64_t> sum;
    for (auto& [n, k] : v) sum[k] += n;
    v.clear();
    for (auto& [k, n] : sum) v.push_back({n, k});
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (v.size() > kPairs) v.resize(kPairs);
  };
  merge(reads);
  merge(writes);
  // A buffer as its name, size and first writer (launch), or its kind.
  auto buffer = [&](int b) {
    if (b < 0) return std::string("(unknown)");
    const PlanBuffer& pb = plan.buffer(b);
    std::string s = pb.name + ", " + kib((pb.bytes() + kLine - 1) / kLine) + " KiB";
    for (size_t i = 0; i < plan.launches.size(); ++i)
      if (plan.launches[i].args.at(0) == b) return s + " (launch " + std::to_string(i) + ")";
    return s + (pb.kind == BufferKind::Input ? " (input)" : "");
  };
  if (!reads.empty()) {
    os << "read from another core, by the launch that wrote the lines (the " << reads.size()
       << " largest pairs):\nwriter  reader  KiB\n";
    for (auto& [n, k] : reads) {
      char row[64];
      std::snprintf(row, sizeof row, "%-6d  %-6d  %s\n", k.first, k.second, kib(n).c_str());
      os << row;
    }
  }
  if (!writes.empty()) {
    os << "written over another core's lines, by the buffer written and the buffer whose lines "
          "they were (the "
       << writes.size() << " largest pairs):\nKiB     written  <-  over\n";
    for (auto& [n, k] : writes) {
      char head[16];
      std::snprintf(head, sizeof head, "%-6s  ", kib(n).c_str());
      os << head << buffer(k.first) << "  <-  "
         << (k.first == k.second ? std::string("itself (its readers' copies)") : buffer(k.second))
         << "\n";
    }
  }
  return os.str();
}

}  // namespace kiln
