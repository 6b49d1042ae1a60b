#include "compiler/opt/kernel_queries.h"

#include <algorithm>
#include <numeric>

#include "compiler/ir/rewrite.h"

namespace kiln {

// A range's size; for a symbolic range, its upper bound (the heuristics weigh the worst case;
// default_opts leaves such ranges whole).
int64_t size_of(const UOp* r) {
  return r->src[0]->vmax();
}

bool is_symbolic(const UOp* r) {
  return r->src[0]->op != Op::CONST;
}

// A cost rule, not legality (the applier refuses padding beyond kMaxUpcastPadding): padding an
// axis of n elements to groups of `lanes` pays while at most a quarter of the padded lanes are
// idle (27 -> 28, 7 -> 8, 114 -> 120 do; 5 -> 8 does not).
bool worth_padding(int64_t n, int64_t lanes) {
  int64_t total = (n + lanes - 1) / lanes * lanes;
  return 4 * (total - n) <= total;
}

// The share of n's elements that are not padding when it is covered by groups of `amount`.
double used_share(int64_t n, int64_t amount) {
  return static_cast<double>(n) / static_cast<double>((n + amount - 1) / amount * amount);
}

// The largest divisor of n that is at most `cap`, preferring powers of two.
int64_t pick_divisor(int64_t n, int64_t cap) {
  for (int64_t p = cap; p >= 2; p /= 2)
    if ((p & (p - 1)) == 0 && n % p == 0) return p;
  for (int64_t d = std::min(n, cap); d >= 2; --d)
    if (n % d == 0) return d;
  return 1;
}

// Lanes for a lane axis of n elements, at most cap: pick_divisor's choice, or cap itself with
// the last group padded (masked) when the divisor is small or not a power of two and padding
// wastes at most a quarter of the lanes (114 -> 8 lanes, 15 groups, rather than 2; 55 -> 8
// rather than 5). Padding needs cheap masked vector accesses of 4- or 8-byte elements.
int64_t lane_count(int64_t n, int64_t cap, int item, bool masked, bool masked_bytes) {
  int64_t d = pick_divisor(n, cap);
  bool weak = d < cap / 2 || (d & (d - 1)) != 0;
  bool maskable = item == 4 || item == 8 || (masked_bytes && (item == 1 || item == 2));
  if (!masked || !weak || cap < 4 || !maskable) return d;
  // The widest power of two down to 4 that pads n by at most a quarter: a 7-wide map takes 8
  // lanes (one masked) on a 16-lane target, not 7 (a 7-lane vector is split into pieces).
  for (int64_t p = cap; p >= 4 && p > d; p /= 2)
    if (worth_padding(n, p)) return p;
  return d;
}

// The loads of the contraction's products (the operands of the MUL under a REDUCE(ADD)).
std::vector<const UOp*> product_loads(const UOp* ast) {
  std::vector<const UOp*> loads;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::REDUCE && u->op_arg() == Op::ADD && u->src[0]->op == Op::MUL)
      for (const UOp* m : u->src[0]->src)
        for (const UOp* x : m->toposort())
          if (x->op == Op::LOAD && std::find(loads.begin(), loads.end(), x) == loads.end())
            loads.push_back(x);
  return loads;
}

namespace {

// (r / c) or (r / c) * s with c a multiple of 8: the block index of a packed layout.
bool is_block_index(const UOp* t, const UOp* r) {
  if (t->op == Op::MUL && t->src[1]->op == Op::CONST) t = t->src[0];
  return t->op == Op::IDIV && t->src[0] == r && t->src[1]->op == Op::CONST &&
         t->src[1]->cval().i % 8 == 0;
}

}  // namespace

