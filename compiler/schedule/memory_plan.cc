#include "compiler/schedule/memory_plan.h"

#include <algorithm>

#include "compiler/support/error.h"

namespace kiln {

namespace {

int64_t round_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

struct Lifetime {
  int first = -1, last = -1;
};

// Group of each launch, and for each buffer the groups of its writer and last reader. A loop's
// body runs its groups again and again: a buffer used both inside a loop and outside it (a
// state, a stacked output, a value computed before the loop and read in it), or read in the
// loop's first group by the runtime (its trip count), lives through the whole loop. One that
// lives inside the body only is written before it is read in every iteration.
std::vector<Lifetime> lifetimes(const Plan& plan) {
  std::vector<Lifetime> life(plan.buffers.size());
  auto use = [&](int buffer, int g, bool writes) {
    Lifetime& lt = life[static_cast<size_t>(buffer)];
    if (writes) lt.first = lt.first < 0 ? g : std::min(lt.first, g);
    lt.last = std::max(lt.last, g);
  };
  for (size_t g = 0; g < plan.groups.size(); ++g)
    for (int li : plan.groups[g]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      for (size_t a = 0; a < l.args.size(); ++a) use(l.args[a], static_cast<int>(g), a == 0);
    }
  for (const PlanLoop& l : plan.loops) {
    if (l.trips >= 0) use(l.trips, l.first_group, false);
    for (Lifetime& lt : life) {
      bool inside = l.first_group <= lt.last && lt.first <= l.last_group;
      bool within = l.first_group <= lt.first && lt.last <= l.last_group;
      if (lt.last < 0 || !inside || within) continue;
      lt.first = std::min(lt.first < 0 ? l.first_group : lt.first, l.first_group);
      lt.last = std::max(lt.last, l.last_group);
    }
  }
  return life;
}

bool intersects(const MemorySlot& a, const MemorySlot& b) {
  return a.first_group <= b.last_group && b.first_group <= a.last_group;
}

}  // namespace

void plan_memory(Plan& plan, int64_t alignment) {
  MemoryPlan& mp = plan.memory;
  mp = MemoryPlan{};
  mp.alignment = alignment;
  std::vector<Lifetime> life = lifetimes(plan);
  std::vector<MemorySlot> by_size;
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind != BufferKind::Intermediate) continue;
    const Lifetime& lt = life[static_cast<size_t>(b.id)];
    KILN_CHECK(lt.first >= 0, "intermediate buffer ", b.name, " is never written");
    by_size.push_back(
        {b.id, 0, round_up(std::max<int64_t>(b.bytes(), 1), alignment), lt.first, lt.last});
  }
  // Largest first; ties by earlier start, then buffer id (deterministic).
  std::stable_sort(by_size.begin(), by_size.end(), [](const MemorySlot& a, const MemorySlot& b) {
    if (a.size != b.size) return a.size > b.size;
    if (a.first_group != b.first_group) return a.first_group < b.first_group;
    return a.buffer < b.buffer;
  });
  std::vector<MemorySlot> placed;
  for (MemorySlot s : by_size) {
    std::vector<const MemorySlot*> live;
    for (const MemorySlot& p : placed)
      if (intersects(p, s)) live.push_back(&p);
    std::sort(live.begin(), live.end(),
              [](const MemorySlot* a, const MemorySlot* b) { return a->offset < b->offset; });
    // Best fit: the smallest gap between live buffers that holds s.
    int64_t best = -1, best_gap = 0, cursor = 0;
    for (const MemorySlot* p : live) {
      int64_t gap = p->offset - cursor;
      if (gap >= s.size && (best < 0 || gap < best_gap)) {
        best = cursor;
        best_gap = gap;
      }
      cursor = std::max(cursor, p->offset + p->size);
    }
    s.offset = best >= 0 ? best : cursor;
    placed.push_back(s);
    mp.arena_bytes = std::max(mp.arena_bytes, s.offset + s.size);
  }
  std::sort(placed.begin(), placed.end(),
            [](const MemorySlot& a, const MemorySlot& b) { return a.buffer < b.buffer; });
  mp.slots = placed;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    int64_t live = 0;
    for (const MemorySlot& s : placed)
      if (s.first_group <= static_cast<int>(g) && static_cast<int>(g) <= s.last_group)
        live += s.size;
    mp.lower_bound_bytes = std::max(mp.lower_bound_bytes, live);
  }
}

std::string check_memory_plan(const Plan& plan) {
  const MemoryPlan& mp = plan.memory;
  std::vector<Lifetime> life = lifetimes(plan);
  std::vector<bool> has_slot(plan.buffers.size(), false);
  for (const MemorySlot& s : mp.slots) {
    const PlanBuffer& b = plan.buffer(s.buffer);
    if (b.kind != BufferKind::Intermediate) return "slot for non-intermediate buffer " + b.name;
    if (s.offset < 0 || s.offset % mp.alignment != 0)
      return "buffer " + b.name + ": misaligned offset";
    if (s.size < b.bytes() || s.offset + s.size > mp.arena_bytes)
      return "buffer " + b.name + ": outside the arena";
    const Lifetime& lt = life[static_cast<size_t>(s.buffer)];
    if (s.first_group > lt.first || s.last_group < lt.last)
      return "buffer " + b.name + ": lifetime [" + std::to_string(s.first_group) + "," +
             std::to_string(s.last_group) + "] does not cover its uses [" +
             std::to_string(lt.first) + "," + std::to_string(lt.last) + "]";
    has_slot[static_cast<size_t>(s.buffer)] = true;
  }
  for (const PlanBuffer& b : plan.buffers)
    if (b.kind == BufferKind::Intermediate && !has_slot[static_cast<size_t>(b.id)])
      return "buffer " + b.name + " has no slot";
  for (size_t i = 0; i < mp.slots.size(); ++i)
    for (size_t j = i + 1; j < mp.slots.size(); ++j) {
      const MemorySlot& a = mp.slots[i];
      const MemorySlot& b = mp.slots[j];
      bool mem = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      if (mem && intersects(a, b))
        return "buffers " + plan.buffer(a.buffer).name + " and " + plan.buffer(b.buffer).name +
               " are live at the same time and overlap in memory";
    }
  return "";
}

}  // namespace kiln
