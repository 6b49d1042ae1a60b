// GridSample and RoiAlign (opset 16): sampling an image at run-time coordinates.
//
// The grid is data, so the taps are computed by the model: per tap an integer row and column
// (N, Hout, Wout), turned into a flat index into the whole input (batch and channel offsets
// added) and gathered, with a weight and, for zeros padding, a validity mask. Bilinear is 4 taps,
// bicubic 16, nearest 1; everything elementwise fuses around the gathers.
#include "compiler/frontend/onnx/onnx_context.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

struct Sampler {
  NodeContext& n;
  Tensor flat;  // the input, flattened (N*C*H*W)
  Tensor base;  // (N, C, 1, 1): n*C*H*W + c*H*W
  int64_t h, w;
  std::string padding;
  bool align_corners;

  // [min, max] that reflection mirrors at, per axis length.
  std::pair<double, double> border(int64_t len) const {
    return align_corners ? std::make_pair(0.0, static_cast<double>(len - 1))
                         : std::make_pair(-0.5, static_cast<double>(len) - 0.5);
  }

  // A coordinate mirrored into [lo, hi] as often as needed (the spec's reflection).
  static Tensor reflect(const Tensor& x, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0) return x.like(lo).expand(x.shape());
    auto fold = [&](const Tensor& dist, double from, double toward) {
      // dist >= 0 beyond `from`: even folds land at from -/+ r, odd ones at the other border.
      Tensor k = dist.div(range).floor();
      Tensor r = dist.sub(k.mul(range));
      Tensor odd = k.sub(k.div(2.0).floor().mul(2.0)).gt(0.5);
      double dir = toward > from ? 1.0 : -1.0;
      return odd.where(x.like(toward).sub(r.mul(dir)), x.like(from).add(r.mul(dir)));
    };
    Tensor below = fold(x.like(lo).sub(x), lo, hi), above = fold(x.sub(hi), hi, lo);
    return x.lt(lo).where(below, x.gt(hi).where(above, x));
  }

  // The continuous coordinate for the padding mode (border clamps, reflection mirrors).
  Tensor pad_coordinate(const Tensor& x, int64_t len) const {
    if (padding == "border") return x.maximum(0.0).minimum(static_cast<double>(len - 1));
    if (padding == "reflection") {
      auto [lo, hi] = border(len);
      return reflect(x, lo, hi);
    }
    return x;
  }

  // The input at integer (float-valued) rows r and columns c, (N, 1, Ho, Wo) each: (N, C, Ho, Wo).
  Tensor at(const Tensor& r, const Tensor& c) const {
    Tensor rr = r, cc = c, valid;
    if (padding == "zeros") {
      valid = r.ge(r.like(0.0))
                  .logical_and(r.le(r.like(static_cast<double>(h - 1))))
                  .logical_and(c.ge(c.like(0.0)))
                  .logical_and(c.le(c.like(static_cast<double>(w - 1))));
    } else if (padding == "reflection") {
      auto [rlo, rhi] = border(h);
      auto [clo, chi] = border(w);
      rr = reflect(r, rlo, rhi);
      cc = reflect(c, clo, chi);
    }
    // Clamped in every mode: out-of-range taps read a real pixel (then masked for zeros).
    Tensor ri = rr.maximum(0.0).minimum(static_cast<double>(h - 1)).cast(dtypes::int64);
    Tensor ci = cc.maximum(0.0).minimum(static_cast<double>(w - 1)).cast(dtypes::int64);
    Tensor idx = base.add(ri.mul(ri.like(static_cast<double>(w))).add(ci));  // (N, C, Ho, Wo)
    Tensor v = flat.gather(idx, 0);
    return valid.valid() ? valid.where(v, v.like(0.0)) : v;
  }
};

std::vector<Tensor> cubic_weights(const Tensor& t) {  // t in [0, 1): distance past the 2nd tap
  const double a = -0.75;
  auto far = [a](const Tensor& d) {
    return d.mul(a).sub(5 * a).mul(d).add(8 * a).mul(d).sub(4 * a);
  };
  auto near = [a](const Tensor& d) { return d.mul(a + 2).sub(a + 3).mul(d).mul(d).add(1.0); };
  Tensor one = t.like(1.0);
  return {far(t.add(1.0)), near(t), near(one.sub(t)), far(t.like(2.0).sub(t))};
}

