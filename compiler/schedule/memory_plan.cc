#include "compiler/schedule/memory_plan.h"

#include <algorithm>

#include "compiler/support/arith.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

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

// Whether kernel `ast` reads argument `arg` only at the element it stores, through the same
// index expression (hash-consed: one UOp), and stores once: each lane then loads its element
// before it overwrites it, and no lane reads an element another lane (or task) writes.
bool reads_only_where_it_stores(const UOp* ast, int arg) {
  const auto& nodes = ast->toposort();
  const UOp* store = nullptr;
  int stores = 0;
  for (const UOp* u : nodes)
    if (u->op == Op::STORE) {
      store = u;
      ++stores;
    }
  if (stores != 1) return false;
  const UOp* at = store->src[0]->src[1];
  bool read = false;
  for (const UOp* u : nodes) {
    if (u->op == Op::DEFINE_GLOBAL && u->iarg() == arg)
      for (const UOp* user : nodes)
        for (const UOp* src : user->src)
          if (src == u && (user->op != Op::INDEX || user->src[1] != at)) return false;
    if (u->op == Op::LOAD && u->src[0]->src[0]->op == Op::DEFINE_GLOBAL &&
        u->src[0]->src[0]->iarg() == arg)
      read = true;
  }
  return read;
}

}  // namespace

// An elementwise kernel's output takes the memory of an input whose last reader it is (SiLU
// after a depthwise layer, a squeeze-excitation scale): the kernel then overwrites lines it has
// just read, where a separate output first fetched each line it writes (efficientnet_b0's SiLU
// over a 1.8 MB map ran at 1.45x ORT's time, which works in place). Only when nothing else
// touches either buffer in the group (its launches run concurrently), outside loops, with the
// same size and element width.
std::vector<int> in_place_sources(const Plan& plan) {
  std::vector<Lifetime> life = lifetimes(plan);
  std::vector<int> source(plan.buffers.size(), -1);
  std::vector<bool> taken(plan.buffers.size(), false);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    std::vector<int> uses(plan.buffers.size(), 0);
    for (int li : plan.groups[g])
      for (int b : plan.launches[static_cast<size_t>(li)].args) ++uses[static_cast<size_t>(b)];
    for (int li : plan.groups[g]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      const PlanBuffer& out = plan.buffer(l.args[0]);
      if (l.loop >= 0 || out.kind != BufferKind::Intermediate || uses[out.id] != 1 ||
          life[static_cast<size_t>(out.id)].first != static_cast<int>(g))
        continue;
      for (size_t a = 1; a < l.args.size(); ++a) {
        const PlanBuffer& in = plan.buffer(l.args[a]);
        size_t i = static_cast<size_t>(in.id);
        if (in.kind != BufferKind::Intermediate || uses[i] != 1 || taken[i] ||
            life[i].last != static_cast<int>(g) || in.bytes() != out.bytes() ||
            in.dtype.itemsize() != out.dtype.itemsize())
          continue;
        bool in_loop = false;
        for (const PlanLoop& pl : plan.loops)
          in_loop |= pl.first_group <= life[i].last && life[i].first <= pl.last_group;
        if (in_loop || !reads_only_where_it_stores(
                           plan.programs[static_cast<size_t>(l.program)].ast, static_cast<int>(a)))
          continue;
        source[static_cast<size_t>(out.id)] = in.id;
        taken[i] = true;
        break;
      }
    }
  }
  return source;
}

