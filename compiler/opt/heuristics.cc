#include "compiler/opt/heuristics.h"

#include <algorithm>

#include "compiler/opt/contraction_tile.h"
#include "compiler/opt/kernel_queries.h"

#include "compiler/ir/dot_product.h"
#include "compiler/ir/rewrite.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"

namespace kiln {

bool is_contraction_kernel(const UOp* ast) {
  for (const UOp* u : ast->toposort())
    if (u->op == Op::REDUCE && u->op_arg() == Op::ADD && u->src[0]->op == Op::MUL) return true;
  return false;
}

bool is_dot_contraction(const UOp* ast) {
  for (const UOp* u : ast->toposort())
    if (u->op == Op::REDUCE && u->op_arg() == Op::ADD && u->dtype == dtypes::int32 &&
        byte_product_factors(u->src[0]).first)
      return true;
  return false;
}

OptTarget opt_target(const TargetInfo& t, OptLevel level) {
  OptTarget ot;
  ot.vector_bytes = t.vector_bytes();
  ot.vector_registers = t.vector_registers();
  ot.masked_vectors = t.masked_vectors();
  ot.masked_bytes = t.is_x86() && t.has_feature("avx512bw") && t.has_feature("avx512vl");
  ot.register_tiles = level == OptLevel::Tiles;
  ot.l2_bytes = t.l2_bytes();
  // Fewer flops than two 16-lane FMAs (2 x 2 x 16) per cycle: 512-bit vectors on 256-bit units.
  ot.half_rate_fma = t.vector_bytes() == 64 && t.fma_flops_per_cycle() < 2 * 2 * 16;
  ot.mesh_shared_l3 = t.mesh_shared_l3();
  return ot;
}

namespace {

// An output loop, other than `store_axis`, along which every load that varies walks one
// element, when every load that varies along the store's contiguous axis gathers (a max pool
// reading a channels-last map into an NCHW output: the channels are contiguous in the input,
// W is contiguous in the output, and the pool's stride-2 window reads every other position);
// nullptr otherwise. Its lanes then load whole vectors and each row along store_axis is one
// store (the expander's row stores).
const UOp* load_contiguous_loop(const UOp* ast, const KernelRanges& kr, const UOp* store_axis) {
  std::vector<const UOp*> loads;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::LOAD && u->dtype.itemsize() == 4) loads.push_back(u);
  bool gathers = false;
  for (const UOp* l : loads) {
    int64_t s = load_stride(l, store_axis);
    if (s == 1) return nullptr;
    gathers |= s != 0;
  }
  if (!gathers) return nullptr;
  for (const UOp* r : kr.loops) {
    if (r == store_axis || is_symbolic(r)) continue;
    bool contiguous = false, other = false;
    for (const UOp* l : loads) {
      int64_t s = load_stride(l, r);
      contiguous |= s == 1;
      other |= s != 0 && s != 1;
    }
    if (contiguous && !other) return r;
  }
  return nullptr;
}

// The lanes of a kernel whose loads gather along the store's contiguous axis `store_axis` but
// are contiguous along another loop (load_contiguous_loop): that loop, a vector wide, and rows
// of 8 along store_axis (one 32-byte store each). False (no opts) when there is no such loop or
// either axis is too short.
bool gathered_rows(const UOp* ast, const KernelRanges& kr, const UOp* store_axis, int64_t width,
                   int item, bool bool_store, const OptTarget& t, std::vector<Opt>& opts) {
  if (!t.register_tiles || item != 4 || bool_store || is_symbolic(store_axis)) return false;
  const UOp* lanes_axis = load_contiguous_loop(ast, kr, store_axis);
  if (!lanes_axis) return false;
  int64_t rows = lane_count(size_of(store_axis), 8, item, t.masked_vectors);
  int64_t up = lane_count(size_of(lanes_axis), width, item, t.masked_vectors);
  if (rows < 4 || up < 4) return false;
  opts.push_back({OptKind::Upcast, store_axis->range().id, rows});
  opts.push_back({OptKind::Upcast, lanes_axis->range().id, up});  // the last upcast: the lanes
  return true;
}

// The loop a contraction should run outermost. Every iteration of the outermost loop re-reads
// the product operands that do not depend on it; when those exceed L2 they come from L3 or
// memory each time, which a 2-FMA-port core cannot feed (a GEMM's B streamed once per 8 rows of
// A ran at 51% of the FMA peak on a Xeon; a 1x1 layer re-reading its 3 MB input once per 8
// output channels at 25%). Another loop goes outermost instead, one that re-reads fewer bytes
// in all (iterations times re-read bytes) and has iterations enough for the tasks: the weights
// (in L2) are re-read per tile of positions, the input streams once. Also when the operands fit
// but the outermost loop gives too few tasks (below). nullptr: keep the order.
const UOp* streaming_order(const UOp* ast, const KernelRanges& kr, const std::vector<Opt>& opts,
                           const OptTarget& t) {
  std::vector<const UOp*> loads = product_loads(ast);
  const UOp* st = store_of(ast);
  auto reread = [&](const UOp* r) {
    int64_t bytes = 0;
    for (const UOp* l : loads)
      if (!depends_on(l, r)) bytes += load_extent(l);
    return bytes;
  };
  const UOp* outer = outermost_loop(kr.loops, opts);
  if (!outer) return nullptr;
  if (reread(outer) <= t.l2_bytes) {
    // The operands fit, but the outermost loop leaves few tasks (16 output channels in tiles of
    // 8: 2): a loop with tasks enough goes outermost when what it re-reads stays in cache (a
    // small layer's weights): squeezenet's 64 -> 16 squeeze layer at 55x55 ran 0.125 ms on 2
    // threads with 2 tasks, 0.071 with 16. Also where the lanes are output channels, stored
    // along the rows in chunks (a Winograd output transform or a stem: 64 channels in 2 tiles of
    // 32, 2 tasks): each thread then writes whole rows of its share, where 2 channel tiles made
    // the threads read every transformed row from each other's cache (squeezenet's 55x55
    // transforms 0.244 -> 0.158 and 0.189 -> 0.096 ms at 2 threads, the model 3.95 -> 3.68 ms;
    // resnet18 10.3 -> 10.05; the same at 1 thread).
    if (remaining_of(outer, opts) >= t.max_tasks / 2 || !st) return nullptr;
    bool upcast = std::any_of(opts.begin(), opts.end(),
                              [](const Opt& o) { return o.kind == OptKind::Upcast; });
    if (!upcast) return nullptr;
    const UOp* most = nullptr;
    for (const UOp* r : kr.loops) {
      int64_t n = remaining_of(r, opts), stride = stride_of(st->src[0]->src[1], r);
      // Each task's share of a row (a map's positions) spans several cache lines, so that
      // neighbouring tasks do not write the same line of every output plane.
      int64_t run =
          row_share_bytes(r, n, stride, std::max(1, st->src[1]->dtype.itemsize()), t.max_tasks);
      if (r != outer && !is_symbolic(r) && n >= t.max_tasks / 2 && stride > 0 && run >= 256 &&
          4 * reread(r) <= t.l2_bytes && (!most || n > remaining_of(most, opts)))
        most = r;
    }
    return most;
  }
  auto cost = [&](const UOp* r) {
    return static_cast<double>(remaining_of(r, opts)) * static_cast<double>(reread(r));
  };
  // Among the loops that re-read at most half the bytes, one with iterations for every task
  // first (a U-Net layer's 128-wide W in 4 tiles re-read least but made 4 tasks, which 2
  // threads ran 1.16x faster than one; its 96 rows make 16), then the least re-read. A loop of
  // a quarter of the tasks still qualifies: resnet50's channels-last stride-2 3x3 layer at
  // 14x14 (2.4 MB of weights, beyond a Xeon's 2 MB L2) re-read its weights per 2 rows in 7
  // tasks, 3.59 ms at 1 thread; split along its 4 tiles of 64 output channels, 1.55 ms.
  const UOp* best = outer;
  int64_t enough = std::min<int64_t>(remaining_of(outer, opts), t.max_tasks / 4);
  auto tasks_of = [&](const UOp* r) {
    return std::min<int64_t>(remaining_of(r, opts), t.max_tasks);
  };
  for (const UOp* r : kr.loops) {
    // (A loop whose re-read stays in cache, a few weights, needs only to re-read less.)
    bool cheaper =
        cost(r) * 2 < cost(outer) || (4 * reread(r) <= t.l2_bytes && cost(r) < cost(outer));
    if (r == outer || is_symbolic(r) || remaining_of(r, opts) < enough || !cheaper) continue;
    if (best == outer || tasks_of(r) > tasks_of(best) ||
        (tasks_of(r) == tasks_of(best) && cost(r) < cost(best)))
      best = r;
  }
  return best == outer ? nullptr : best;
}

// An output loop the stored value reads only through comparisons with constants: each of its
// iterations stores a different expression, chosen by gates on it (the Winograd input
// transform's points, each a sum of its own taps, stacked along one axis). Unrolled whole, the
// gates fold in each copy of the store and each copy computes its own expression, the copies
// sharing their loads; as a loop or as vector lanes, every iteration evaluated every
// expression under its gates (the transform ran 30-100x slower). nullptr if there is none.
const UOp* selector_loop(const UOp* ast, const KernelRanges& kr) {
  const UOp* st = store_of(ast);
  if (!st || st->op != Op::STORE || !kr.reduces.empty()) return nullptr;
  std::vector<const UOp*> value = st->src[1]->toposort();
  for (const UOp* r : kr.loops) {
    if (is_symbolic(r) || size_of(r) < 2 || size_of(r) > kMaxUnrolledOutputs) continue;
    bool compared = false, other = false;
    for (const UOp* u : value)
      for (const UOp* s : u->src) {
        if (s != r) continue;
        bool cmp = (u->op == Op::CMPLT || u->op == Op::CMPNE || u->op == Op::CMPEQ) &&
                   (u->src[0]->op == Op::CONST || u->src[1]->op == Op::CONST);
        compared |= cmp;
        other |= !cmp;
      }
    if (compared && !other) return r;
  }
  return nullptr;
}

// Arithmetic operations in a kernel's stored value (each copy of a selector loop computes only
// its share of them).
int64_t value_ops(const UOp* ast) {
  int64_t n = 0;
  for (const UOp* u : store_of(ast)->src[1]->toposort())
    if (ops::alu().has(u->op) && !u->dtype.is_bool() && u->dtype.base() != dtypes::index) ++n;
  return n;
}

}  // namespace

