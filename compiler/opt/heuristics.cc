#include "compiler/opt/heuristics.h"

#include <algorithm>

namespace kiln {

namespace {

int64_t size_of(const UOp* r) {
  return r->src[0]->cval().i;
}

// The largest divisor of n that is at most `cap`, preferring powers of two.
int64_t pick_divisor(int64_t n, int64_t cap) {
  for (int64_t p = cap; p >= 2; p /= 2)
    if ((p & (p - 1)) == 0 && n % p == 0) return p;
  for (int64_t d = std::min(n, cap); d >= 2; --d)
    if (n % d == 0) return d;
  return 1;
}

const UOp* store_of(const UOp* ast) {
  return ast->src.empty() ? nullptr : ast->src[0];
}

bool is_contraction(const UOp* ast) {
  for (const UOp* u : ast->toposort())
    if (u->op == Op::REDUCE && u->op_arg() == Op::ADD && u->src[0]->op == Op::MUL) return true;
  return false;
}

// The loop range that the store's index walks with stride 1 (the last output axis).
const UOp* contiguous_loop(const UOp* ast, const KernelRanges& kr) {
  const UOp* st = store_of(ast);
  if (!st || kr.loops.empty()) return nullptr;
  const UOp* idx = st->src[0]->src[1];
  // The store index is sum(r_i * stride_i): the range with coefficient 1 appears bare.
  for (const UOp* r : kr.loops) {
    if (idx == r) return r;
    if (idx->op == Op::ADD) {
      std::vector<const UOp*> stack{idx};
      while (!stack.empty()) {
        const UOp* t = stack.back();
        stack.pop_back();
        if (t->op == Op::ADD) {
          stack.push_back(t->src[0]);
          stack.push_back(t->src[1]);
        } else if (t == r) {
          return r;
        }
      }
    }
  }
  return nullptr;
}

}  // namespace

std::vector<Opt> default_opts(const UOp* ast, const OptTarget& t) {
  std::vector<Opt> opts;
  KernelRanges kr = kernel_ranges(ast);
  if (kr.loops.empty()) return opts;
  const UOp* st = store_of(ast);
  int item = std::max(1, st ? st->src[1]->dtype.itemsize() : 4);
  int64_t width = std::max<int64_t>(1, t.vector_bytes / item);
  bool contraction = is_contraction(ast);

  int64_t work = 1;
  for (const UOp* r : kr.loops) work *= size_of(r);
  for (const UOp* r : kr.reduces) work *= size_of(r);

  const UOp* inner = contiguous_loop(ast, kr);
  int64_t inner_up = 1;
  if (inner) {
    inner_up = pick_divisor(size_of(inner), contraction ? 2 * width : width);
    if (inner_up > 1) opts.push_back({OptKind::Upcast, inner->range().id, inner_up});
  }
  if (contraction) {
    // A second output axis for the register tile: the innermost other loop.
    for (auto it = kr.loops.rbegin(); it != kr.loops.rend(); ++it) {
      if (*it == inner) continue;
      int64_t up = pick_divisor(size_of(*it), 4);
      if (up > 1) opts.push_back({OptKind::Upcast, (*it)->range().id, up});
      break;
    }
    for (const UOp* r : kr.reduces) {
      int64_t un = pick_divisor(size_of(r), 4);
      if (un > 1) opts.push_back({OptKind::Unroll, r->range().id, un});
      break;
    }
  }
  // Tasks: split the outermost loop (or what remains of it after upcasting).
  if (work >= (int64_t{1} << 16)) {
    const UOp* outer = kr.loops.front();
    int64_t remaining = size_of(outer);
    for (const Opt& o : opts)
      if (o.range_id == outer->range().id && o.kind == OptKind::Upcast) remaining /= o.amount;
    if (remaining >= 2)
      opts.push_back(
          {OptKind::Parallel, outer->range().id, std::min<int64_t>(remaining, t.max_tasks)});
  }
  return opts;
}

}  // namespace kiln
