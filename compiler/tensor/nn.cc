#include "compiler/tensor/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>
#include <vector>

#include "compiler/support/error.h"
#include "compiler/tensor/channels_last.h"
#include "compiler/tensor/depthwise_taps.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/weight_layout.h"
#include "compiler/tensor/winograd.h"

namespace kiln {

namespace {

std::vector<int64_t> or_default(const std::vector<int64_t>& v, size_t n, int64_t d,
                                const char* what, const char* op) {
  if (v.empty()) return std::vector<int64_t>(n, d);
  if (v.size() != n)
    throw Error(str_cat(op, ": ", what, " has ", v.size(), " values for ", n, " spatial axes"));
  return v;
}

std::vector<std::pair<int64_t, int64_t>> pads_or_zero(
    const std::vector<std::pair<int64_t, int64_t>>& p, size_t n, const char* op) {
  if (p.empty()) return std::vector<std::pair<int64_t, int64_t>>(n, {0, 0});
  if (p.size() != n)
    throw Error(str_cat(op, ": padding has ", p.size(), " pairs for ", n, " spatial axes"));
  return p;
}

// Pads only the trailing `spatial.size()` axes.
Tensor pad_spatial(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& spatial,
                   double value) {
  std::vector<std::pair<int64_t, int64_t>> all(static_cast<size_t>(x.ndim()) - spatial.size(),
                                               {0, 0});
  all.insert(all.end(), spatial.begin(), spatial.end());
  return x.pad(all, value);
}

// The axes [first, first + n).
std::vector<int64_t> axes_from(int64_t first, int64_t n) {
  std::vector<int64_t> a(static_cast<size_t>(n));
  std::iota(a.begin(), a.end(), first);
  return a;
}

// A convolution's output r (N, Co, spatial...) plus its bias (Co) or nullptr.
Tensor with_bias(const Tensor& r, const Tensor* bias) {
  if (!bias) return r;
  int64_t co = r.dim(1);
  if (bias->ndim() != 1 || bias->dim(0) != co)
    throw Error(str_cat("conv: bias ", shape_str(bias->shape()), " for ", co, " channels"));
  Shape bs(static_cast<size_t>(r.ndim()), 1);
  bs[1] = co;
  return r.add(bias->reshape(bs));
}

bool all_ones(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t e) { return e == 1; });
}

bool unpadded(const std::vector<std::pair<int64_t, int64_t>>& pads) {
  return std::all_of(pads.begin(), pads.end(),
                     [](const auto& pad) { return pad.first == 0 && pad.second == 0; });
}

// x (N, C, H, W) padded by `pads` (H, W) and stored channels-last, viewed back as NCHW. The pad
// is applied in the channels-last view, so the padded map is the buffer: a kernel computing x
// stores it straight into the interior (rangeify's realize_padding), where a copy would
// transpose it.
Tensor padded_channels_last(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pads,
                            double value) {
  if (unpadded(pads)) return stored_channels_last(x);
  return x.permute(kToChannelsLast)
      .pad({{0, 0}, pads[0], pads[1], {0, 0}}, value)
      .permute(kFromChannelsLast);
}

// Whether x is a max pool's result over a map materialized channels-last (max_pool reads a
// convolution's output so: the map permuted (N, H, W, C) and stored): such a pool has the
// channels as its lanes, and writes its result channels-last with whole-vector stores where
// NCHW takes a transpose per row of 8 positions.
bool max_pool_over_channels_last(const Tensor& x) {
  const UOp* u = x.uop();
  while (u->op == Op::RESHAPE) u = u->src[0];
  if (u->op != Op::REDUCE_AXIS || u->reduce_arg().op != Op::MAX) return false;
  for (u = u->src[0]; ops::movement().has(u->op); u = u->src[0]) {
  }
  return is_stored_channels_last(u);
}