std::vector<Opt> default_opts(const UOp* ast, const OptTarget& t, const UOp* split_along) {
  std::vector<Opt> opts;
  KernelRanges kr = kernel_ranges(ast);
  // Symbolic ranges (run-time sizes) are not unrolled, tiled or made the lane axis; an output
  // loop may be a broadcast axis of a contraction's tile, by a divisor of its bound (the
  // applier's rule), and split into tasks.
  std::vector<const UOp*> all_loops = kr.loops;
  std::erase_if(kr.reduces, is_symbolic);
  if (kr.loops.empty()) {
    // A reduction to one value (a DynamicQuantizeLinear's min and max over a whole tensor): its
    // innermost range unrolled a vector wide, the copies spread over a vector of accumulators
    // by the expander, so it runs at vector speed instead of one element per step (0.07 ms for
    // 131072 floats).
    if (!kr.reduces.empty()) {
      const UOp* inner = kr.reduces.back();
      int64_t un = pick_divisor(size_of(inner), std::max(1, t.vector_bytes / 4));
      if (un >= 4) opts.push_back({OptKind::Unroll, inner->range().id, un});
    }
    return opts;
  }
  const UOp* st = store_of(ast);
  int item = std::max(1, st ? st->src[1]->dtype.itemsize() : 4);
  // A contraction's lanes are its accumulators, whatever it stores (an int8 dot-product kernel's
  // int32s; a quantized depthwise layer's float32s, stored as uint8: with the store's width it
  // took 4 lanes of 64 and ran 6x slower than the float layer).
  bool contraction = is_contraction_kernel(ast);
  if (contraction)
    for (const UOp* u : ast->toposort())
      if (u->op == Op::REDUCE) item = std::max(item, u->dtype.itemsize());
  int64_t width = std::max<int64_t>(1, t.vector_bytes / item);

  int64_t work = 1;
  for (const UOp* r : all_loops) work *= size_of(r);
  for (const UOp* r : kr.reduces) work *= size_of(r);

  const UOp* first = nullptr;  // the loop run outermost, when not the first
  // A selector loop is unrolled into one store per iteration, before the lanes are chosen
  // among the other loops. Its copies' work is their arithmetic, not their stored values: a
  // Winograd transform point sums 7 taps on average, so squeezenet1_1's 27x27 transforms (64512
  // values, below the task threshold) run in tasks too.
  if (const UOp* sel = selector_loop(ast, kr)) {
    opts.push_back({OptKind::Unroll, sel->range().id, size_of(sel)});
    std::erase(kr.loops, sel);
    std::erase(all_loops, sel);
    work = work / size_of(sel) * std::max(size_of(sel), value_ops(ast));
  }
  if (contraction && t.register_tiles) {
    contraction_tile(ast, kr, width, item, t, opts);
    if (t.stream_order && (first = streaming_order(ast, kr, opts, t)))
      opts.push_back({OptKind::Tile, first->range().id, 1});
  } else if (const UOp* inner = contiguous_loop(ast, kr)) {
    bool bool_store = st && st->src[1]->dtype.is_bool();
    if (!gathered_rows(ast, kr, inner, width, item, bool_store, t, opts)) {
      int64_t up = is_symbolic(inner) ? pick_divisor(size_of(inner), width)
                                      : lane_count(size_of(inner), width, bool_store ? 1 : item,
                                                   t.masked_vectors, t.masked_bytes && !bool_store);
      if (up > 1) opts.push_back({OptKind::Upcast, inner->range().id, up});
      // A short contiguous axis taken whole (a channel-blocked layout's 4 channels: 4-byte stores)
      // leaves most of a vector idle: the loop the store continues contiguously along is upcast
      // too (16 positions x 4 channels, one 64-byte store).
      if (up == size_of(inner) && up > 1 && up < width && t.masked_bytes && item == 1 &&
          !bool_store)
        for (const UOp* r : kr.loops)
          if (r != inner && !is_symbolic(r) && stride_of(st->src[0]->src[1], r) == up) {
            int64_t more = lane_count(size_of(r), width / up, item, t.masked_vectors, true);
            if (more > 1) opts.push_back({OptKind::Upcast, r->range().id, more});
            break;
          }
    }
  }
  // Tasks along the loop the kernel's producer split (split_affinity.h), so that each thread
  // reads and overwrites the lines its own core wrote: when it gives tasks enough and each
  // task's share of the rows it stores spans whole cache lines (else neighbouring tasks would
  // write the same line of every plane). Also below the work threshold: a padded map's border
  // (21504 stores) written by one thread took 37 us where the other core had written the rows,
  // 12 us split like them (7168 stores: 12 -> 7 us).
  if (split_along && !first && work >= (int64_t{1} << 12) && st) {
    int64_t n = remaining_of(split_along, opts),
            stride = stride_of(st->src[0]->src[1], split_along);
    if (n >= t.max_tasks / 2 && stride > 0 &&
        row_share_bytes(split_along, n, stride, item, t.max_tasks) >= 256) {
      // The loop goes outermost (TILE by 1: tasks of whole rows), but for a pooling window (a
      // reduction that is not a contraction) under loops with iterations left (a max pool's
      // channels) the tasks take bands of rows, max_tasks / 2 bands or more, inside which the
      // channels stay outside the rows: in one-row tasks a thread strode across every plane for
      // each row, and resnet50's 3x3 max pool ran 0.16 -> 0.25 ms at 1 thread (bands of 7 rows:
      // 0.14; at 2 threads 0.094 -> 0.107, 0.070). Depthwise layers and Winograd passes ran
      // slower in bands (mobilenet_v2's stride-2 layer 0.16 -> 0.24 ms in bands of 2 rows).
      bool crossed = false;
      for (const UOp* r : all_loops) {
        if (r == split_along) break;
        crossed |= remaining_of(r, opts) > 1;
      }
      int64_t band = crossed && !contraction && !kr.reduces.empty()
                         ? std::max<int64_t>(1, n / std::max(1, t.max_tasks / 2))
                         : 1;
      while (n % band != 0) --band;
      if (crossed) opts.push_back({OptKind::Tile, split_along->range().id, band});
      opts.push_back(
          {OptKind::Parallel, split_along->range().id, std::min<int64_t>(n / band, t.max_tasks)});
      return opts;
    }
  }
  // Tasks: split the outermost loop, or what remains of it after upcasting; when upcasting
  // consumed it whole, the next loop is the outermost one.
  if (work >= (int64_t{1} << 16)) {
    std::vector<const UOp*> order = all_loops;
    if (first) order.insert(order.begin(), first);
    for (const UOp* outer : order) {
      int64_t remaining = remaining_of(outer, opts);
      if (remaining == 1) continue;
      // A short symbolic outermost loop (a batch of 1..8: fewer iterations than tasks even at
      // its bound) leaves threads idle at small sizes: the static loop with the most iterations
      // goes outermost (TILE by 1) and is split instead, when it has tasks enough. A long one
      // (a sequence of 1..512 rows in tiles of 8) keeps its order: its tiles are the tasks.
      if (!first && is_symbolic(outer) && remaining <= t.max_tasks) {
        const UOp* best = nullptr;
        for (const UOp* r : all_loops)
          if (!is_symbolic(r) && remaining_of(r, opts) >= t.max_tasks / 2 &&
              (!best || remaining_of(r, opts) > remaining_of(best, opts)))
            best = r;
        if (best) {
          opts.push_back({OptKind::Tile, best->range().id, 1});
          outer = best;
          remaining = remaining_of(best, opts);
        }
      }
      opts.push_back(
          {OptKind::Parallel, outer->range().id, std::min<int64_t>(remaining, t.max_tasks)});
      break;
    }
  }
  return opts;
}

}  // namespace kiln
