#include "compiler/codegen/weight_prefetch.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/opt/kernel_queries.h"
#include "compiler/target/target_info.h"

namespace kiln {

namespace {

// A static range's iterations; 0 for a symbolic one (never planned for).
int64_t trips(const UOp* r) {
  return is_symbolic(r) ? 0 : size_of(r);
}

// idx with the parallel range one iteration on, minus idx: the panels' stride in elements, or 0
// when it is not a constant.
int64_t panel_stride(const UOp* idx, const UOp* parallel) {
  std::unordered_map<const UOp*, const UOp*> next{{parallel, parallel->add(1)}};
  const UOp* d = simplify(substitute(idx, next)->sub(idx));
  return d->is_const() ? d->cval().as_int() : 0;
}

}  // namespace

WeightPrefetch plan_weight_prefetch(const UOp* ast, const TargetInfo& t) {
  const UOp* parallel = nullptr;
  std::vector<const UOp*> loops;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::RANGE) continue;
    if (u->range().kind == AxisKind::Parallel) parallel = u;
    if (u->range().kind == AxisKind::Loop && trips(u) >= 2) loops.push_back(u);
  }
  if (!parallel || loops.empty()) return {};
  std::sort(loops.begin(), loops.end(),
            [](const UOp* a, const UOp* b) { return a->range().id < b->range().id; });
  // The weight: vector loads of one buffer, ungated, along the parallel range and a reduce
  // range, not along some loop (which re-reads them), every one at the same panel stride.
  const UOp* buf = nullptr;
  WeightPrefetch p;
  int64_t stride = 0;      // the panels' stride in elements
  int64_t lo = 0, hi = 0;  // the elements one panel's loads touch, relative to its start
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::LOAD || u->dtype.lanes < 2) continue;
    const UOp* index = u->src[0];
    const UOp* b = index->src[0];
    const UOp* idx = index->src[1];
    if (b->op != Op::DEFINE_GLOBAL || idx->op == Op::WHERE || !depends_on(idx, parallel)) continue;
    if (buf && b != buf) continue;
    const UOp* reduce = nullptr;
    for (const UOp* r : idx->ranges())
      if (r->range().kind == AxisKind::Reduce && trips(r) >= 2) reduce = r;  // the innermost
    const UOp* reuse = nullptr;
    for (const UOp* l : loops)
      if (!depends_on(idx, l)) {
        reuse = l;
        break;
      }
    if (!reduce || !reuse) continue;
    int64_t s = panel_stride(idx, parallel);
    if (s <= 0 || (buf && (s != stride || reduce != p.reduce || reuse != p.reuse))) return {};
    stride = s;
    std::unordered_map<const UOp*, const UOp*> first{{parallel, ast->ctx()->const_index(0)}};
    const UOp* rel = simplify(substitute(idx, first));
    int64_t a = rel->vmin(), z = rel->vmax() + u->dtype.lanes;
    lo = buf ? std::min(lo, a) : a;
    hi = buf ? std::max(hi, z) : z;
    buf = b;
    p.arg = static_cast<int>(b->iarg());
    p.parallel = parallel;
    p.reuse = reuse;
    p.reduce = reduce;
    p.stride_bytes = stride * b->dtype.itemsize();
  }
  if (!buf) return {};
  // One panel per parallel iteration, in one piece.
  if (lo < 0 || hi > stride) return {};
  int64_t panel = p.stride_bytes;
  if (panel < kMinPrefetchPanelBytes || 4 * panel > t.l2_bytes()) return {};
  p.reuse_trips = trips(p.reuse);
  p.reduce_trips = trips(p.reduce);
  p.lines = (panel + kCacheLine - 1) / kCacheLine;
  if (p.reuse_trips > kMaxPrefetchReuseTrips) return {};
  // The next panel complete two thirds of the way through the current one's later passes.
  int64_t steps = std::max<int64_t>(1, (2 * (p.reuse_trips - 1) + 2) / 3) * p.reduce_trips;
  p.per_step = (p.lines + steps - 1) / steps;
  if (p.per_step > kMaxPrefetchesPerStep) return {};
  return p;
}

}  // namespace kiln