// The one reduction t is computed from through elementwise ops, reshapes and broadcasts (a
// convolution with its bias, batch norm and activation), or nullptr: such a t is a kernel of its
// own that writes t in whatever layout t is materialized in, with no copy. A concatenation
// (pads), a model input or two reductions are not.
const UOp* only_reduction(const Tensor& t) {
  const UOp* reduction = nullptr;
  std::vector<const UOp*> stack{t.uop()};
  std::unordered_set<const UOp*> seen;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    switch (u->op) {
      case Op::REDUCE_AXIS:
        if (reduction) return nullptr;
        reduction = u;
        continue;
      case Op::CONST:
      case Op::VCONST:
      case Op::BUFFER:
      case Op::DEFINE_VAR:
        continue;
      case Op::PAD:
      case Op::SHRINK:
      case Op::FLIP:
      case Op::WINDOW:
      case Op::GATHER:
      case Op::CONTIGUOUS:
        return nullptr;
      default:
        stack.insert(stack.end(), u->src.begin(), u->src.end());
    }
  }
  return reduction;
}

bool one_reduction(const Tensor& t) {
  return only_reduction(t) != nullptr;
}

// Whether t is a depthwise layer (with its bias and activation) that read its padded map
// channels-last (padded_channels_last, below): t's one reduction reaches, through movement and
// elementwise ops only, a PAD of the map permuted channels-last.
bool depthwise_over_channels_last(const Tensor& t) {
  const UOp* reduction = only_reduction(t);
  if (!reduction) return false;
  std::vector<const UOp*> stack{reduction->src[0]};
  std::unordered_set<const UOp*> seen;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    if (u->op == Op::PAD && u->src[0]->op == Op::PERMUTE && u->src[0]->varg() == kToChannelsLast)
      return true;
    if (u->op == Op::REDUCE_AXIS || u->op == Op::CONTIGUOUS || u->op == Op::BUFFER ||
        u->op == Op::CONST)
      continue;
    stack.insert(stack.end(), u->src.begin(), u->src.end());
  }
  return false;
}

// x padded by `pads` for a window (pad_spatial), or, where `channels_last` asks for it and the
// map is a 2-D one that a kernel of its own computes with its channels as whole vectors
// (one_reduction), padded channels-last (padded_channels_last).
Tensor padded_for_window(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pads,
                         double value, bool channels_last) {
  if (channels_last && x.ndim() == 4 && x.dim(1) % kWeightPanel == 0 && one_reduction(x))
    return padded_channels_last(x, pads, value);
  return pad_spatial(x, pads, value);
}

}  // namespace