V grid_sample(NodeContext& n) {
  Tensor x = n.input(0), grid = n.input(1);
  if (x.ndim() != 4) n.unsupported("GridSample of a rank-" + std::to_string(x.ndim()) + " input");
  if (!x.dtype().is_float()) n.unsupported("GridSample of a non-float input");
  int64_t nb = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (grid.ndim() != 4 || grid.dim(0) != nb || grid.dim(3) != 2)
    n.invalid("grid must be (N, H_out, W_out, 2) with N = " + std::to_string(nb) + ", got " +
              shape_str(grid.shape()));
  if (grid.dtype() != x.dtype()) grid = grid.cast(x.dtype());
  std::string mode = n.attr_string("mode", "bilinear");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    n.invalid("mode '" + mode + "' (bilinear, nearest or bicubic)");
  std::string padding = n.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    n.invalid("padding_mode '" + padding + "' (zeros, border or reflection)");
  bool align = n.attr_int("align_corners", 0) != 0;
  int64_t ho = grid.dim(1), wo = grid.dim(2);

  std::vector<double> offsets;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t k = 0; k < c; ++k) offsets.push_back(static_cast<double>((b * c + k) * h * w));
  Sampler s{n,
            x.reshape({nb * c * h * w}),
            n.constant(make_array(dtypes::int64, {nb, c, 1, 1}, offsets)),
            h,
            w,
            padding,
            align};

  // Grid (x, y) in [-1, 1] to pixel coordinates, (N, 1, Ho, Wo) each.
  auto unnormalize = [&](int64_t k, int64_t len) {
    Tensor g = grid.shrink({{0, nb}, {0, ho}, {0, wo}, {k, k + 1}}).reshape({nb, 1, ho, wo});
    double l = static_cast<double>(len);
    return align ? g.add(1.0).mul((l - 1) / 2) : g.add(1.0).mul(l).sub(1.0).div(2.0);
  };
  // Nearest and bilinear pad the continuous coordinate; bicubic pads each of its 16 taps only
  // (as PyTorch's grid_sample, which the spec follows, does: a bicubic border sample is not the
  // sample at the clamped coordinate).
  Tensor gx = unnormalize(0, w), gy = unnormalize(1, h);
  if (mode != "bicubic") {
    gx = s.pad_coordinate(gx, w);
    gy = s.pad_coordinate(gy, h);
  }

  if (mode == "nearest") return V{s.at(gy.round(), gx.round())};
  Tensor x0 = gx.floor(), y0 = gy.floor();
  Tensor tx = gx.sub(x0), ty = gy.sub(y0);
  if (mode == "bilinear") {
    Tensor one = tx.like(1.0);
    Tensor top = s.at(y0, x0).mul(one.sub(tx)).add(s.at(y0, x0.add(1.0)).mul(tx));
    Tensor bottom =
        s.at(y0.add(1.0), x0).mul(one.sub(tx)).add(s.at(y0.add(1.0), x0.add(1.0)).mul(tx));
    return V{top.mul(one.sub(ty)).add(bottom.mul(ty))};
  }
  std::vector<Tensor> wx = cubic_weights(tx), wy = cubic_weights(ty);
  Tensor out;
  for (int i = 0; i < 4; ++i) {
    Tensor row;
    for (int j = 0; j < 4; ++j) {
      Tensor v = s.at(y0.add(i - 1.0), x0.add(j - 1.0)).mul(wx[static_cast<size_t>(j)]);
      row = row.valid() ? row.add(v) : v;
    }
    Tensor term = row.mul(wy[static_cast<size_t>(i)]);
    out = out.valid() ? out.add(term) : term;
  }
  return V{out};
}