int64_t stride_of(const UOp* idx, const UOp* r) {
  if (idx->op == Op::WHERE) idx = idx->src[1];  // a gated index: the address when valid
  int64_t coef = 0;
  std::vector<const UOp*> stack{idx};
  while (!stack.empty()) {
    const UOp* t = stack.back();
    stack.pop_back();
    if (t->op == Op::ADD) {
      stack.push_back(t->src[0]);
      stack.push_back(t->src[1]);
    } else if (t == r) {
      coef += 1;
    } else if (t->op == Op::MUL && t->src[0] == r && t->src[1]->op == Op::CONST) {
      coef += t->src[1]->cval().i;
    } else if (t->op == Op::MUL && t->src[1] == r && t->src[0]->op == Op::CONST) {
      coef += t->src[0]->cval().i;
    } else if (t->op == Op::MOD && t->src[0] == r && t->src[1]->op == Op::CONST &&
               t->src[1]->cval().i % 8 == 0) {
      coef += 1;  // a packed panel: contiguous within blocks of (a multiple of) 8
    } else if (t->op == Op::MUL && t->src[1]->op == Op::CONST && t->src[0]->op == Op::MOD &&
               t->src[0]->src[0] == r && t->src[0]->src[1]->op == Op::CONST &&
               t->src[0]->src[1]->cval().i % 8 == 0) {
      coef += t->src[1]->cval().i;  // a panel of groups (the dot-product layout: 4 per lane)
    } else if (is_block_index(t, r)) {
      // (r / c) * s: selects the panel; lanes within one block do not move it
    } else if (t->op == Op::MUL && t->src[1]->op == Op::CONST && t->src[0]->op == Op::ADD) {
      // (r + k) * s: a window's row, y + ky, times the row pitch
      int64_t inner = stride_of(t->src[0], r);
      if (inner < 0) return -1;
      coef += inner * t->src[1]->cval().i;
    } else {
      for (const UOp* x : t->ranges())
        if (x == r) return -1;
    }
  }
  return coef;
}

int64_t load_stride(const UOp* load, const UOp* r) {
  const UOp* index = load->src[0];  // INDEX(buf, idx)
  return stride_of(index->src[1], r);
}

int64_t block_of(const UOp* load, const UOp* r) {
  int64_t block = 0;
  for (const UOp* u : load->src[0]->toposort())
    for (const UOp* s : u->src) {
      if (s != r) continue;
      if (u->op != Op::IDIV || u->src[0] != r || u->src[1]->op != Op::CONST ||
          u->src[1]->cval().i <= 0)
        return -1;
      block = std::gcd(block, u->src[1]->cval().i);
    }
  return block;
}

bool depends_on(const UOp* u, const UOp* range) {
  for (const UOp* r : u->ranges())
    if (r == range) return true;
  return false;
}

// True if every load that varies along `r` stays inside its buffer when r runs to `padded`
// instead of its size: the index's bounds with r replaced by a range of the padded extent.
bool loads_fit_padded(const std::vector<const UOp*>& loads, const UOp* r, int64_t padded) {
  const UOp* wide = r->ctx()->range(padded, r->range().id, r->range().kind);
  for (const UOp* l : loads) {
    if (!depends_on(l, r)) continue;
    const UOp* index = l->src[0];
    int64_t size = index->src[0]->dtype.ptr_size;
    const UOp* idx = index->src[1];
    if (idx->op == Op::WHERE && idx->src[2]->is_invalid()) idx = idx->src[1];
    const UOp* grown = substitute(idx, {{r, wide}});
    if (size < 0 || grown->vmin() < 0 || grown->vmax() >= size) return false;
  }
  return true;
}

const UOp* store_of(const UOp* ast) {
  return ast->src.empty() ? nullptr : ast->src[0];
}

// The loop range that the store's index walks with stride 1 (the last output axis).
const UOp* contiguous_loop(const UOp* ast, const KernelRanges& kr) {
  const UOp* st = store_of(ast);
  if (!st) return nullptr;
  for (const UOp* r : kr.loops)
    if (stride_of(st->src[0]->src[1], r) == 1) return r;
  return nullptr;
}

// The bytes of its buffer a load can touch over the whole kernel (its index's bounds).
int64_t load_extent(const UOp* load) {
  const UOp* index = load->src[0];
  const UOp* idx = index->src[1];
  if (idx->op == Op::WHERE && idx->src[2]->is_invalid()) idx = idx->src[1];
  int64_t item = std::max(1, load->dtype.itemsize());
  return (idx->vmax() - idx->vmin() + 1) * item;
}

// Iterations of loop r left after the opts' upcasts.
int64_t remaining_of(const UOp* r, const std::vector<Opt>& opts) {
  int64_t n = size_of(r);
  for (const Opt& o : opts)
    if (o.range_id == r->range().id && o.kind == OptKind::Upcast)
      n = (n + o.amount - 1) / o.amount;  // padded upcasts round up
  return n;
}

const UOp* outermost_loop(const std::vector<const UOp*>& loops, const std::vector<Opt>& opts) {
  for (const UOp* r : loops)
    if (remaining_of(r, opts) > 1) return r;
  return nullptr;
}

int64_t row_share_bytes(const UOp* r, int64_t n, int64_t stride, int item, int max_tasks) {
  return (n + max_tasks - 1) / max_tasks * ((size_of(r) + n - 1) / n) * stride * item;
}

}  // namespace kiln
