#include "compiler/opt/thread_affine_arena.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "compiler/opt/cross_core_traffic.h"

namespace kiln {

namespace {

constexpr int64_t kLine = 64;

int64_t round_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

// The slots of one chain of in-place buffers (MemorySlot::in_place_of), which share an offset.
struct Unit {
  std::vector<size_t> slots;  // into plan.memory.slots
  int head = 0;               // the chain's first buffer
  int64_t size = 0;
  int first = 0, last = 0;
  int64_t line0 = 0;   // its first line in the layout where every unit has bytes of its own
  int64_t offset = 0;  // where it is placed
};

std::vector<Unit> units_of(const MemoryPlan& mp) {
  std::map<int, size_t> slot_of_buffer;
  for (size_t i = 0; i < mp.slots.size(); ++i) slot_of_buffer[mp.slots[i].buffer] = i;
  auto head = [&](int b) {
    for (;;) {
      auto it = slot_of_buffer.find(b);
      if (it == slot_of_buffer.end() || mp.slots[it->second].in_place_of < 0) return b;
      b = mp.slots[it->second].in_place_of;
    }
  };
  std::vector<Unit> units;
  std::map<int, size_t> unit_of_head;
  for (size_t i = 0; i < mp.slots.size(); ++i) {
    const MemorySlot& s = mp.slots[i];
    int h = head(s.buffer);
    auto [it, fresh] = unit_of_head.emplace(h, units.size());
    if (fresh) units.push_back({{}, h, 0, s.first_group, s.last_group, 0, s.offset});
    Unit& u = units[it->second];
    u.slots.push_back(i);
    u.size = std::max(u.size, s.size);
    u.first = std::min(u.first, s.first_group);
    u.last = std::max(u.last, s.last_group);
  }
  return units;
}

// What each line of the separate layout sees in one run: the thread that writes it first (-1:
// none, or read first) and the threads whose cores hold it at the end.
struct LineUse {
  std::vector<int8_t> first_writer;
  std::vector<uint8_t> holders;
};

LineUse line_use(const Plan& plan, const std::vector<LaunchLines>& touched, int64_t lines,
                 int threads) {
  LineUse u{std::vector<int8_t>(static_cast<size_t>(lines), -1),
            std::vector<uint8_t>(static_cast<size_t>(lines), 0)};
  std::vector<uint8_t> seen(static_cast<size_t>(lines), 0);
  for (const std::vector<int>& group : plan.groups) {
    for (int l : group)
      for (int th = 0; th < threads; ++th)
        for (int64_t line : touched[static_cast<size_t>(l)].reads[static_cast<size_t>(th)]) {
          u.holders[static_cast<size_t>(line)] |= static_cast<uint8_t>(1u << th);
          seen[static_cast<size_t>(line)] = 1;
        }
    for (int l : group)
      for (int th = 0; th < threads; ++th)
        for (int64_t line : touched[static_cast<size_t>(l)].writes[static_cast<size_t>(th)]) {
          size_t at = static_cast<size_t>(line);
          if (!seen[at]) u.first_writer[at] = static_cast<int8_t>(th);
          seen[at] = 1;
          u.holders[at] = static_cast<uint8_t>(1u << th);
        }
  }
  return u;
}

// The lines a thread reads after another wrote them, or writes while another core holds them,
// in the second of two runs (cross_core_traffic's count), with the separate layout's line l at
// `at[l]`.
int64_t moved_lines(const Plan& plan, const std::vector<LaunchLines>& touched,
                    const std::vector<int64_t>& at, int64_t lines, int threads) {
  std::vector<int8_t> writer(static_cast<size_t>(lines), -1);
  std::vector<uint8_t> holders(static_cast<size_t>(lines), 0);
  int64_t moved = 0;
  for (int run = 0; run < 2; ++run)
    for (const std::vector<int>& group : plan.groups) {
      for (int l : group)
        for (int th = 0; th < threads; ++th)
          for (int64_t line : touched[static_cast<size_t>(l)].reads[static_cast<size_t>(th)]) {
            size_t a = static_cast<size_t>(at[static_cast<size_t>(line)]);
            if (run == 1 && writer[a] >= 0 && writer[a] != th) ++moved;
            holders[a] |= static_cast<uint8_t>(1u << th);
          }
      for (int l : group)
        for (int th = 0; th < threads; ++th)
          for (int64_t line : touched[static_cast<size_t>(l)].writes[static_cast<size_t>(th)]) {
            size_t a = static_cast<size_t>(at[static_cast<size_t>(line)]);
            uint8_t mine = static_cast<uint8_t>(1u << th);
            if (run == 1 && (holders[a] & ~mine)) ++moved;
            holders[a] = mine;
            writer[a] = static_cast<int8_t>(th);
          }
    }
  return moved;
}

// The lines of unit u at offset o that change cores between u and the units placed before it
// that share them at other times (`gone`): for each line, the tenant whose lifetime ends last
// before u's starts (u's first write against the holders it left) and the one that starts
// first after u's ends (the holders u leaves against its first write).
int64_t conflicts(const Unit& u, int64_t o, const std::vector<const Unit*>& gone,
                  const LineUse& use) {
  size_t n = static_cast<size_t>(u.size / kLine);
  std::vector<const Unit*> prev(n, nullptr), next(n, nullptr);
  for (const Unit* q : gone) {
    int64_t lo = std::max(o, q->offset), hi = std::min(o + u.size, q->offset + q->size);
    for (int64_t b = lo; b < hi; b += kLine) {
      size_t i = static_cast<size_t>((b - o) / kLine);
      if (q->last < u.first) {
        if (!prev[i] || prev[i]->last < q->last) prev[i] = q;
      } else if (!next[i] || next[i]->first > q->first) {
        next[i] = q;
      }
    }
  }
  // Line i of u in q's own layout.
  auto line_of = [&](const Unit* q, size_t i) {
    return static_cast<size_t>(q->line0 + (o - q->offset) / kLine + static_cast<int64_t>(i));
  };
  int64_t c = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t mine = static_cast<size_t>(u.line0) + i;
    int8_t w = use.first_writer[mine];
    if (const Unit* q = prev[i]; q && w >= 0 && (use.holders[line_of(q, i)] & ~(1u << w))) ++c;
    if (const Unit* q = next[i]) {
      int8_t wn = use.first_writer[line_of(q, i)];
      if (wn >= 0 && (use.holders[mine] & ~(1u << wn))) ++c;
    }
  }
  return c;
}

// Places the units as plan_memory does, largest first into the gaps among the units live with
// each, but at the offset with the fewest conflicts (above) rather than in the smallest gap;
// then inside `bound` bytes, then the smaller gap (best fit), then the lower offset. Candidates:
// each gap's ends and the ends of the earlier tenants in it. Returns the arena's bytes.
int64_t place_units(std::vector<Unit>& units, const LineUse& use, int64_t bound,
                    int64_t alignment) {
  std::vector<size_t> order(units.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Unit& x = units[a];
    const Unit& y = units[b];
    return std::make_tuple(-x.size, x.first, x.head) < std::make_tuple(-y.size, y.first, y.head);
  });
  std::vector<const Unit*> placed;
  int64_t arena = 0;
  for (size_t ui : order) {
    Unit& u = units[ui];
    std::vector<const Unit*> live, gone;
    for (const Unit* q : placed)
      (q->first <= u.last && u.first <= q->last ? live : gone).push_back(q);
    std::sort(live.begin(), live.end(),
              [](const Unit* a, const Unit* b) { return a->offset < b->offset; });
    std::vector<std::pair<int64_t, int64_t>> gaps;  // [a, b); the last one unbounded (b = -1)
    int64_t cursor = 0;
    for (const Unit* q : live) {
      if (q->offset - cursor >= u.size) gaps.push_back({cursor, q->offset});
      cursor = std::max(cursor, q->offset + q->size);
    }
    gaps.push_back({cursor, -1});
    // (beyond the bound, conflicts, gap bytes, offset)
    std::tuple<bool, int64_t, int64_t, int64_t> best{true, 0, 0, -1};
    for (auto [a, b] : gaps) {
      int64_t last = b < 0 ? a : b - u.size;
      int64_t gap = b < 0 ? std::numeric_limits<int64_t>::max() : b - a;
      std::vector<int64_t> at = {a, last};
      for (const Unit* q : gone)
        if (q->offset + q->size > a && q->offset < (b < 0 ? a + u.size : b)) {
          at.push_back(q->offset);
          at.push_back(q->offset + q->size - u.size);
          at.push_back(q->offset + (q->size - u.size) / 2);  // the middles aligned
        }
      for (int64_t o : at) {
        o = std::clamp(o / alignment * alignment, a, last);
        std::tuple<bool, int64_t, int64_t, int64_t> c{o + u.size > bound,
                                                      conflicts(u, o, gone, use), gap, o};
        if (std::get<3>(best) < 0 || c < best) best = c;
      }
    }
    u.offset = std::get<3>(best);
    arena = std::max(arena, u.offset + u.size);
    placed.push_back(&u);
  }
  return arena;
}

}  // namespace