Tensor conv(const Tensor& x_in, const Tensor& w, const Tensor* bias, const ConvParams& p) {
  int64_t nsp = x_in.ndim() - 2;
  if (nsp < 1 || nsp > 3)
    throw Error("conv: input must be (N, C, spatial...) with 1-3 spatial axes, got " +
                shape_str(x_in.shape()));
  if (w.ndim() != x_in.ndim())
    throw Error("conv: weight " + shape_str(w.shape()) + " does not match input " +
                shape_str(x_in.shape()));
  if (x_in.dtype() != w.dtype()) throw Error("conv: input and weight dtypes differ");
  int64_t g = p.groups, n = x_in.dim(0), c = x_in.dim(1), co = w.dim(0), cg = w.dim(1);
  if (g < 1 || c % g != 0 || co % g != 0 || cg * g != c)
    throw Error(str_cat("conv: ", c, " input channels, weight ", shape_str(w.shape()),
                        " and groups=", g,
                        " do not fit (need C == weight.dim(1) * groups, Co % groups == 0)"));
  size_t ns = static_cast<size_t>(nsp);
  auto stride = or_default(p.stride, ns, 1, "stride", "conv");
  auto dil = or_default(p.dilation, ns, 1, "dilation", "conv");
  auto pads = pads_or_zero(p.padding, ns, "conv");
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  // A 1x1 layer over a max pool that read its map channels-last (max_pool_over_channels_last;
  // squeezenet's first squeeze layer) reads the pooled map channels-last: the pool then stores
  // whole channel vectors (0.165 -> 0.063 ms on an AMD EPYC at 1 thread) and the layer's loads
  // along its channels are contiguous (0.066 -> 0.043 ms).
  // Only an unstrided 1x1 layer: a padded convolution's input would be copied back to NCHW, a
  // strided one reads a dense copy of its positions (below), and a graph output needs NCHW; a
  // pool that also feeds those is stored in both layouts (docs/performance.md). Likewise a 1x1
  // layer over a small depthwise layer's taps (depthwise_taps.h; mobilenet_v2's projections),
  // whose map and activation are computed channels-last.
  // And, in a package for one thread, a 1x1 layer over a larger depthwise layer that read its
  // padded map channels-last (below; mobilenet_v2's projections at 112x112 to 28x28): the
  // depthwise kernel, whose lanes are channels, then stores whole channel vectors with its
  // activation, and the 1x1 layer's loads along its channels are contiguous, where in NCHW each
  // of its steps loaded one line per channel (at 112x112, 32 lines 50176 bytes apart, in 4 of
  // L1's 64 sets). mobilenet_v2's 112x112 32 -> 16 projection as AVX2 code on an AMD EPYC (Zen
  // 4): 0.54 -> 0.17 ms, its depthwise layer 0.26 -> 0.17; the model 0.954 as AVX2 code, 0.978
  // on AVX-512. Only where the output channels are whole 16-lane tiles, the tile's lanes over
  // this input: a 56x56 144 -> 24 projection's tile covered 32 channels and transposed its
  // stores (0.277 -> 0.332 ms). At 2 threads the model was 0.975-0.984 as AVX2 code, 1.026 on
  // AVX-512: not taken there.
  bool one_by_one = g == 1 && all_ones(kernel) && unpadded(pads);
  bool strided = std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s > 1; });
  bool single_thread = x_in.graph()->lowering().threads == 1;
  // A map the importer stored channels-last (a chain of dense convolutions,
  // frontend/onnx/channels_last_maps.h) is read as it is.
  bool channels_last = is_channels_last_view(x_in);
  Tensor x = channels_last ? x_in
             : one_by_one && all_ones(stride) && nsp == 2 &&
                     (max_pool_over_channels_last(x_in) || reads_channels_last_map(x_in) ||
                      (single_thread && co % 16 == 0 && depthwise_over_channels_last(x_in)))
                 ? stored_channels_last(x_in)
                 : x_in;

  // A strided depthwise layer (mobilenet_v2's and efficientnet_b0's downsampling) over a
  // convolution's output reads its padded map channels-last: the convolution, whose tile has the
  // channels as its lanes, stores whole channel vectors into the padded map's interior
  // (rangeify's realize_padding), and the depthwise layer's lanes are channels, where along W a
  // stride-2 window took two shuffles per vector per tap (mobilenet_v2's 112x112 one 0.321 ->
  // 0.155 ms, as AVX2 code on an AMD EPYC; the model 0.960 / 0.966 at 1 / 2 threads, 0.949 /
  // 0.968 on AVX-512). A small unstrided 3x3 one (at most 14x14) sums its taps over a dense
  // channels-last map instead (depthwise_taps.h). Larger unstrided ones read the padded map
  // channels-last in a package for one thread
  // (mobilenet_v2 0.955 and efficientnet_b0 0.967 on AVX-512, 1.000 and 0.980 as AVX2 code);
  // at 2 threads they stay NCHW, whose rows follow the expansion's split into the projection
  // (channels-last: 1.007 / 1.039 and 1.004 / 0.982, against copies within 2.5%).
  bool depthwise = cg == 1 && co == c;
  if (depthwise && depthwise_taps_pay(x, w, stride, dil) && one_reduction(x))
    return depthwise_by_taps(x, w, bias, pads);
  Tensor xp = padded_for_window(x, pads, 0.0, depthwise && (strided || single_thread));
  for (size_t j = 0; j < ns; ++j)
    if (dil[j] * (kernel[j] - 1) + 1 > xp.dim(static_cast<int64_t>(2 + j)))
      throw Error(str_cat("conv: kernel ", shape_str(kernel), " is larger than the padded input ",
                          shape_str(xp.shape())));
  // A strided 1x1 layer (a ResNet block's downsampling, stride 2) reads a dense copy of the
  // positions it uses: in NCHW each of its tasks (a block of output channels) walked every
  // channel's rows picking every other element of every other row, half the lines of the whole
  // map (resnet50's layer3.0: 0.9 MB, beyond L2 beside the task's weight panel, read again by
  // every task); the copy (a quarter of the map) stays in L2. resnet50's downsampling layers at 2
  // threads, with the 1x1 layer they are fused with: 1.05 -> 0.86 ms (layer3.0), 1.21 -> 1.01
  // (layer4.0); the models 0.990 (resnet50) and 0.971 (resnet18) at 2 threads, 0.99-1.00 at 1
  // (docs/performance.md).
  if (one_by_one && strided) {
    Tensor picked = x.window(kernel, stride, dil);  // (N, C, *o, 1...)
    Shape dense(picked.shape().begin(), picked.shape().begin() + 2 + nsp);
    ConvParams dense_p = p;
    dense_p.stride.assign(ns, 1);
    // (Channels-last from a channels-last map, so the layer stays a matrix product.)
    Tensor copy = channels_last ? stored_channels_last(picked.reshape(dense))
                                : picked.reshape(dense).contiguous();
    return conv(copy, w, bias, dense_p);
  }
  if (winograd_pays(x, w, g, stride, dil, pads)) return with_bias(winograd_conv3x3(xp, w), bias);
  Tensor xw = xp.window(kernel, stride, dil);  // (N, C, *o, *k)
  Shape out_sp(xw.shape().begin() + 2, xw.shape().begin() + 2 + nsp);
  // (N, C, *o, *k) -> (N, g, C/g, *o, *k) -> (N, g, *o, C/g, *k) -> (N, g, 1, *o, C/g, *k)
  Shape s1 = {n, g, cg};
  s1.insert(s1.end(), out_sp.begin(), out_sp.end());
  s1.insert(s1.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> perm = {0, 1};
  for (int64_t j = 0; j < nsp; ++j) perm.push_back(3 + j);
  perm.push_back(2);
  for (int64_t j = 0; j < nsp; ++j) perm.push_back(3 + nsp + j);
  Tensor xs = xw.reshape(s1).permute(perm).unsqueeze(2);
  // (Co, C/g, *k) -> (1, g, Co/g, 1 x nsp, C/g, *k)
  Shape ws = {1, g, co / g};
  ws.insert(ws.end(), ns, 1);
  ws.push_back(cg);
  ws.insert(ws.end(), kernel.begin(), kernel.end());
  // The weight is stored so that a kernel's vector of output channels is one contiguous load:
  // in panels of P output channels (a vector's lanes: panel_lanes), (Co/P, C/g, *k, P), when
  // there are several panels and each group reduces over several channels (a co block then
  // streams its weights contiguously); otherwise (depthwise, few channels) with the output
  // channels innermost, (C/g, *k, Co).
  Tensor w_packed = w;
  int64_t panel = panel_lanes(*w.graph(), co);
  if (panel != 0 && co > panel && cg > 1) {
    // A constant weight gets zero channels up to a vector pair (packed_in_vector_pairs).
    w_packed = is_constant(w) ? packed_in_vector_pairs(w, 0) : packed_in_panels(w, 0);
  } else {
    std::vector<int64_t> to_co_last, from_co_last;
    for (int64_t j = 1; j < w.ndim(); ++j) to_co_last.push_back(j);
    to_co_last.push_back(0);
    from_co_last.push_back(w.ndim() - 1);
    for (int64_t j = 0; j + 1 < w.ndim(); ++j) from_co_last.push_back(j);
    w_packed = w.permute(to_co_last).contiguous().permute(from_co_last);
  }
  Tensor wr = w_packed.reshape(ws);
  Tensor prod = xs.mul(wr);  // (N, g, Co/g, *o, C/g, *k)
  Tensor r = prod.sum(axes_from(3 + nsp, 1 + nsp));
  Shape out = {n, co};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  return with_bias(r.reshape(out), bias);
}

