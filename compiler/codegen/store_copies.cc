#include "compiler/codegen/store_copies.h"

#include <algorithm>
#include <cmath>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"

namespace kiln {

namespace {

using Map = std::unordered_map<const UOp*, const UOp*>;

bool negative_zero(const UOp* x) {
  return x->op == Op::CONST && x->cval().kind == ConstValue::Kind::Float && x->cval().f == 0 &&
         std::signbit(x->cval().f);
}

// `u` with the unrolled loops' values of `map`, its gates on them folded: a WHERE whose
// condition folds to a constant is the branch it picks, whose other branch is never visited,
// and a sum with -0.0 (a stack's fill) is its other term. A node that depends on none of the
// loops is kept as it is, unvisited (the taps that all copies share): each copy walks only
// its own expression, not the whole stack (walking it 36 times per transform, the expand
// stage of one 28x28 layer took 0.29 s, now 0.06).
const UOp* fold_copy(const UOp* u, const Map& map, Map& done) {
  if (auto it = done.find(u); it != done.end()) return it->second;
  bool depends = false;
  for (const UOp* r : u->ranges()) depends |= map.count(r) > 0;
  const UOp* out = u;
  if (depends && u->op == Op::WHERE) {
    const UOp* c = simplify(substitute(u->src[0], map));
    if (c->is_const(1) || c->is_const(0))
      out = fold_copy(c->is_const(1) ? u->src[1] : u->src[2], map, done);
    else
      out = u->with_src({c, fold_copy(u->src[1], map, done), fold_copy(u->src[2], map, done)});
  } else if (depends && u->op == Op::RANGE) {
    out = map.at(u);
  } else if (depends) {
    std::vector<const UOp*> src;
    for (const UOp* s : u->src) src.push_back(fold_copy(s, map, done));
    if (u->op == Op::ADD && negative_zero(src[1]))
      out = src[0];
    else if (u->op == Op::ADD && negative_zero(src[0]))
      out = src[1];
    else
      out = u->with_src(std::move(src));
  }
  done.emplace(u, out);
  return out;
}

}  // namespace

int64_t unroll_assignments(const std::vector<const UOp*>& rs) {
  int64_t count = 1;
  for (const UOp* r : rs) count *= r->src[0]->cval().i;
  return count;
}

Map unroll_assignment(const std::vector<const UOp*>& rs, int64_t c) {
  Map map;
  for (size_t i = rs.size(); i-- > 0;) {
    int64_t n = rs[i]->src[0]->cval().i;
    map[rs[i]] = rs[i]->ctx()->const_index(c % n);
    c /= n;
  }
  return map;
}

std::vector<const UOp*> store_copies(const UOp* st) {
  std::vector<const UOp*> unrolled;
  for (const UOp* r : st->src[0]->ranges())
    if (r->range().kind == AxisKind::Unroll) unrolled.push_back(r);
  if (unrolled.empty()) return {st};
  std::sort(unrolled.begin(), unrolled.end(),
            [](const UOp* a, const UOp* b) { return a->range().id < b->range().id; });
  std::vector<const UOp*> out;
  for (int64_t c = 0; c < unroll_assignments(unrolled); ++c) {
    Map map = unroll_assignment(unrolled, c);
    Map done;
    const UOp* value = simplify(fold_copy(st->src[1], map, done));
    out.push_back(
        st->ctx()->make(Op::STORE, dtypes::void_, {simplify(substitute(st->src[0], map)), value}));
  }
  return out;
}

}  // namespace kiln