void plan_memory(Plan& plan, int64_t alignment) {
  MemoryPlan& mp = plan.memory;
  mp = MemoryPlan{};
  mp.alignment = alignment;
  std::vector<Lifetime> life = lifetimes(plan);
  // A chain of in-place buffers is placed as one slot over all their lifetimes, under the id of
  // its first buffer; each buffer then gets the chain's offset.
  std::vector<int> source = in_place_sources(plan);
  auto chain_head = [&](int b) {
    while (source[static_cast<size_t>(b)] >= 0) b = source[static_cast<size_t>(b)];
    return b;
  };
  std::vector<MemorySlot> by_size;
  std::vector<int> slot_of(plan.buffers.size(), -1);
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind != BufferKind::Intermediate) continue;
    const Lifetime& lt = life[static_cast<size_t>(b.id)];
    KILN_CHECK(lt.first >= 0, "intermediate buffer ", b.name, " is never written");
    int head = chain_head(b.id);
    int64_t size = round_up(std::max<int64_t>(b.bytes(), 1), alignment);
    int& at = slot_of[static_cast<size_t>(head)];
    if (at < 0) {
      at = static_cast<int>(by_size.size());
      by_size.push_back({head, 0, size, lt.first, lt.last});
    } else {
      MemorySlot& c = by_size[static_cast<size_t>(at)];
      c.size = std::max(c.size, size);
      c.first_group = std::min(c.first_group, lt.first);
      c.last_group = std::max(c.last_group, lt.last);
    }
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
  std::vector<int64_t> chain_offset(plan.buffers.size(), -1);
  for (const MemorySlot& c : placed) chain_offset[static_cast<size_t>(c.buffer)] = c.offset;
  placed.clear();
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind != BufferKind::Intermediate) continue;
    const Lifetime& lt = life[static_cast<size_t>(b.id)];
    placed.push_back({b.id, chain_offset[static_cast<size_t>(chain_head(b.id))],
                      round_up(std::max<int64_t>(b.bytes(), 1), alignment), lt.first, lt.last,
                      source[static_cast<size_t>(b.id)]});
  }
  mp.slots = placed;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    int64_t live = 0;
    for (const MemorySlot& s : placed)
      if (s.first_group <= static_cast<int>(g) && static_cast<int>(g) <= s.last_group &&
          !(s.in_place_of >= 0 && s.first_group == static_cast<int>(g)))
        live += s.size;  // (an in-place output shares its first group's bytes with its source)
    mp.lower_bound_bytes = std::max(mp.lower_bound_bytes, live);
  }
}

std::string check_memory_plan(const Plan& plan) {
  const MemoryPlan& mp = plan.memory;
  std::vector<Lifetime> life = lifetimes(plan);
  std::vector<int> source = in_place_sources(plan);
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
  // An in-place pair (declared by the output's slot, as the package does) is the pair
  // in_place_sources finds, at one offset and size, the source's lifetime ending where the
  // output's starts.
  std::vector<const MemorySlot*> slot_of(plan.buffers.size(), nullptr);
  for (const MemorySlot& s : mp.slots) slot_of[static_cast<size_t>(s.buffer)] = &s;
  for (const MemorySlot& s : mp.slots) {
    const std::string& name = plan.buffer(s.buffer).name;
    if (s.in_place_of != source[static_cast<size_t>(s.buffer)])
      return "buffer " + name + ": declared in place of buffer " + std::to_string(s.in_place_of) +
             ", expected " + std::to_string(source[static_cast<size_t>(s.buffer)]);
    if (s.in_place_of < 0) continue;
    const MemorySlot* p = slot_of[static_cast<size_t>(s.in_place_of)];
    if (!p || p->offset != s.offset || p->size != s.size || p->last_group != s.first_group ||
        p->first_group >= s.first_group)
      return "buffer " + name + ": not in place of " + plan.buffer(s.in_place_of).name +
             " (offset, size or lifetimes differ)";
  }
  for (size_t i = 0; i < mp.slots.size(); ++i)
    for (size_t j = i + 1; j < mp.slots.size(); ++j) {
      const MemorySlot& a = mp.slots[i];
      const MemorySlot& b = mp.slots[j];
      bool mem = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      // An in-place pair shares its one group: the kernel reads each element before it writes it.
      bool in_place = b.in_place_of == a.buffer || a.in_place_of == b.buffer;
      if (mem && intersects(a, b) && !in_place)
        return "buffers " + plan.buffer(a.buffer).name + " and " + plan.buffer(b.buffer).name +
               " are live at the same time and overlap in memory";
    }
  return "";
}

}  // namespace kiln