namespace {

struct PoolGeometry {
  std::vector<int64_t> stride, dil;
  std::vector<std::pair<int64_t, int64_t>> pads;  // including the extra end padding of ceil mode
};

PoolGeometry pool_geometry(const Tensor& x, const PoolParams& p, const char* op) {
  int64_t nsp = x.ndim() - 2;
  if (nsp < 1 || static_cast<size_t>(nsp) != p.kernel.size())
    throw Error(str_cat(op, ": kernel ", shape_str(p.kernel), " for input ", shape_str(x.shape())));
  size_t ns = static_cast<size_t>(nsp);
  PoolGeometry g{or_default(p.stride, ns, 1, "stride", op),
                 or_default(p.dilation, ns, 1, "dilation", op), pads_or_zero(p.padding, ns, op)};
  for (size_t j = 0; j < ns; ++j) {
    int64_t i = x.dim(static_cast<int64_t>(2 + j)) + g.pads[j].first + g.pads[j].second;
    int64_t span = g.dil[j] * (p.kernel[j] - 1) + 1;
    if (span > i)
      throw Error(str_cat(op, ": kernel ", shape_str(p.kernel), " larger than padded input ",
                          shape_str(x.shape())));
    if (p.ceil_mode) {
      int64_t out = (i - span + g.stride[j] - 1) / g.stride[j] + 1;
      // The last window must start inside the input or the leading padding.
      if ((out - 1) * g.stride[j] >= x.dim(static_cast<int64_t>(2 + j)) + g.pads[j].first) --out;
      int64_t need = (out - 1) * g.stride[j] + span;
      if (need > i) g.pads[j].second += need - i;
    }
  }
  return g;
}

}  // namespace