// RoiAlign: per region, a sampling_ratio x sampling_ratio grid of bilinear samples in each output
// bin, averaged (or the largest weighted corner, as ONNX Runtime's max mode). The sample
// positions are elementwise functions of the run-time boxes; the bilinear rules (samples beyond
// one pixel outside read 0, edges clamp) are ONNX Runtime's.
V roi_align(NodeContext& n) {
  Tensor x = n.input(0), rois = n.input(1), batch = n.input(2);
  if (x.ndim() != 4) n.invalid("X must be (N, C, H, W), got " + shape_str(x.shape()));
  if (!x.dtype().is_float()) n.unsupported("RoiAlign of a non-float input");
  if (rois.ndim() != 2 || rois.dim(1) != 4)
    n.invalid("rois must be (num_rois, 4), got " + shape_str(rois.shape()));
  int64_t r = rois.dim(0);
  if (batch.shape() != Shape{r} || !batch.dtype().is_int())
    n.invalid("batch_indices must be integers of shape (" + std::to_string(r) + ")");
  int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3);
  int64_t oh = n.attr_int("output_height", 1), ow = n.attr_int("output_width", 1);
  if (oh < 1 || ow < 1) n.invalid("output_height and output_width must be positive");
  int64_t ratio = n.attr_int("sampling_ratio", 0);
  if (ratio <= 0)
    n.unsupported("sampling_ratio 0 (an adaptive grid whose size depends on each box at run time)");
  std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") n.invalid("mode '" + mode + "' (avg or max)");
  std::string ct = n.opset() >= 16 ? n.attr_string("coordinate_transformation_mode", "half_pixel")
                                   : "output_half_pixel";
  if (ct != "half_pixel" && ct != "output_half_pixel")
    n.invalid("coordinate_transformation_mode '" + ct + "'");
  bool half = ct == "half_pixel";
  double scale = n.attr_float("spatial_scale", 1.0);
  if (rois.dtype() != x.dtype()) rois = rois.cast(x.dtype());

  auto coord = [&](int64_t k) {
    return rois.shrink({{0, r}, {k, k + 1}}).mul(scale).sub(half ? 0.5 : 0.0);  // (R, 1)
  };
  // Sample positions along one axis: start + bin * (p + (i + 0.5) / ratio), (R, out*ratio).
  auto samples = [&](int64_t lo_k, int64_t hi_k, int64_t out) {
    Tensor start = coord(lo_k), size = coord(hi_k).sub(start);
    if (!half) size = size.maximum(1.0);
    Tensor bin = size.div(static_cast<double>(out));
    std::vector<double> t;
    for (int64_t p = 0; p < out; ++p)
      for (int64_t i = 0; i < ratio; ++i)
        t.push_back(static_cast<double>(p) +
                    (static_cast<double>(i) + 0.5) / static_cast<double>(ratio));
    return start.add(bin.mul(n.constant(make_array(x.dtype(), {1, out * ratio}, t))));
  };
  // The bilinear taps along one axis: low, high, the fraction past low, and validity; (R, P).
  struct Axis {
    Tensor lo, hi, frac, valid;
  };
  auto taps = [&](const Tensor& pos, int64_t len) {
    double last = static_cast<double>(len - 1);
    Tensor valid = pos.ge(pos.like(-1.0)).logical_and(pos.le(pos.like(static_cast<double>(len))));
    Tensor p = pos.maximum(0.0);
    Tensor fl = p.floor();
    Tensor at_edge = fl.ge(fl.like(last));
    Tensor lo = at_edge.where(fl.like(last), fl);
    Tensor pc = at_edge.where(p.like(last), p);
    Tensor hi = at_edge.where(fl.like(last), fl.add(1.0));
    return Axis{lo, hi, pc.sub(lo), valid};
  };
  int64_t ph = oh * ratio, pw = ow * ratio;
  Axis ay = taps(samples(1, 3, oh), h), ax = taps(samples(0, 2, ow), w);
  std::vector<double> offsets;
  for (int64_t k = 0; k < c; ++k) offsets.push_back(static_cast<double>(k * h * w));
  Tensor b64 = batch.cast(dtypes::int64);
  Tensor base = b64.mul(b64.like(static_cast<double>(c * h * w)))
                    .reshape({r, 1, 1, 1})
                    .add(n.constant(make_array(dtypes::int64, {1, c, 1, 1}, offsets)));
  Tensor flat = x.reshape({x.numel()});
  auto at = [&](const Tensor& yi, const Tensor& xi) {  // rows (R, ph), columns (R, pw)
    Tensor row = yi.cast(dtypes::int64);
    row = row.mul(row.like(static_cast<double>(w)));
    Tensor idx =
        base.add(row.reshape({r, 1, ph, 1})).add(xi.cast(dtypes::int64).reshape({r, 1, 1, pw}));
    return flat.gather(idx, 0);  // (R, C, ph, pw)
  };
  Tensor ly = ay.frac.reshape({r, 1, ph, 1}), lx = ax.frac.reshape({r, 1, 1, pw});
  Tensor hy = ly.like(1.0).sub(ly), hx = lx.like(1.0).sub(lx);
  Tensor valid = ay.valid.reshape({r, 1, ph, 1}).logical_and(ax.valid.reshape({r, 1, 1, pw}));
  std::vector<Tensor> corners = {at(ay.lo, ax.lo).mul(hy.mul(hx)), at(ay.lo, ax.hi).mul(hy.mul(lx)),
                                 at(ay.hi, ax.lo).mul(ly.mul(hx)),
                                 at(ay.hi, ax.hi).mul(ly.mul(lx))};
  Shape bins = {r, c, oh, ratio, ow, ratio};
  Tensor v = mode == "avg" ? corners[0].add(corners[1]).add(corners[2]).add(corners[3])
                           : corners[0].maximum(corners[1]).maximum(corners[2]).maximum(corners[3]);
  v = valid.where(v, x.like(0.0)).reshape(bins);
  return V{mode == "avg" ? v.mean({3, 5}) : v.max({3, 5})};
}

}  // namespace

void register_sampling_ops(OpRegistry& r) {
  r["GridSample"] = grid_sample;
  r["RoiAlign"] = roi_align;
}

}  // namespace kiln::onnxfe