ArenaPlacement place_arena_for_threads(Plan& plan, const std::vector<OptimizedKernel>& kernels,
                                       int threads) {
  MemoryPlan& mp = plan.memory;
  if (threads < 2 || threads > 8 || mp.slots.empty() || mp.alignment % kLine != 0) return {};
  std::vector<Unit> units = units_of(mp);
  // Every unit, then the inputs and outputs, in bytes of its own.
  std::vector<int64_t> base(plan.buffers.size(), -1);
  int64_t end = 0;
  for (Unit& u : units) {
    u.line0 = end / kLine;
    for (size_t i : u.slots) base[static_cast<size_t>(mp.slots[i].buffer)] = end;
    end += u.size;
  }
  int64_t io_line0 = end / kLine;
  for (const PlanBuffer& b : plan.buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Output) {
      base[static_cast<size_t>(b.id)] = end;
      end += round_up(b.bytes(), kLine);
    }
  int64_t lines = end / kLine;
  std::vector<LaunchLines> touched = lines_touched(plan, kernels, threads, base);
  for (const LaunchLines& t : touched)
    if (!t.analysed) return {};
  LineUse use = line_use(plan, touched, lines, threads);

  // Where the separate layout's lines lie with the units at their offsets, the inputs and
  // outputs after an arena of `arena` bytes.
  auto layout = [&](int64_t arena) {
    std::vector<int64_t> at(static_cast<size_t>(lines));
    for (const Unit& u : units)
      for (int64_t i = 0; i < u.size / kLine; ++i)
        at[static_cast<size_t>(u.line0 + i)] = u.offset / kLine + i;
    for (int64_t l = io_line0; l < lines; ++l)
      at[static_cast<size_t>(l)] = round_up(arena, kLine) / kLine + (l - io_line0);
    return at;
  };
  int64_t arena0 = mp.arena_bytes;
  int64_t all_lines = round_up(arena0, kLine) / kLine + (lines - io_line0);
  int64_t before = moved_lines(plan, touched, layout(arena0), all_lines, threads);

  int64_t arena = place_units(units, use, arena0, mp.alignment);
  int64_t after = moved_lines(plan, touched, layout(arena),
                              round_up(arena, kLine) / kLine + (lines - io_line0), threads);
  if (arena > arena0 || after >= before) return {0, before, before};
  ArenaPlacement done{0, before, after};
  for (const Unit& u : units)
    for (size_t i : u.slots) {
      done.slots_moved += mp.slots[i].offset != u.offset;
      mp.slots[i].offset = u.offset;
    }
  mp.arena_bytes = arena;
  return done;
}

}  // namespace kiln