Tensor max_pool(const Tensor& x, const PoolParams& p) {
  PoolGeometry g = pool_geometry(x, p, "max_pool");
  double lowest = x.dtype().is_float() ? -std::numeric_limits<double>::infinity()
                                       : static_cast<double>(dtype_min(x.dtype()));
  int64_t nsp = static_cast<int64_t>(p.kernel.size());
  // A 2-D pool over a convolution's output (a stem's: 64 channels at 112x112) reads it
  // channels-last: the convolution, whose tile has the channels as its lanes, then stores whole
  // vectors with no transpose, and the pool's lanes are the channels, contiguous, where along W
  // a stride-2 window gathers every other element (squeezenet's stem 0.42 -> 0.30 ms, its pool
  // 0.16 -> 0.11 ms). The pooled map stays NCHW, as its consumer expects (written
  // channels-last, the pool took 0.065 ms, but a padded convolution's input copied back out of
  // it cost more than that).
  // A padded pool (resnet's stem, padded by 1) pads in the channels-last view
  // (padded_channels_last), so the stem stores into the padded map's interior: resnet18's stem
  // 1.27 -> 1.13 ms, its border 0.022 -> 0.006, its pool 0.114 -> 0.098 on AVX-512. (Padded in
  // NCHW after a channels-last copy, the padded map was a gather per element: 1.7 ms where the
  // pool took 0.2.)
  Tensor w = padded_for_window(x, g.pads, lowest, true).window(p.kernel, g.stride, g.dil);
  return w.max(axes_from(x.ndim(), nsp));
}

