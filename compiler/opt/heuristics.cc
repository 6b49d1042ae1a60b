#include "compiler/opt/heuristics.h"

#include <algorithm>

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
  return ot;
}

namespace {

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
int64_t lane_count(int64_t n, int64_t cap, int item, bool masked, bool masked_bytes = false) {
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

namespace {

int64_t load_stride(const UOp* load, const UOp* r) {
  const UOp* index = load->src[0];  // INDEX(buf, idx)
  return stride_of(index->src[1], r);
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

// A contraction's register tile. The vector axis V is an output loop along which one product
// operand is contiguous and every other operand is contiguous too or does not vary (no per-lane
// gathers): a GEMM's N, a convolution's output channels (its weights are packed with the output
// channel innermost), a depthwise convolution's W. Operands that do not vary along V are
// broadcast; the tile's other axes are loops along which the vector operand does not vary, so
// each vector load feeds several accumulators. Sizes are powers of two so the tile is a whole
// number of vector registers, half the register file (8 on AVX2, 16 on NEON and AVX-512). The
// last upcast is the lane axis.
void contraction_tile(const UOp* ast, const KernelRanges& kr, int64_t width, int item,
                      const OptTarget& t, std::vector<Opt>& opts) {
  int64_t accumulators = t.accumulators > 0 ? t.accumulators : std::max(4, t.vector_registers / 2);
  std::vector<const UOp*> loads = product_loads(ast);
  // In an integer dot-product contraction each 32-bit lane holds four consecutive bytes of the
  // reduction: an operand is contiguous along an axis it walks 4 bytes per element.
  int64_t unit = is_dot_contraction(ast) ? 4 : 1;
  std::vector<std::pair<int, const UOp*>> ranked;  // (score, loop), best first
  for (auto it = kr.loops.rbegin(); it != kr.loops.rend(); ++it) {
    const UOp* r = *it;
    if (size_of(r) % width != 0 && size_of(r) < width) continue;
    // A symbolic axis is a lane axis only when its smallest run-time size fills a vector (a
    // batch of 1..8 as lanes would compute 8 lanes for 1).
    if (is_symbolic(r) && (r->src[0]->vmin() < width || size_of(r) % width != 0)) continue;
    bool contiguous = false, gathers = false;
    for (const UOp* l : loads) {
      int64_t st = load_stride(l, r);
      if (st == unit)
        contiguous = true;
      else if (st != 0)
        gathers = true;
    }
    if (!contiguous || gathers) continue;
    ranked.push_back({1 + (size_of(r) % width == 0 ? 2 : 0), r});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  // The tile's broadcast axes for `lanes` on lane axis `vec`, within the accumulator budget.
  // `pad`: take the largest padded upcast worth its padding even when an exact one is more than
  // a quarter of it (the caller weighs the padding).
  auto tile_for = [&](const UOp* vec, int64_t lanes, bool pad = false) {
    int64_t budget = accumulators * width / std::max<int64_t>(1, lanes);
    std::vector<Opt> tile;
    for (auto it = kr.loops.rbegin(); it != kr.loops.rend() && budget >= 2; ++it) {
      const UOp* r = *it;
      if (r == vec) continue;
      bool reuses = true;
      for (const UOp* l : loads)
        if (load_stride(l, vec) != 0 && depends_on(l, r)) reuses = false;
      if (!reuses) continue;
      // The largest power of two within the budget that divides the range; or, when that is a
      // quarter of what padding allows, one that pads it by at most a quarter (the padded lanes
      // are masked: their loads read element 0 and their stores are skipped). A 27-wide map
      // takes 4 (7 groups, 1 of 28 lanes idle) rather than nothing, 7- and 13-wide maps 8; a
      // 14-wide map keeps 2.
      // A symbolic axis takes a divisor of its bound (and no padding choice): at a smaller
      // run-time size the last group computes rows nobody reads, at most amount - 1 of them,
      // which costs little beside the operand the rows share (a GEMM's weights).
      int64_t exact = 1, padded = 1, n = size_of(r);
      for (int64_t p = budget; p >= 2 && exact == 1; p /= 2)
        if (n % p == 0) exact = p;
      for (int64_t p = budget; p >= 2 && padded == 1 && !is_symbolic(r); p /= 2)
        if (worth_padding(n, p)) padded = p;
      int64_t up = padded >= 4 * exact || (pad && padded > exact) ? padded : exact;
      if (up > 1) {
        tile.push_back({OptKind::Upcast, r->range().id, up});
        budget /= up;
      }
    }
    return tile;
  };
  auto accumulators_of = [&](int64_t lanes, const std::vector<Opt>& tile) {
    int64_t a = std::max<int64_t>(1, lanes / width);
    for (const Opt& o : tile) a *= o.amount;
    return a;
  };
  // Whether the store scatters lane axis vec's lanes (its index is not contiguous along it).
  const UOp* store = store_of(ast);
  auto scatters = [&](const UOp* vec) {
    return store && stride_of(store->src[0]->src[1], vec) != 1;
  };
  // Multiply-adds per output: the reduction's length (summed over a fused block's reductions).
  double fmas_per_output = 0;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::REDUCE) {
      double n = 1;
      for (size_t i = 1; i < u->src.size(); ++i) n *= static_cast<double>(size_of(u->src[i]));
      fmas_per_output += n;
    }
  // Loads per accumulator update in the inner loop: the vector operand's loads (one per vector
  // on the lane axis) plus one broadcast per tile position.
  // A lane axis narrower than the vector (8 channels of a panel on a 16-lane target) fills each
  // accumulator half, so its FMAs count for what they compute: a classifier's 8 channels x 32
  // positions otherwise beat 16 positions x 8 channels and ran 13% slower.
  auto loads_per_fma_of = [&](int64_t lanes, const std::vector<Opt>& tile) {
    int64_t positions = 1;
    for (const Opt& o : tile) positions *= o.amount;
    double filled = static_cast<double>(std::min(lanes, width)) / static_cast<double>(width);
    return static_cast<double>(std::max<int64_t>(1, lanes / width) + positions) /
           (static_cast<double>(accumulators_of(lanes, tile)) * filled);
  };
  struct TilePlan {
    const UOp* vec;
    int64_t lanes;
    std::vector<Opt> tile;
  };
  auto plan_for = [&](const UOp* vec) {
    int64_t lanes = pick_divisor(size_of(vec), std::max(1, t.lane_vectors) * width);
    // A symbolic lane axis: lanes that divide its bound, no padding choices (the lanes past
    // the run-time size read and write the buffers' padding, inside the bound).
    if (is_symbolic(vec)) return TilePlan{vec, lanes, tile_for(vec, lanes)};
    // A lane axis that only takes a small divisor (a depthwise convolution's 14-wide W: 2) is
    // padded to one vector instead when masked accesses are cheap.
    if (lanes < width) lanes = lane_count(size_of(vec), width, item, t.masked_vectors);
    // An odd axis's largest divisor (3025 = 55x55 positions: 25) is a vector and a remnant:
    // whole vectors instead, the last group masked.
    else if ((lanes & (lanes - 1)) != 0)
      lanes = lane_count(size_of(vec), std::max(1, t.lane_vectors) * width, item, t.masked_vectors);
    // Half a vector (1000 channels take 8 of 16 lanes) fills each accumulator half: one whole
    // vector instead, its last group masked, when the loads along the axis stay in bounds.
    int64_t whole = (size_of(vec) + width - 1) / width * width;
    if (lanes < width && lanes >= width / 2 && t.masked_vectors && size_of(vec) > width &&
        worth_padding(size_of(vec), width) && loads_fit_padded(loads, vec, whole))
      lanes = width;
    // Two vectors on a lane axis of an odd number of vectors (1000 classes: 62.5 of 16 lanes),
    // the last group's extra lanes masked, when every load along it stays inside its buffer (a
    // weight packed with zero channels up to a vector pair): 16 channels x 4 positions load
    // less per FMA than 8 x 8; on AVX-512, 32 channels x 8 positions (2 + 8 loads per 16 FMAs)
    // rather than 16 positions x 8 channels (1 + 8 per 8): squeezenet's classifier ran at 88
    // GFLOP/s with the latter.
    int64_t want = std::max(1, t.lane_vectors) * width;
    int64_t padded_vec = (size_of(vec) + want - 1) / want * want;
    if (t.masked_vectors && lanes == width && want > width && size_of(vec) > want &&
        worth_padding(size_of(vec), want) && loads_fit_padded(loads, vec, padded_vec))
      lanes = want;
    std::vector<Opt> tile = tile_for(vec, lanes);
    // No axis reuses the vector operand (a depthwise convolution: its input varies along every
    // output axis): a few rows anyway, as independent accumulators, so the window's FMAs are not
    // one dependent chain per vector; a stride-1 window's rows overlap, so they share loads too
    // (a 14x14 depthwise layer ran 1.6x faster with 2 rows; 4 were slower at 28x28).
    bool rows_anyway = false;
    if (tile.empty() && lanes >= width / 2)
      for (auto it = kr.loops.rbegin(); it != kr.loops.rend(); ++it) {
        const UOp* r = *it;
        if (r == vec) continue;
        int64_t up = size_of(r) % 2 == 0 ? 2 : 1;
        if (up > 1) tile.push_back({OptKind::Upcast, r->range().id, up});
        // Whether the rows' windows overlap: a load steps along r by a multiple (at most the
        // window's extent) of its step along a reduce range (a 3x3 window's input row y + ky).
        for (const UOp* l : loads)
          for (const UOp* red : kr.reduces) {
            int64_t a = load_stride(l, r), w = load_stride(l, red);
            if (up > 1 && a > 0 && w > 0 && a % w == 0 && a / w < size_of(red)) rows_anyway = true;
          }
        break;
      }
    // One vector on the lane axis when that lets the broadcast axes fill the budget (7x7 maps:
    // 8 padded positions x 8 channels reuse each weight vector 8 times).
    if (lanes > width && size_of(vec) % width == 0) {
      std::vector<Opt> narrow = tile_for(vec, width);
      if (accumulators_of(width, narrow) > accumulators_of(lanes, tile)) {
        lanes = width;
        tile = std::move(narrow);
      }
    }
    // More vectors on the lane axis instead (up to 8, dividing it: 1000 classes take 5 of 8)
    // when that gives more accumulators than the broadcast axes can (1x1 outputs, 13x13 maps).
    // A tile that already covers its broadcast axes whole (a GEMV-like step: batch 2 of a
    // recurrent layer) is kept when the vectors still fit beside it: both rows then share every
    // weight vector load, where dropping the tile streamed the weight once per row.
    // Not when the store scatters the lanes (a Winograd output transform: channels contiguous
    // in its input, planes apart in its output): each vector is 16 lines written at once, and
    // 8 of them ran 0.072 ms where 2 ran 0.050 (squeezenet's 128-channel transform).
    // Nor when the rows above share their windows' loads: a 112-wide depthwise layer took 7
    // vectors of one row (a load per FMA) and ran 0.218 ms, with 2 rows of one vector 0.115 (a
    // resize's rows share nothing: its 8 vectors stay).
    if (lanes % width == 0 && !scatters(vec) && !rows_anyway)
      for (int64_t v = std::min<int64_t>(8, accumulators); v > lanes / width; --v)
        if (size_of(vec) % (v * width) == 0) {
          int64_t positions = accumulators_of(width, tile);
          bool whole = !tile.empty();
          for (const Opt& o : tile)
            for (const UOp* r : kr.loops)
              if (r->range().id == o.range_id && size_of(r) != o.amount) whole = false;
          if (whole && v * positions <= accumulators &&
              v * positions > accumulators_of(lanes, tile)) {
            lanes = v * width;
          } else if (v > accumulators_of(lanes, tile)) {
            lanes = v * width;
            tile.clear();
          }
          break;
        }
    // A broadcast axis padded to its upcast by more than a tenth (49 positions in groups of 8:
    // 56) computes the padded rows for nothing; half the positions beside twice the lane vectors
    // keep the accumulators, pad less (49 in groups of 4: 52) and load fewer operands per FMA (4 +
    // 4 per 16 rather than 2 + 8): taken when that costs less per useful FMA (mobilenet_v2's 7x7
    // 1x1 layers ran at 69 GFLOP/s with 8 x 32, at 91 with 4 x 64, the tuner's choice).
    if (tile.size() == 1 && lanes % width == 0 && lanes * 2 <= 8 * width &&
        size_of(vec) % (lanes * 2) == 0 && tile[0].amount >= 4) {
      int64_t n = 0;
      for (const UOp* r : kr.loops)
        if (r->range().id == tile[0].range_id) n = size_of(r);
      auto cost = [&](int64_t vectors, int64_t up) {
        double used = used_share(n, up);
        return static_cast<double>(vectors + up) / static_cast<double>(vectors * up) / used;
      };
      int64_t v = lanes / width, up = tile[0].amount;
      int64_t padded_n = (n + up - 1) / up * up;
      // Not when the lane axis is the outermost loop and its wider vectors would leave the tasks
      // few (320 channels in 64s: 5 tasks, which 2 threads split 3:2).
      bool few_tasks = vec == kr.loops.front() && size_of(vec) / (2 * lanes) < t.max_tasks / 2;
      // Only where half the positions do pad less: a 7-wide row takes 8 either way, and 4
      // positions x 64 channels then loaded twice the weight vectors per FMA for nothing
      // (resnet50's 7x7 3x3 layers: 2.04 ms with 4 x 64, 1.78 with 8 x 32).
      bool pads_less = used_share(n, up / 2) > used_share(n, up);
      if (10 * (padded_n - n) > padded_n && pads_less && cost(2 * v, up / 2) < cost(v, up) &&
          !few_tasks) {
        tile[0].amount = up / 2;
        lanes *= 2;
      }
    }
    // The share of a tile's positions that are not padding.
    auto padding_of = [&](const std::vector<Opt>& tl) {
      double used = 1;
      for (const Opt& o : tl)
        for (const UOp* r : kr.loops)
          if (r->range().id == o.range_id) used *= used_share(size_of(r), o.amount);
      return used;
    };
    // Loads per useful FMA: padded positions and lanes compute nothing.
    auto tile_cost = [&](int64_t l, const std::vector<Opt>& tl) {
      return loads_per_fma_of(l, tl) / (padding_of(tl) * used_share(size_of(vec), l));
    };
    // More vectors beside fewer tile positions, when that loads less per useful FMA with as
    // many accumulators (a 14x14 1x1 layer over 576 channels: 64 channels x 4 positions load 8
    // per 16 FMAs, 16 channels x 16 padded positions 17: mobilenet_v2's took 0.181 ms with the
    // latter, 0.161 with the tuner's choice, the former). The positions beside the wider lanes
    // may be padded too, where an exact divisor is small: a 14x14 layer's 196 positions take 8
    // (200) beside 32 channels rather than 4 (efficientnet_b0's 112 -> 672 expansions: 16 x 16
    // ran 0.206-0.221 ms, 8 x 32 0.193; 10 loads per 16 FMAs against 17).
    if (lanes % width == 0 && !tile.empty() && !rows_anyway)
      for (int64_t v = 2; v <= 8; v *= 2) {
        int64_t l = v * width;
        // Lanes that pad the axis (196 positions as 2 vectors: 224), the last group masked: only
        // along the store's contiguous axis (its rows then store whole vectors), on a target with
        // cheap masks, for a float contraction whose inner loop is load-bound (below).
        bool padded_lanes = size_of(vec) % l != 0 && !scatters(vec) && t.masked_vectors &&
                            !is_symbolic(vec) && worth_padding(size_of(vec), l);
        for (bool pad : {false, true}) {
          if (l <= lanes || (size_of(vec) % l != 0 && !padded_lanes)) continue;
          std::vector<Opt> tl = tile_for(vec, l, pad);
          if (tl.empty() || accumulators_of(l, tl) < accumulators_of(lanes, tile)) continue;
          // Only where the positions then pad less: with exact tiles either way the wider lanes
          // were as often slower (a transformer's attention scores 0.26 -> 0.39 ms, its 128-row
          // GEMMs 4-6%) as faster (resnet18's Winograd products at 16 positions, 11%). Or where
          // padded lanes take a tile that loads more than once per FMA (a vector and 16
          // broadcasts per 16) to one that loads under 0.75 (2 vectors and 8 channels), over a
          // reduction of 128 or more: efficientnet_b0's and mobilenet_v2's projections to
          // 80-160 channels at 14x14 and 28x28 ran 7-15% faster as 32 positions x 8 channels
          // (672 -> 112: 0.207 -> 0.182 ms), resnet50's layer2 conv3 10% (0.59 -> 0.53). Not
          // over short reductions, whose epilogue costs more than the loads (16 -> 96 at
          // 112x112 with SiLU: 0.49 -> 0.56 ms; 64 -> 384: +12%), nor for int8 dot products
          // (mobilenet_v2_qdq's 1x1 layers 5-30% slower).
          bool load_bound = padded_lanes && unit == 1 && fmas_per_output >= 128 &&
                            loads_per_fma_of(lanes, tile) > 1.0 && loads_per_fma_of(l, tl) < 0.75;
          if (padding_of(tl) <= padding_of(tile) && !load_bound) continue;
          // Nor when the lane axis is the outermost loop and would leave tasks that 2 and 4
          // threads cannot split evenly (192 channels in 64s: 3 tasks, which 2 threads split
          // 2:1). 4 tasks are enough: resnet50's 1x1 layers at 14x14 (1024 -> 256 channels) ran
          // 0.60-0.81 ms as 16 positions x 16 channels, 0.48-0.55 as 4 x 64 in 4 tasks (2
          // threads: 0.35 -> 0.25-0.28).
          int64_t tasks = (size_of(vec) + l - 1) / l;
          if (vec == kr.loops.front() && tasks < t.max_tasks / 2 && (tasks < 4 || tasks % 2 != 0))
            continue;
          if (tile_cost(l, tl) < 0.85 * tile_cost(lanes, tile)) {
            lanes = l;
            tile = std::move(tl);
          }
        }
      }
    return TilePlan{vec, lanes, std::move(tile)};
  };
  auto loads_per_fma = [&](const TilePlan& p) { return loads_per_fma_of(p.lanes, p.tile); };
  // Memory operations per useful FMA, the stores included: an accumulator is stored once per
  // output, after its reduction's FMAs; a store that scatters its lanes (output channels as
  // lanes in an NCHW map, planes apart) is one store per lane. With few FMAs per output (a 1x1
  // layer over 16 input channels) that outweighs the loads: squeezenet's 16 -> 64 expansion at
  // 55x55 ran 0.093 ms with channels as lanes, 0.060 with positions.
  auto memory_ops_per_fma = [&](const TilePlan& p) {
    double lanes_used = used_share(size_of(p.vec), p.lanes);
    double filled = static_cast<double>(std::min(p.lanes, width)) / static_cast<double>(width);
    double stores = scatters(p.vec) ? static_cast<double>(width) : 1.0;
    return (loads_per_fma(p) + stores / (std::max(1.0, fmas_per_output) * filled)) / lanes_used;
  };
  TilePlan plan;
  if (ranked.empty()) {
    // No clean vector axis: the store's contiguous axis, as for elementwise kernels.
    const UOp* vec = contiguous_loop(ast, kr);
    if (!vec) return;
    plan = plan_for(vec);
  } else if (t.lane_choice > 0) {  // the tuner's alternative
    plan = plan_for(
        ranked[std::min<size_t>(static_cast<size_t>(t.lane_choice), ranked.size() - 1)].second);
  } else {
    // Among the equally ranked lane axes (a convolution's W and output channels), the one whose
    // tile loads least per FMA: output channels x 4 positions load 6 per 8 FMAs, W x 8 channels
    // 9 (a 64-channel 3x3 layer at 56x56 ran 37% faster).
    // A lane axis whose store scatters is weighed against every other (positions that a vector
    // does not divide: 3025 = 55x55, the last group masked).
    plan = plan_for(ranked[0].second);
    bool all = scatters(plan.vec);
    for (size_t i = 1; i < ranked.size() && (all || ranked[i].first == ranked[0].first); ++i) {
      TilePlan other = plan_for(ranked[i].second);
      if (memory_ops_per_fma(other) < memory_ops_per_fma(plan)) plan = std::move(other);
    }
  }
  const UOp* vec = plan.vec;
  int64_t lanes = plan.lanes;
  std::vector<Opt> tile = std::move(plan.tile);
  opts.insert(opts.end(), tile.begin(), tile.end());
  if (lanes > 1) opts.push_back({OptKind::Upcast, vec->range().id, lanes});
  // Per reduction (a fused residual block has two): unroll a small kernel window (its innermost
  // ranges: a 3x3 convolution's kh and kw) completely, so its short loops and their index
  // updates go (a 3x3 layer ran ~25% faster than with the channel loop unrolled by 4);
  // otherwise its first range by up to 4 (without, a downsample fused after a 1x1 conv ran its
  // channel loop one FMA chain at a time).
  // Not the window when it would be the only independent work beside a lane axis of half a
  // vector (a 7x7 depthwise layer's 8 lanes of 16): LLVM's SLP vectorizer pairs the unrolled
  // copies into whole vectors with an insert each (efficientnet_b0's 5x5 layers at 7x7: 0.33 ms
  // unrolled, 0.21 as a loop).
  bool half_vector_alone = lanes < width && tile.empty();
  for (const UOp* red : ast->toposort()) {
    if (red->op != Op::REDUCE || red->src.size() < 2) continue;
    std::vector<const UOp*> ranges(red->src.begin() + 1, red->src.end());
    std::erase_if(ranges, is_symbolic);
    if (ranges.empty()) continue;
    std::sort(ranges.begin(), ranges.end(),
              [](const UOp* a, const UOp* b) { return a->range().id < b->range().id; });
    std::vector<Opt> window;
    int64_t copies = 1;
    for (auto it = ranges.rbegin(); it != ranges.rend() && t.unroll_window; ++it) {
      int64_t n = size_of(*it);
      if (n > 8 || copies * n > 16) break;
      window.push_back({OptKind::Unroll, (*it)->range().id, n});
      copies *= n;
    }
    if (copies >= 3 && half_vector_alone) continue;
    if (copies >= 3) {
      opts.insert(opts.end(), window.begin(), window.end());
      continue;
    }
    int64_t un = pick_divisor(size_of(ranges[0]), std::max(1, t.unroll));
    if (un > 1) opts.push_back({OptKind::Unroll, ranges[0]->range().id, un});
  }
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
  const UOp* outer = nullptr;
  for (const UOp* r : kr.loops)
    if (remaining_of(r, opts) > 1) {
      outer = r;
      break;
    }
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
      int64_t run = (n + t.max_tasks - 1) / t.max_tasks * ((size_of(r) + n - 1) / n) * stride *
                    std::max(1, st->src[1]->dtype.itemsize());
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
  // threads ran 1.16x faster than one; its 96 rows make 16), then the least re-read.
  const UOp* best = outer;
  int64_t enough = std::min<int64_t>(remaining_of(outer, opts), 8);
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
    int64_t run =
        (n + t.max_tasks - 1) / t.max_tasks * ((size_of(split_along) + n - 1) / n) * stride * item;
    if (n >= t.max_tasks / 2 && stride > 0 && run >= 256) {
      const UOp* outer = nullptr;
      for (const UOp* r : all_loops)
        if (remaining_of(r, opts) > 1) {
          outer = r;
          break;
        }
      if (outer != split_along) opts.push_back({OptKind::Tile, split_along->range().id, 1});
      opts.push_back(
          {OptKind::Parallel, split_along->range().id, std::min<int64_t>(n, t.max_tasks)});
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
