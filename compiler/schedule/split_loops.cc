#include "compiler/schedule/split_loops.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"

namespace kiln {

namespace {

constexpr int64_t kMinStaticSplit = 64;

// Divisions and remainders in `ast` whose dividend depends on a range (index arithmetic).
int64_t index_divisions(const UOp* ast) {
  int64_t n = 0;
  for (const UOp* u : ast->toposort())
    if ((u->op == Op::IDIV || u->op == Op::MOD) && u->dtype.is_index() &&
        !u->src[0]->ranges().empty())
      ++n;
  return n;
}

// `ast` with loop r split by c, or nullptr when its size is not a multiple of c or the split
// leaves as many divisions as before.
const UOp* split(const UOp* ast, const UOp* r, int64_t c, int64_t before) {
  Context& ctx = *ast->ctx();
  const UOp* end = r->src[0];
  if (!simplify(end->mod(c))->is_const(0)) return nullptr;
  const UOp* hi_end = simplify(end->idiv(c));
  if (hi_end->is_const(1)) return nullptr;
  int64_t id = r->range().id;
  std::unordered_map<const UOp*, const UOp*> map;
  // Ranges after r move up one id, making room for the inner loop.
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE && u->range().id > id)
      map[u] = ctx.range(u->src[0], u->range().id + 1, u->range().kind);
  const UOp* hi = ctx.range(hi_end, id, AxisKind::Loop);
  const UOp* lo = ctx.range(c, id + 1, AxisKind::Loop);
  map[r] = hi->mul(c)->add(lo);
  const UOp* out = graph_rewrite(substitute(ast, map), pm_symbolic());
  if (index_divisions(out) >= before) return nullptr;
  return out;
}

}  // namespace

const UOp* split_loops(const UOp* ast) {
  const UOp* cur = ast;
  for (bool step = true; step;) {
    step = false;
    int64_t before = index_divisions(cur);
    if (before == 0) break;
    for (const UOp* r : cur->toposort()) {
      if (r->op != Op::RANGE || r->range().kind != AxisKind::Loop) continue;
      bool fixed = r->src[0]->op == Op::CONST;
      // The divisors the kernel applies to r itself, largest first.
      std::vector<int64_t> divisors;
      for (const UOp* u : cur->toposort())
        if ((u->op == Op::IDIV || u->op == Op::MOD) && u->src[0] == r &&
            u->src[1]->op == Op::CONST && u->src[1]->cval().i > 1)
          divisors.push_back(u->src[1]->cval().i);
      std::sort(divisors.rbegin(), divisors.rend());
      for (int64_t c : divisors) {
        // A static loop splits only by a divisor of at least kMinStaticSplit (a batch merged
        // with a Winograd transform's tiles, r / 196): the static kernels keep the shapes their
        // heuristics were measured on where the divisor is a row (r / 14, r % 14 over 196
        // positions vectorizes well enough).
        if (fixed && c < kMinStaticSplit) continue;
        if (const UOp* s = split(cur, r, c, before)) {
          cur = s;
          step = true;
          break;
        }
      }
      if (step) break;
    }
  }
  return cur;
}

}  // namespace kiln