std::pair<Tensor, Tensor> max_pool_with_indices(const Tensor& x, const PoolParams& p,
                                                bool column_major) {
  PoolGeometry g = pool_geometry(x, p, "max_pool");
  int64_t nsp = static_cast<int64_t>(p.kernel.size());
  double lowest = x.dtype().is_float() ? -std::numeric_limits<double>::infinity()
                                       : static_cast<double>(dtype_min(x.dtype()));
  Tensor w = pad_spatial(x, g.pads, lowest).window(p.kernel, g.stride, g.dil);
  std::vector<int64_t> kaxes = axes_from(x.ndim(), nsp);
  Tensor values = w.max(kaxes);
  // Each input element's flat index over (N, C, spatial...), spatial row- or column-major,
  // built from per-axis aranges (no table the size of the input).
  Graph& gr = *x.graph();
  Shape sp(x.shape().begin() + 2, x.shape().end());
  int64_t plane = shape_numel(sp);
  Shape nc = {x.dim(0), x.dim(1)};
  for (int64_t k = 0; k < nsp; ++k) nc.push_back(1);
  Tensor base = arange(gr, 0, static_cast<double>(x.dim(0) * x.dim(1) * plane),
                       static_cast<double>(plane), dtypes::int64)
                    .reshape(nc);
  auto flat_index = [&](bool col) {
    Tensor idx = base;
    int64_t stride = 1;
    for (int64_t k = 0; k < nsp; ++k) {
      int64_t d = col ? k : nsp - 1 - k;  // the fastest-varying axis first
      Shape s(static_cast<size_t>(nsp), 1);
      s[static_cast<size_t>(d)] = sp[static_cast<size_t>(d)];
      idx = idx.add(arange(gr, 0, static_cast<double>(sp[static_cast<size_t>(d)]), 1, dtypes::int64)
                        .mul(Tensor::scalar(gr, ConstValue::of_int(stride), dtypes::int64))
                        .reshape(s));
      stride *= sp[static_cast<size_t>(d)];
    }
    return pad_spatial(idx, g.pads, 0.0).window(p.kernel, g.stride, g.dil);
  };
  // The first maximum in scan order (the window is scanned row-major: the smallest row-major
  // index), as ONNX Runtime picks it; then that element's index in the requested order.
  Tensor hit = w.eq(w.max(kaxes, true));
  Tensor big =
      Tensor::scalar(gr, ConstValue::of_int(std::numeric_limits<int64_t>::max()), dtypes::int64);
  Tensor row = flat_index(false);
  Tensor indices = hit.where(row, big).min(kaxes);
  if (column_major) {
    Shape keep = indices.shape();
    keep.insert(keep.end(), static_cast<size_t>(nsp), 1);
    Tensor first = row.eq(indices.reshape(keep));
    Tensor none = Tensor::scalar(gr, ConstValue::of_int(-1), dtypes::int64);
    indices = first.where(flat_index(true), none).max(kaxes);
  }
  return {values, indices};
}

Tensor avg_pool(const Tensor& x, const PoolParams& p) {
  PoolGeometry g = pool_geometry(x, p, "avg_pool");
  int64_t nsp = static_cast<int64_t>(p.kernel.size());
  Tensor sums =
      pad_spatial(x, g.pads, 0.0).window(p.kernel, g.stride, g.dil).sum(axes_from(x.ndim(), nsp));
  // The divisor per output position: every position in the window that is inside the input
  // (or inside the user padding, with count_include_pad); the ceil-mode extension never counts.
  Shape sp(x.shape().begin() + 2, x.shape().end());
  Tensor ones = Tensor::full(*x.graph(), sp, 1.0, x.dtype());
  std::vector<std::pair<int64_t, int64_t>> user =
      pads_or_zero(p.padding, p.kernel.size(), "avg_pool");
  Tensor counted = p.count_include_pad ? ones.pad(user, 1.0) : ones.pad(user, 0.0);
  std::vector<std::pair<int64_t, int64_t>> extra;
  for (size_t j = 0; j < g.pads.size(); ++j)
    extra.push_back({0, g.pads[j].second - user[j].second});
  Tensor counts =
      counted.pad(extra, 0.0).window(p.kernel, g.stride, g.dil).sum(axes_from(nsp, nsp));
  return sums.div(counts);
}

Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                  const Tensor& var, double eps) {
  if (x.ndim() < 2)
    throw Error("batch_norm: input must be (N, C, ...), got " + shape_str(x.shape()));
  int64_t c = x.dim(1);
  for (const Tensor* t : {&scale, &bias, &mean, &var})
    if (t->ndim() != 1 || t->dim(0) != c)
      throw Error(
          str_cat("batch_norm: parameter ", shape_str(t->shape()), " for ", c, " channels"));
  Shape ps = {c};
  ps.insert(ps.end(), static_cast<size_t>(x.ndim() - 2), 1);
  Tensor a = scale.div(var.add(eps).sqrt());
  Tensor b = bias.sub(mean.mul(a));
  return x.mul(a.reshape(ps)).add(b.reshape(ps));
}

