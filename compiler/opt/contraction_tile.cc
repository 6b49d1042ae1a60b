#include "compiler/opt/contraction_tile.h"

#include <algorithm>
#include <numeric>

#include "compiler/ir/dot_product.h"
#include "compiler/opt/kernel_queries.h"

namespace kiln {

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
  // How the vector operand (the loads that vary along lane axis vec) varies along r: 0 not at
  // all, c > 0 only from block to block of c (a grouped convolution's input, from group to group
  // of the output channels; the gcd over the loads), -1 otherwise.
  auto vector_blocks = [&](const UOp* vec, const UOp* r) {
    int64_t block = 0;
    for (const UOp* l : loads)
      if (load_stride(l, vec) != 0 && depends_on(l, r)) {
        int64_t b = block_of(l, r);
        if (b <= 0) return int64_t{-1};
        block = std::gcd(block, b);
      }
    return block;
  };
  // The tile's broadcast axes for `lanes` on lane axis `vec`, within the accumulator budget.
  // `pad`: take the largest padded upcast worth its padding even when an exact one is more than
  // a quarter of it (the caller weighs the padding).
  // A lane axis narrower than a vector (8 channels of a 16-lane target) still takes a register
  // per accumulator: regnet_x_1_6gf's stride-2 layers of 24-channel groups took 8 channels x 32
  // positions (32 accumulators, spilled) and ran 1.19 ms, 0.71 as 8 x 16.
  auto tile_for = [&](const UOp* vec, int64_t lanes, bool pad = false) {
    int64_t budget = accumulators * width / std::max<int64_t>(width, lanes);
    std::vector<Opt> tile;
    for (auto it = kr.loops.rbegin(); it != kr.loops.rend() && budget >= 2; ++it) {
      const UOp* r = *it;
      if (r == vec) continue;
      // The vector operand must not vary along r; or only from block to block of r (a grouped
      // convolution's input, from group to group of the output channels), with upcasts inside
      // one block: regnet_x_1_6gf's 28x28 layers of 24-channel groups took 8 channels beside 16
      // positions rather than 2 rows (0.85 -> 0.25 ms).
      int64_t block = vector_blocks(vec, r);
      if (block < 0) continue;
      if (block > 0) {
        int64_t up = 1, n = size_of(r);
        for (int64_t p = budget; p >= 2 && up == 1; p /= 2)
          if (n % p == 0 && block % p == 0) up = p;
        if (up > 1) {
          tile.push_back({OptKind::Upcast, r->range().id, up});
          budget /= up;
        }
        continue;
      }
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
      // A divisor that is not a power of two, over half the budget, in place of a padded
      // power of two when it computes as many real positions per step: a 7x7 map's 49 positions
      // in 7 groups of 7 rather than 7 of 8, one of them masked. Only on an odd axis: a 14-wide
      // row as 7s rather than 8s ran resnet50's layer3.0 conv3 + downsample 1-11% slower. The
      // emitter splits the odd tile into native vectors (native_pieces.h); a 7x7 2048 -> 512 layer
      // ran 0.87x the time of its 4 x 64 tile at 1 thread, 8 x 32 0.92-1.07x.
      int64_t odd = 1;
      for (int64_t d = budget; 2 * d > budget && odd == 1 && !is_symbolic(r); --d)
        if ((d & (d - 1)) != 0 && n % d == 0) odd = d;
      // Or one position over a budget of 8 or more beside 2 or more lane vectors, the
      // accumulators an eighth over theirs (18 of AVX-512's 32 registers beside 2 weight
      // vectors and a broadcast): a 27-wide row as 3 groups of 9 rather than 4 of 8, the last
      // masked. squeezenet1_1's 27x27 32 -> 128 layer, direct: 0.26 ms with 9 x 32 at 1 thread,
      // 0.31 with 8 x 32 (ONNX Runtime 0.25). Not beside one vector (AVX2's 9 x 8 would load
      // 10 operands per 9 FMAs, 4 x 16 loads 6 per 8).
      if (odd == 1 && budget >= 8 && lanes >= 2 * width && !is_symbolic(r) &&
          n % (budget + 1) == 0 && (budget + 1) % 2 == 1)
        odd = budget + 1;
      // Or, where the tile would hold at most 8 accumulators (AVX2's 16 registers: 4 positions
      // beside 2 lane vectors), one position more when the registers hold it beside the lane
      // vectors' loads and a broadcast and it pads the axis no more: 8 accumulators are just
      // two FMA pipes times a 4-cycle latency, so any stall in the chains shows. A 7x7 map's 49
      // positions as 10 groups of 5 (50) rather than 13 of 4 (52): mobilenet_v2's 320 -> 1280
      // layer as AVX2 code (run on a Zen 5) 0.465 -> 0.41 ms (6 positions, 9 groups: 0.42; 7,
      // which needs 17 registers: 0.55); whole models as AVX2 code, 1 thread, against an
      // identical copy: mobilenet_v2 0.972, squeezenet1_1 0.977 (its 13x13 layers: 169 as 34 x
      // 5), efficientnet_b0 0.978, resnet50 0.986; 2 threads squeezenet1_1 0.952, mobilenet_v2
      // 0.974.
      // Only as the tile's first broadcast axis, so that the budget is the whole tile's.
      int64_t vectors = lanes / width;
      if (odd == 1 && exact == 1 && padded == budget && tile.empty() && lanes >= 2 * width &&
          budget * vectors <= 8 && !is_symbolic(r) &&
          (budget + 1) * vectors + vectors + 1 <= t.vector_registers &&
          used_share(n, budget + 1) >= used_share(n, budget))
        odd = budget + 1;
      // On an even axis too where a vector FMA issues once per cycle (OptTarget::half_rate_fma:
      // the padded positions' FMAs are what the tile waits for): a 14-wide row as 7s,
      // efficientnet_b0's 14x14 expansions with SiLU 7 x 32 rather than 8 x 32 (the model 0.968
      // of its time at 1 thread on a Zen 4 with this exception alone).
      if (up == padded && padded > exact && (exact == 1 || t.half_rate_fma) && odd > 1 &&
          static_cast<double>(odd) >= static_cast<double>(padded) * used_share(n, padded))
        up = odd;
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
  // Lanes the store scatters into planes a multiple of 4 KiB apart (a 48x64 map's planes, 12
  // KiB) write lines that all fall in one set of the L1 (64 sets of 64-byte lines): 32 lanes are
  // 32 lines in a set of 8-12 ways, each evicted before the next tile along the row completes
  // it. At most 8 lines per set: a 32-channel Winograd output transform at 48x64 ran 0.13 ms
  // with 32 channels as lanes, 0.091 with 16, 0.024 with 8 and 0.029 with 4 (at 56x56, planes
  // 12544 bytes apart spread the lines over 16 sets: 0.022).
  auto within_l1_sets = [&](const UOp* vec, int64_t lanes) {
    if (!scatters(vec) || is_symbolic(vec)) return lanes;  // scatters: there is a store
    int64_t bytes = stride_of(store->src[0]->src[1], vec) * item;
    if (bytes <= 0 || bytes % 64 != 0) return lanes;
    int64_t sets = 64 / std::gcd<int64_t>(bytes / 64, 64);
    return lanes > 8 * sets ? pick_divisor(size_of(vec), 8 * sets) : lanes;
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
  // Whether positions along r read overlapping windows: a load steps along r by a multiple (at
  // most the window's extent) of its step along a reduce range (a 3x3 window's input row y +
  // ky; a stride-2 stem's columns 2x + kx).
  auto windows_overlap = [&](const UOp* r) {
    for (const UOp* l : loads)
      for (const UOp* red : kr.reduces) {
        int64_t a = load_stride(l, r), w = load_stride(l, red);
        if (a > 0 && w > 0 && a % w == 0 && a / w < size_of(red)) return true;
      }
    return false;
  };
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
  // True if every weight packed in panels along vec (its index takes vec modulo a panel) stays
  // in bounds with vec run to `padded`.
  auto panel_loads_fit = [&](const UOp* vec, int64_t padded) {
    std::vector<const UOp*> panel_loads;
    for (const UOp* l : loads) {
      bool panel = false;
      for (const UOp* u : l->src[0]->toposort()) panel |= u->op == Op::MOD && u->src[0] == vec;
      if (panel) panel_loads.push_back(l);
    }
    return loads_fit_padded(panel_loads, vec, padded);
  };
  auto plan_for = [&](const UOp* vec) {
    int64_t lanes = pick_divisor(size_of(vec), std::max(1, t.lane_vectors) * width);
    // A symbolic lane axis: lanes that divide its bound, no padding choices (the lanes past
    // the run-time size read and write the buffers' padding, inside the bound).
    if (is_symbolic(vec)) return TilePlan{vec, lanes, tile_for(vec, lanes)};
    // A lane axis that only takes a small divisor (a depthwise convolution's 14-wide W: 2) is
    // padded to one vector instead when masked accesses are cheap.
    if (lanes < width) {
      lanes = lane_count(size_of(vec), width, item, t.masked_vectors);
      // Half an AVX2 vector (196 positions: 4 of 8 lanes, an exact divisor) takes the whole
      // vector instead, the last group masked, when that pads the axis by at most a sixteenth
      // (200): shufflenet_v2's 116-channel 1x1 layers at 14x14 as AVX2 code (no channel count
      // divides into 8 either) ran as 4 positions x 4 channels at 45 GFLOP/s; the model 0.89 of
      // its time at 1 and 2 threads with 8 x 4. A 16-lane target pads such an axis already
      // (lane_count).
      int64_t padded = (size_of(vec) + width - 1) / width * width;
      if (2 * lanes == width && width <= 8 && t.masked_vectors && (item == 4 || item == 8) &&
          16 * (padded - size_of(vec)) <= padded)
        lanes = width;
    }
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
    // Not on a target whose vector FMA issues once per cycle (OptTarget::half_rate_fma) where
    // other output loops give the tile its positions: there the padded lanes' FMAs are what the
    // tile waits for (efficientnet_b0's channels-last 24 -> 144 expansions at 56x56 as 16
    // channels x 8 positions x 2 rows, not 32 x 8: the model 0.967 of its time at 1 thread on a
    // Zen 4 with this exception alone). A matrix-vector product keeps its two weight streams
    // (1280 -> 1000 took 0.155 ms with 32 lanes, 0.178 with 16).
    int64_t want = std::max(1, t.lane_vectors) * width;
    int64_t padded_vec = (size_of(vec) + want - 1) / want * want;
    bool other_positions = false;
    for (const UOp* r : kr.loops) other_positions |= r != vec && size_of(r) > 1;
    if (t.masked_vectors && lanes == width && want > width && size_of(vec) > want &&
        !(t.half_rate_fma && other_positions) && worth_padding(size_of(vec), want) &&
        loads_fit_padded(loads, vec, padded_vec))
      lanes = want;
    lanes = within_l1_sets(vec, lanes);
    // A broadcast operand that changes from block to block of the lane axis (a grouped
    // convolution's input, per group of the output channels as lanes) is one value per vector
    // only when the lanes lie inside one block.
    int64_t block = 0;
    for (const UOp* l : loads)
      if (int64_t b = load_stride(l, vec) == 0 ? block_of(l, vec) : 0; b > 0)
        block = std::gcd(block, b);
    while (block > 0 && lanes > 1 && block % lanes != 0) lanes /= 2;
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
        // Lanes the store scatters (a Winograd output transform: channels contiguous in its
        // input, planes apart in its NCHW output) take rows of 4 along the loop the output is
        // contiguous along, the last padded when the loop is odd: each row is then one 16-byte
        // store after a shuffle (the expander's row stores), where one row took a scalar store
        // per lane (squeezenet's transforms at 55x55, 27x27 and 13x13: 0.63-0.86x the time at 1
        // thread; resnet50's at 56x56 0.62-0.98x). A 14-wide loop keeps its exact pairs (4
        // padded to 16 ran 15% slower there).
        int64_t n = size_of(r);
        if (scatters(vec) && store && stride_of(store->src[0]->src[1], r) == 1 && !is_symbolic(r) &&
            n >= 4 && (n % 4 == 0 || n % 2 == 1))
          up = 4;
        if (up > 1) tile.push_back({OptKind::Upcast, r->range().id, up});
        rows_anyway = up > 1 && windows_overlap(r);
        break;
      }
    // A tile of half vectors that channels within a group (tile_for's block-limited upcast) left
    // at half the accumulators or fewer takes 2 rows too where the rows' windows overlap (they
    // share the input's loads): regnet_x_1_6gf's 56x56 layers of 24-channel groups, 8 positions
    // as lanes x 8 channels, 0.89 -> 0.49 ms. Whole vectors take more of them instead (below:
    // its 28x28 layers' 2 x 16 positions x 8 channels, 0.25 ms; with 2 rows 0.27).
    bool block_limited = false;
    for (const Opt& o : tile)
      for (const UOp* r : kr.loops)
        block_limited |= r->range().id == o.range_id && vector_blocks(vec, r) > 0;
    if (block_limited && lanes < width && 2 * accumulators_of(lanes, tile) <= accumulators)
      for (auto it = kr.loops.rbegin(); it != kr.loops.rend(); ++it) {
        const UOp* r = *it;
        bool taken = r == vec;
        for (const Opt& o : tile) taken |= o.range_id == r->range().id;
        if (taken || !windows_overlap(r) || size_of(r) % 2 != 0 || is_symbolic(r)) continue;
        tile.push_back({OptKind::Upcast, r->range().id, 2});
        rows_anyway = true;
        break;
      }
    // The share of a tile's positions that are not padding.
    auto padding_of = [&](const std::vector<Opt>& tl) {
      double used = 1;
      for (const Opt& o : tl)
        for (const UOp* r : kr.loops)
          if (r->range().id == o.range_id) used *= used_share(size_of(r), o.amount);
      return used;
    };
    // An exact tile of an odd divisor (tile_for's 7 of a 7x7 map's 49 positions).
    auto odd_exact = [&](const std::vector<Opt>& tl) {
      return tl.size() == 1 && tl[0].amount % 2 == 1 && padding_of(tl) == 1.0;
    };
    // One vector on the lane axis when that lets the broadcast axes fill the budget (7x7 maps:
    // 8 padded positions x 8 channels reuse each weight vector 8 times). Not in place of an odd
    // exact tile when the padded one computes no more real positions (16 of 64 padded beside
    // 7 x 2 vectors: 12.25 useful accumulators against 14).
    if (lanes > width && size_of(vec) % width == 0) {
      std::vector<Opt> narrow = tile_for(vec, width);
      bool keeps_odd = odd_exact(tile) &&
                       static_cast<double>(accumulators_of(width, narrow)) * padding_of(narrow) <=
                           static_cast<double>(accumulators_of(lanes, tile));
      if (accumulators_of(width, narrow) > accumulators_of(lanes, tile) && !keeps_odd) {
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
      // few: 192 channels in 64s are 3 tasks, which 2 threads split 2:1 (efficientnet_b0's 7x7
      // 1152 -> 192 projections 6-7% slower at 2 threads), nor over a short reduction (a
      // Winograd transform's 6 points: squeezenet1_1's 13x13 output transforms in 4 tasks ran
      // 1.45-1.83x slower at 2 threads). 5 tasks over a long reduction pay at both counts
      // (efficientnet_b0's 1152 -> 320 at 7x7: 0.276 -> 0.241 ms at 1 thread, 5% faster at 2).
      int64_t wide_tasks = size_of(vec) / (2 * lanes);
      bool few_tasks = vec == kr.loops.front() && wide_tasks < t.max_tasks / 2 &&
                       (wide_tasks < 4 || fmas_per_output < 128);
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
    // Loads per useful FMA: padded positions and lanes compute nothing.
    auto tile_cost = [&](int64_t l, const std::vector<Opt>& tl) {
      return loads_per_fma_of(l, tl) / (padding_of(tl) * used_share(size_of(vec), l));
    };
    // Half the lane vectors beside an exact tile of an odd divisor, where the tile at these
    // lanes pads its positions: a 7x7 map's 49 positions as 7 x 32 channels (14 accumulators,
    // none idle) rather than 4 x 64 (16, 52 positions computed for 49). Counted in cache lines
    // rather than loads, since the weight vectors stream from L2 (a long reduction's panel
    // outgrows L1) while the tile's broadcasts share one line of the input: 2 weight lines and
    // about 1 input line per 14 FMAs against 4 and 1 per 15 useful ones. resnet50's 7x7 2048 ->
    // 512 layer, hot: 0.59-0.63 ms with 7 x 32 against 0.67-0.78 with 4 x 64 at 1 thread,
    // 0.285 against 0.39-0.47 at 2 (ONNX Runtime 0.58 and 0.28). Only from 4 lane vectors: from
    // 2 (AVX2's 16-register tiles) it would leave one vector beside 7 broadcasts.
    if (lanes >= 4 * width && lanes % (2 * width) == 0 && tile.size() == 1 &&
        padding_of(tile) < 1.0 && !rows_anyway) {
      std::vector<Opt> tl = tile_for(vec, lanes / 2);
      if (odd_exact(tl) && 4 * accumulators_of(lanes / 2, tl) >= 3 * accumulators_of(lanes, tile)) {
        lanes /= 2;
        tile = std::move(tl);
      }
    }
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
        // And where a weight packed in panels along it stays in bounds: one packed in vector
        // pairs (672 channels: 21 pairs of 16 lanes) read as 64 lanes ran off its end in the
        // last group, and its gated panel loads became 64 scalar loads each, in every group (a
        // 196 x 672 x 112 matmul at 52 GFLOP/s; 214 with 2 vectors). A gated load along a
        // plain axis (an NCHW map's positions) is one masked vector load.
        bool padded_lanes = size_of(vec) % l != 0 && !scatters(vec) && t.masked_vectors &&
                            !is_symbolic(vec) && worth_padding(size_of(vec), l) &&
                            panel_loads_fit(vec, (size_of(vec) + l - 1) / l * l);
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
          // (mobilenet_v2_qdq's 1x1 layers 5-30% slower), nor where a vector FMA issues once per
          // cycle (OptTarget::half_rate_fma): there a vector and 16 broadcasts load in 8.5
          // cycles what 16 FMAs take 16 for, and only the padding costs (efficientnet_b0 0.971
          // of its time at 1 thread on a Zen 4 with this exception alone).
          bool load_bound = padded_lanes && unit == 1 && fmas_per_output >= 128 &&
                            !t.half_rate_fma && loads_per_fma_of(lanes, tile) > 1.0 &&
                            loads_per_fma_of(l, tl) < 0.75;
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
  // Where the heuristic's tile holds at most 8 accumulators (AVX2's 16 registers: 4 positions
  // beside 2 lane vectors), more positions on its broadcast axis, as many as the registers hold
  // beside the lane vectors' loads and a broadcast (6 beside 2), when they use the axis within
  // four hundredths as well as the best count does: 8 accumulators are just two FMA pipes times
  // a 4-cycle latency, so any stall in the chains shows, and each position more shares the lane
  // vectors' loads. A 14x14 map's 196 positions as 33 groups of 6 (198) rather than 49 of 4: as
  // AVX2 code on a Zen 5, mobilenet_v2's 14x14 1x1 layers ran 8-11% faster and its 28x28 and
  // 56x56 ones 8-10%. A 128-row GEMM's rows as 22 groups of 6 (132, 3% padded) rather than 26 of
  // 5 (130): the transformer's 128 x 1024 x 256 GEMM 1.41 -> 1.31 ms over its two launches,
  // the model 0.96x at 1 and 2 threads (12 chains ran 9% more FMAs per cycle than 10); resnet50's
  // 1x1 layers to 128 channels at 28x28 unchanged. Decided once the lane axis is chosen (weighing
  // each axis's plan at 6 positions moved some layers' lanes to 32 output channels in 2 tasks). Not
  // over a reduction shorter than 32, nor a padded count over one shorter than 96, where the tile's
  // epilogue and its guarded stores outweigh the FMAs: squeezenet1_1's 16 -> 64 and 32 -> 128
  // expansions at 55x55 and 27x27 ran 25-30% slower as 5 channels (65, 130) x 16 positions,
  // its 64 -> 256 ones 6% slower as 6 (258). Nor where the positions' windows overlap:
  // resnet18's 7x7 stem at stride 2 ran 4% of the model slower as 6 positions (114 of a
  // 112-wide row).
  if (t.accumulators == 0 && accumulators <= 8 && tile.size() == 1 && lanes >= 2 * width &&
      lanes % width == 0 && fmas_per_output >= 32) {
    const UOp* r = nullptr;
    for (const UOp* l : kr.loops)
      if (l->range().id == tile[0].range_id) r = l;
    int64_t vectors = lanes / width, n = r ? size_of(r) : 0;
    // Overlapping windows (a stem's 7x7 at stride 2): the unrolled window's inputs shared
    // between positions stay live beside the accumulators.
    if (r && !is_symbolic(r) && !windows_overlap(r) && tile[0].amount * vectors <= 8) {
      int64_t most = std::min<int64_t>(n, (t.vector_registers - vectors - 1) / vectors);
      double best = 0;
      for (int64_t p = tile[0].amount; p <= most; ++p) best = std::max(best, used_share(n, p));
      for (int64_t p = most; p > tile[0].amount; --p)
        if (used_share(n, p) >= best - 0.04 && (n % p == 0 || fmas_per_output >= 96)) {
          tile[0].amount = p;
          break;
        }
      // Where no more positions pay (a 7x7 map's 7-wide rows: 4 of them pad 7 to 8, 6 to 12),
      // a third vector of channels instead: 4 x 3 = 12 chains beside 3 weight vectors and a
      // broadcast, each broadcast feeding 3 FMAs. As AVX2 code on a Zen 5, efficientnet_b0's
      // 192 -> 1152 expansions at 7x7 ran 0.30 -> 0.27 ms; the model 0.989 at 1 thread and
      // 0.983 at 2, mobilenet_v2 0.985 and 1.00, squeezenet1_1 1.00 and 0.96. Not an integer
      // dot product (mobilenet_v2_qdq's 1x1 layers: the model 9% slower).
      if (unit == 1 && vectors == 2 && tile[0].amount * vectors <= 8 &&
          size_of(vec) % (3 * width) == 0 && tile[0].amount * 3 + 3 + 1 <= t.vector_registers)
        lanes = 3 * width;
    }
  }
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
    // A stem's few input channels (RGB: 3) outside a window of 9 copies or more go unrolled in
    // its place, the window as loops: at stride 2 the unrolled 3x3 window's neighbouring columns
    // share inputs, LLVM kept all 51 of them live beside 16 accumulators and spilled
    // (squeezenet1_1's stem 0.31 -> 0.21 ms at 1 thread, mobilenet_v2's 0.233 -> 0.212). Not
    // an int8 stem: its window is the dot product's groups of 4 (3.3x slower as loops).
    if (copies >= 9 && ranges.size() == window.size() + 1 && size_of(ranges[0]) <= 3 &&
        red->dtype.is_float()) {
      opts.push_back({OptKind::Unroll, ranges[0]->range().id, size_of(ranges[0])});
      continue;
    }
    if (copies >= 3) {
      opts.insert(opts.end(), window.begin(), window.end());
      continue;
    }
    int64_t un = pick_divisor(size_of(ranges[0]), std::max(1, t.unroll));
    if (un > 1) opts.push_back({OptKind::Unroll, ranges[0]->range().id, un});
  }
}

}  // namespace kiln
