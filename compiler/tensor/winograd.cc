#include "compiler/tensor/winograd.h"

#include <algorithm>
#include <vector>

#include "compiler/support/error.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/weight_layout.h"

namespace kiln {

namespace {

// F(4, 3) with the interpolation points 0, ±1, ±2, ∞ (Lavin & Gray).
const double kBT4[6 * 6] = {
    4, 0,  -5, 0,  1, 0,  //
    0, -4, -4, 1,  1, 0,  //
    0, 4,  -4, -1, 1, 0,  //
    0, -2, -1, 2,  1, 0,  //
    0, 2,  -1, -2, 1, 0,  //
    0, 4,  0,  -5, 0, 1,
};
const double kG4[6 * 3] = {
    1.0 / 4,  0,         0,         //
    -1.0 / 6, -1.0 / 6,  -1.0 / 6,  //
    -1.0 / 6, 1.0 / 6,   -1.0 / 6,  //
    1.0 / 24, 1.0 / 12,  1.0 / 6,   //
    1.0 / 24, -1.0 / 12, 1.0 / 6,   //
    0,        0,         1,
};
const double kAT4[4 * 6] = {
    1, 1, 1,  1, 1,  0,  //
    0, 1, -1, 2, -2, 0,  //
    0, 1, 1,  4, 4,  0,  //
    0, 1, -1, 8, -8, 1,
};
// F(2, 3) with the points 0, ±1, ∞.
const double kBT2[4 * 4] = {
    1, 0,  -1, 0,  //
    0, 1,  1,  0,  //
    0, -1, 1,  0,  //
    0, 1,  0,  -1,
};
const double kG2[4 * 3] = {
    1,   0,    0,    //
    0.5, 0.5,  0.5,  //
    0.5, -0.5, 0.5,  //
    0,   0,    1,
};
const double kAT2[2 * 4] = {
    1, 1, 1,  0,  //
    0, 1, -1, -1,
};

struct Transform {
  int64_t m;         // output tile edge; the input tile is m + 2
  const double* bt;  // (m + 2) x (m + 2)
  const double* g;   // (m + 2) x 3
  const double* at;  // m x (m + 2)
  // Multiply-adds the GEMMs save per tile per channel pair (m² outputs x 9 direct, less one per
  // point), and values the transforms move per tile per channel ((m + 2)² each way).
  int64_t in() const { return m + 2; }
  int64_t points() const { return in() * in(); }
  int64_t saved() const { return 9 * m * m - points(); }
};
const Transform kF4 = {4, kBT4, kG4, kAT4};
const Transform kF2 = {2, kBT2, kG2, kAT2};

Tensor matrix(Graph& g, const char* name, const double* v, int64_t rows, int64_t cols) {
  NDArray a(dtypes::float32, {rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) a.set(i, ConstValue::of_float(v[i]));
  return Tensor::weight(g, g.fresh_name(name), std::move(a));
}

// G w Gᵀ for every (K, C) filter of the constant w, rounded to float32 once.
NDArray transformed_weight(const Graph& g, const Tensor& w, const Transform& t) {
  EagerEvaluator ev(g);
  const NDArray& wv = ev.eval(w.uop());
  int64_t filters = w.dim(0) * w.dim(1), in = t.in();
  NDArray u(dtypes::float32, {w.dim(0), w.dim(1), in, in});
  std::vector<double> gw(static_cast<size_t>(in * 3));  // G w
  for (int64_t f = 0; f < filters; ++f) {
    for (int64_t a = 0; a < in; ++a)
      for (int64_t j = 0; j < 3; ++j) {
        double s = 0;
        for (int64_t i = 0; i < 3; ++i) s += t.g[a * 3 + i] * wv.get(f * 9 + i * 3 + j).f;
        gw[static_cast<size_t>(a * 3 + j)] = s;
      }
    for (int64_t a = 0; a < in; ++a)
      for (int64_t b = 0; b < in; ++b) {
        double s = 0;
        for (int64_t j = 0; j < 3; ++j) s += gw[static_cast<size_t>(a * 3 + j)] * t.g[b * 3 + j];
        u.set((f * in + a) * in + b, ConstValue::of_float(s));
      }
  }
  return u;
}

int64_t tiles(int64_t n, const Transform& t) {
  return (n + t.m - 1) / t.m;
}

bool all_ones(const std::vector<int64_t>& v) {
  for (int64_t s : v)
    if (s != 1) return false;
  return true;
}

// The transform for a (C -> K) layer of h x wd outputs (batch n), or nullptr. The GEMMs have
// P = N * tiles rows: below 16 tiles a GEMM row reuses each transformed weight too few times
// for its larger size to pay. Per tile the GEMMs save saved() C K multiply-adds while the
// memory-bound transforms move points() (C + K) values: measured on single layers
// (tools/bench/winograd_sweep.py, docs/performance.md), F(4, 3) pays from C K / (C + K) >= 12.5
// (16 -> 64 channels: 0.67-0.74x the direct time at 56x56; 48 -> 16 at 96x128: 1.5x; 16 -> 16:
// 1.03x), i.e. 2 saved C K >= 75 points (C + K) (the saved flops against the values moved);
// the same line for F(2, 3), which maps too small for F(4, 3) take (7x7: 16 tiles of 2x2),
// gives C K / (C + K) >= 30 (7x7 layers: 64 -> 64 0.74x, 32 -> 32 1.00x, not taken).
// An input channel costs the transforms about 3x an output channel (its two passes and the
// padded copy took 3.4-3.9 us per 56x56 map, an output channel's two passes 1.2-1.4): where
// the input channels outnumber the output ones the line weighs them so, C K / (1.5 C + 0.5 K)
// >= 12.5 (56x56 64 -> 16 ran 1.13-1.31x the direct time, 28x28 128 -> 16 1.06x; both now
// direct). Where they do not, the symmetric line stays: the weighted one would take 16 -> 32
// layers, 0.87x at 48x64 but 1.08x at 56x56, and U-Net 3% slower at 2 threads. The
// transformed weight is at most 64 MiB (a 1024 -> 1024 layer's F(4, 3) weight would be 151 MB of
// package and compile-time memory).
//
// In a model the weights are not in cache (resnet50's are 160 MB): each layer streams its
// weight from memory, and Winograd's is points/9 times larger. With a balance of b flops per
// byte, per C K the direct layer takes max(18 H W / b, 36) and the GEMMs max(2 P points / b,
// 4 points) (flops and weight bytes); the GEMMs, which stream less well than they compute and
// leave the transforms to pay for, must take at most 0.8 of the direct time. On a Xeon (b =
// 12.8) a 7x7 F(2, 3) layer is then weight-bound (64 against 69): resnet18 ran 5% faster with
// its 512-channel 7x7 layers direct; on an AVX2 or Zen 4 core (6.4) it pays (80 against 138);
// 14x14 F(4, 3) layers pay on both (144 against 276).
bool streams_pay(const Transform& t, int64_t n, int64_t h, int64_t wd, double balance) {
  double p = static_cast<double>(n * tiles(h, t) * tiles(wd, t));
  double points = static_cast<double>(t.points());
  double direct = std::max(18.0 * static_cast<double>(n * h * wd) / balance, 36.0);
  double gemms = std::max(2.0 * p * points / balance, 4.0 * points);
  return gemms <= 0.8 * direct;
}

// With T threads (LoweringOptions::threads, kilnc --threads) the GEMMs' time divides by T and
// the transforms' does less: on a host whose two vCPUs are ~1 us apart squeezenet1_1's transform
// passes took as long at 2 threads as at 1, or longer (each line a pass writes was last read by
// the other core), and its 55x55 layers ran 1.45x the direct layers' time at 2 threads against
// 0.66x at 1. So the saved flops pay for (T + 1) / 2 times the values moved: at 2 threads those
// 16 -> 64 layers (1.02 of the 1-thread line) go direct; its 32 -> 128 ones at 27x27 (2.05)
// stay, and so do densenet121's 128 -> 32 ones (1.58) and unet's at 1.5-1.9, which T times the
// values moved, as the line was first drawn, sent direct. With them Winograd, at 2 threads, the
// vCPUs near: densenet121 0.88 of the time, unet 0.83-0.89; far (~560 ns): densenet121
// 1.03-1.05, unet 0.88-1.01.
//
// The line holds where a core does 64 flops a cycle (machine balance 12.8: Zen 5, a Xeon's two
// 512-bit units), where it was last drawn (the sweep at 4119a74). Where a core does half that
// (Zen 4, AVX2: 6.4) a saved flop is worth twice the time against the same values moved: on a
// Zen 4 every layer of the sweep paid with the rule forced, 16 -> 16 at 56x56 0.84 of the
// direct time, 32 -> 16 0.68, 16 -> 16 at 96x128 0.76, 48 -> 16 0.62, and unet took 0.82 of its
// time at 1 thread. So there the line is half as high (never lower: no slower core was
// measured), on one thread and where the GEMMs have at least 64 rows of tiles (the narrow
// layers measured had 192 and more; a 16x16 map's 16 tiles keep the line). At 2 threads the
// transforms' cost is the lines they hand between the cores, which a slower FMA does not make
// cheaper: the lower line took unet's and squeezenet1_1's narrow layers, 0.80 and 0.91 of the
// time with the vCPUs near but 1.23 and 1.09 far (round trip ~550 ns). There the line stays.
constexpr double kLineBalance = 12.8;

const Transform* choose(int64_t n, int64_t c, int64_t k, int64_t h, int64_t wd,
                        const LoweringOptions& o) {
  if (k % kWeightPanel != 0) return nullptr;
  for (const Transform* t : {&kF4, &kF2}) {
    int64_t rows = n * tiles(h, *t) * tiles(wd, *t);  // the GEMMs' rows of tiles
    if (rows < 16) continue;
    if (t->points() * c * k * 4 > (int64_t{64} << 20)) return nullptr;
    if (!streams_pay(*t, n, h, wd, o.machine_balance)) return nullptr;
    int64_t moved = c > k ? 3 * c + k : 2 * (c + k);  // twice the weighted channels
    bool lower = o.threads == 1 && rows >= 64;
    double line = lower ? 75.0 * std::clamp(o.machine_balance / kLineBalance, 0.5, 1.0) : 75.0;
    double saved = 8.0 * static_cast<double>(t->saved() * c * k);
    return saved >= line * static_cast<double>((o.threads + 1) * t->points() * moved) ? t : nullptr;
  }
  return nullptr;
}

// A sum of tensors as a balanced tree: a kernel's expression stays shallow (kMaxFusedDepth).
Tensor sum_tree(std::vector<Tensor> terms) {
  while (terms.size() > 1) {
    std::vector<Tensor> next;
    for (size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(terms[i].add(terms[i + 1]));
    if (terms.size() % 2) next.push_back(terms.back());
    terms = std::move(next);
  }
  return terms[0];
}

// Σ coef[i] terms[i] with the constant coefficients folded at build time: zeros dropped, ±1 as
// the term or its negation (14 of F(4, 3)'s 36 Bᵀ entries are zero and 10 are ±1).
Tensor combination(const double* coef, const std::vector<Tensor>& terms) {
  std::vector<Tensor> kept;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (coef[i] == 0) continue;
    kept.push_back(coef[i] == 1    ? terms[i]
                   : coef[i] == -1 ? terms[i].neg()
                                   : terms[i].mul(coef[i]));
  }
  return sum_tree(std::move(kept));
}

// Bᵀ d B of every tile of the padded input xq (N, C + 1, th m + 2, tw m + 2), stored as the
// GEMMs' operand (points, C + 1, N, th, tw) and viewed as (points, P, C): xq's last channel is
// zeros, only there so that the operand's 36 planes, all written at every step of the kernel,
// do not lie a multiple of 4 KiB apart and share one set of L1 (256 channels x 16 tiles x 4
// bytes: a 14x14 layer's transform ran 0.29 ms against 0.05). One kernel: each point is a sum of
// its own taps (the tile's input values as strided views of xq), the first pass's sums shared by
// the points that use them; the points are stacked along the first axis, so that the kernel
// selects each one by a gate on that axis and the heuristics unroll it into one store per point
// (heuristics.cc, selector loops). Two passes with a constant 6x6 matrix, each its own kernel,
// wrote and read the half-transformed tiles in between: resnet18's 56x56 input transforms took
// 0.25 ms, now 0.14.
Tensor input_transform(const Tensor& xq, const Transform& t, int64_t th, int64_t tw) {
  int64_t n = xq.dim(0), c = xq.dim(1), in = t.in(), points = t.points();  // c: C + 1
  Tensor d = xq.window({in, in}, {t.m, t.m}, {1, 1});  // (N, C + 1, th, tw, in, in)
  auto tap = [&](int64_t i, int64_t j) {
    return d.shrink({{0, n}, {0, c}, {0, th}, {0, tw}, {i, i + 1}, {j, j + 1}})
        .reshape({n, c, th, tw});
  };
  // Bᵀ d: row a of the tile, column j.
  std::vector<Tensor> rows;
  for (int64_t a = 0; a < in; ++a)
    for (int64_t j = 0; j < in; ++j) {
      std::vector<Tensor> column;
      for (int64_t i = 0; i < in; ++i) column.push_back(tap(i, j));
      rows.push_back(combination(t.bt + a * in, column));
    }
  // (Bᵀ d) B, point (a, b) in its slot of the stack. The slots are padded with -0.0, which
  // adding leaves every value as it is (x + -0.0 = x, also for x = -0.0), so a copy's sum of
  // the other slots' fills folds away.
  std::vector<Tensor> stacked;
  for (int64_t a = 0; a < in; ++a)
    for (int64_t b = 0; b < in; ++b) {
      std::vector<Tensor> row(rows.begin() + a * in, rows.begin() + (a + 1) * in);
      Tensor v = combination(t.bt + b * in, row).permute({1, 0, 2, 3}).reshape({1, c, n, th, tw});
      int64_t at = a * in + b;
      stacked.push_back(v.pad({{at, points - at - 1}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}, -0.0));
    }
  Tensor v = sum_tree(std::move(stacked)).contiguous();
  return v.shrink({{0, points}, {0, c - 1}, {0, n}, {0, th}, {0, tw}})
      .reshape({points, c - 1, n * th * tw})
      .transpose(-1, -2);
}

}  // namespace

bool winograd_pays(const Tensor& x, const Tensor& w, int64_t groups,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation,
                   const std::vector<std::pair<int64_t, int64_t>>& pads) {
  if (!x.graph()->lowering().winograd) return false;
  // A symbolic height or width would be tiled into tile rows merged with static ones, which the
  // extent rules cannot follow (docs/symbolic-shapes.md): such models convolve directly.
  if (x.graph()->has_symbolic_axis_from(2)) return false;
  if (x.ndim() != 4 || w.ndim() != 4 || groups != 1 || x.dtype() != dtypes::float32 ||
      w.dtype() != dtypes::float32 || w.dim(2) != 3 || w.dim(3) != 3 || !all_ones(stride) ||
      !all_ones(dilation) || !is_constant(w))
    return false;
  int64_t h = x.dim(2) - 2, wd = x.dim(3) - 2;
  if (pads.size() == 2) {
    h += pads[0].first + pads[0].second;
    wd += pads[1].first + pads[1].second;
  }
  return choose(x.dim(0), x.dim(1), w.dim(0), h, wd, x.graph()->lowering()) != nullptr;
}

Tensor winograd_conv3x3(const Tensor& xp, const Tensor& w) {
  Graph& g = *xp.graph();
  int64_t n = xp.dim(0), c = xp.dim(1), k = w.dim(0);
  int64_t h = xp.dim(2) - 2, wd = xp.dim(3) - 2;
  const Transform* tp = choose(n, c, k, h, wd, g.lowering());
  if (!tp) throw InternalError("winograd_conv3x3 for a layer winograd_pays refuses");
  const Transform& t = *tp;
  int64_t m = t.m, in = t.in(), points = t.points();
  int64_t th = tiles(h, t), tw = tiles(wd, t);
  // A short GEMM (P < 128 rows) gets extra tile columns (of zeros, cut off at the end) until P
  // is a multiple of 8, so that its row tile never straddles the end: 49 rows, the last tile's
  // rows gated, spilled the clamped broadcasts (48 GFLOP/s; 56 rows ran at 90). A long one
  // keeps its count (196 rows ran at 100 GFLOP/s; 224 would add 14% of the work).
  while (n * th * tw < 128 && (n * th * tw) % 8 != 0 && tw < tiles(wd, t) + 8) ++tw;
  // Whole tiles: the input padded with zeros at the end (the extra outputs are cut off), and a
  // channel of zeros (input_transform).
  Tensor xq = xp.pad({{0, 0}, {0, 1}, {0, th * m + 2 - xp.dim(2)}, {0, tw * m + 2 - xp.dim(3)}});
  // Stored once: each input element is read by 2.25 overlapping tiles, and an input computed
  // inline (a U-Net decoder's Resize and Concat) would be recomputed that many times.
  xq = materialized(xq);
  Tensor vs = input_transform(xq, t, th, tw);  // (points, P, C)
  // U = G w Gᵀ (K, C, in, in) computed here (in double, once), stored as (a, b, C, K) in panels
  // along K by constant folding.
  Tensor u = Tensor::weight(g, g.fresh_name("winograd_u"), transformed_weight(g, w, t));
  Tensor us = packed_in_panels(u.permute({2, 3, 1, 0}).reshape({points, c, k}), 2);
  Tensor prod = matmul(vs, us);  // (points, P, K)
  // (a, b, N, th, tw, K) -> (N, K, th, tw, a, b), then Aᵀ M A per tile.
  Tensor mt = prod.reshape({in, in, n, th, tw, k}).permute({2, 5, 3, 4, 0, 1});
  Tensor at = matrix(g, "winograd_at", t.at, m, in);
  // Aᵀ M stored with K innermost (N, th, tw, m, in, K), as M is: the final kernel (· A and the
  // epilogue) then has K as a clean vector axis, shared with a downsample convolution fused
  // beside it (whose weights are packed along K).
  Tensor y1 = matmul(at, mt).permute({0, 2, 3, 4, 5, 1}).contiguous().permute({0, 5, 1, 2, 3, 4});
  Tensor y = matmul(y1, at.transpose(0, 1));  // (N, K, th, tw, 4, 4)
  y = y.permute({0, 1, 2, 4, 3, 5}).reshape({n, k, th * m, tw * m});
  if (th * m != h || tw * m != wd) y = y.shrink({{0, n}, {0, k}, {0, h}, {0, wd}});
  return y;
}

}  // namespace kiln
