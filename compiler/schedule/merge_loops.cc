#include "compiler/schedule/merge_loops.h"

#include <algorithm>
#include <unordered_map>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"

namespace kiln {

namespace {

std::vector<const UOp*> output_loops(const UOp* ast) {
  std::vector<const UOp*> loops;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE && u->range().kind == AxisKind::Loop) loops.push_back(u);
  std::sort(loops.begin(), loops.end(),
            [](const UOp* x, const UOp* y) { return x->range().id < y->range().id; });
  return loops;
}

int64_t size_of(const UOp* r) {
  return r->src[0]->op == Op::CONST ? r->src[0]->cval().i : -1;
}

// Whether some division or remainder in `ast` still reads `m`.
bool divides(const UOp* ast, const UOp* m) {
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::IDIV && u->op != Op::MOD) continue;
    const auto& topo = u->src[0]->toposort();
    if (std::find(topo.begin(), topo.end(), m) != topo.end()) return true;
  }
  return false;
}

// `ast` with loops a and b (a outside b) as one loop of a's id, or nullptr.
const UOp* merged(const UOp* ast, const UOp* a, const UOp* b) {
  int64_t sa = size_of(a), sb = size_of(b);
  if (sa < 1 || sb < 1) return nullptr;
  Context& ctx = *ast->ctx();
  // a's id (a differs from m in size, so substituting a leaves m alone); renumber() closes the
  // gap b leaves.
  const UOp* m = ctx.range(sa * sb, a->range().id, AxisKind::Loop);
  const UOp* nb = ctx.const_index(sb);
  std::unordered_map<const UOp*, const UOp*> map{{a, m->idiv(nb)}, {b, m->mod(nb)}};
  const UOp* r = simplify(substitute(ast, map));
  if (divides(r, m)) return nullptr;
  return r;
}

// Ranges renumbered in id order from 0 (output loops first, as rangeify numbers them).
const UOp* renumber(const UOp* ast) {
  std::vector<const UOp*> ranges;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE) ranges.push_back(u);
  std::sort(ranges.begin(), ranges.end(), [](const UOp* x, const UOp* y) {
    bool lx = x->range().kind == AxisKind::Loop, ly = y->range().kind == AxisKind::Loop;
    if (lx != ly) return lx;
    return x->range().id < y->range().id;
  });
  std::unordered_map<const UOp*, const UOp*> map;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const UOp* r = ranges[i];
    if (r->range().id != static_cast<int64_t>(i))
      map[r] = ast->ctx()->range(r->src[0], static_cast<int64_t>(i), r->range().kind);
  }
  return map.empty() ? ast : substitute(ast, map);
}

}  // namespace

const UOp* merge_loops(const UOp* ast) {
  const UOp* cur = ast;
  bool changed = false;
  for (;;) {
    std::vector<const UOp*> loops = output_loops(cur);
    bool step = false;
    for (size_t i = 0; i + 1 < loops.size() && !step; ++i) {
      if (const UOp* r = merged(cur, loops[i], loops[i + 1])) {
        cur = renumber(r);
        changed = step = true;
      }
    }
    if (!step) break;
  }
  return changed ? cur : ast;
}

}  // namespace kiln