Tensor layer_norm(const Tensor& x, int64_t axis, const Tensor* scale, const Tensor* bias,
                  double eps) {
  int64_t a = x.norm_axis(axis, "layer_norm");
  std::vector<int64_t> axes = axes_from(a, x.ndim() - a);
  Tensor mu = x.mean(axes, true);
  Tensor d = x.sub(mu);
  Tensor var = d.mul(d).mean(axes, true);
  Tensor r = d.mul(var.add(eps).sqrt().recip());
  if (scale) r = r.mul(*scale);
  if (bias) r = r.add(*bias);
  return r;
}

Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double eps) {
  if (x.ndim() < 3)
    throw Error("instance_norm: input must be (N, C, spatial...), got " + shape_str(x.shape()));
  std::vector<int64_t> axes = axes_from(2, x.ndim() - 2);
  Tensor mu = x.mean(axes, true);
  Tensor d = x.sub(mu);
  Tensor var = d.mul(d).mean(axes, true);
  Shape ps = {x.dim(1)};
  ps.insert(ps.end(), static_cast<size_t>(x.ndim() - 2), 1);
  return d.mul(var.add(eps).sqrt().recip()).mul(scale.reshape(ps)).add(bias.reshape(ps));
}

Tensor softmax(const Tensor& x, int64_t axis) {
  Tensor e = x.sub(x.max({axis}, true)).exp();
  return e.div(e.sum({axis}, true));
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  Tensor s = x.sub(x.max({axis}, true));
  return s.sub(s.exp().sum({axis}, true).log());
}

Tensor relu(const Tensor& x) {
  return x.maximum(0.0);
}

Tensor gelu(const Tensor& x, bool tanh_approximation) {
  if (tanh_approximation) {
    Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(std::sqrt(2.0 / M_PI));
    return x.mul(0.5).mul(inner.tanh().add(1.0));
  }
  return x.mul(0.5).mul(x.mul(M_SQRT1_2).erf().add(1.0));
}

Tensor silu(const Tensor& x) {
  return x.mul(x.sigmoid());
}

Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) {
  return x.mul(alpha).add(beta).maximum(0.0).minimum(1.0);
}

Tensor hard_swish(const Tensor& x) {
  return x.mul(hard_sigmoid(x, 1.0 / 6.0, 0.5));
}

Tensor clip(const Tensor& x, const Tensor* lo, const Tensor* hi) {
  Tensor r = x;
  if (lo) r = r.maximum(*lo);
  if (hi) r = r.minimum(*hi);
  return r;
}

Tensor leaky_relu(const Tensor& x, double alpha) {
  return x.lt(0.0).where(x.mul(alpha), x);
}

Tensor elu(const Tensor& x, double alpha) {
  return x.lt(0.0).where(x.exp().sub(1.0).mul(alpha), x);
}

Tensor softplus(const Tensor& x) {
  // max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x|.
  return x.maximum(0.0).add(x.abs().neg().exp().add(1.0).log());
}

}  // namespace kiln
