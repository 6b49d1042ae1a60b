#include "compiler/tensor/integer_conv.h"

#include "compiler/support/arith.h"
#include "compiler/support/error.h"
#include "compiler/tensor/weight_layout.h"

namespace kiln {

Tensor conv_u8s8(const Tensor& x, int64_t zx, const Tensor& w, const ConvParams& p) {
  if (x.dtype() != dtypes::uint8 || w.dtype() != dtypes::int8 || x.ndim() != 4 || w.ndim() != 4 ||
      x.dim(1) != w.dim(1) || p.groups != 1 || !is_constant(w))
    throw Error(str_cat("conv_u8s8: needs uint8 (N, C, H, W), a constant int8 (Co, C, KH, KW) and ",
                        "groups 1; got ", x.dtype().str(), " ", shape_str(x.shape()), ", ",
                        w.dtype().str(), " ", shape_str(w.shape()), ", groups ", p.groups));
  std::vector<int64_t> stride = p.stride.empty() ? std::vector<int64_t>{1, 1} : p.stride;
  std::vector<int64_t> dil = p.dilation.empty() ? std::vector<int64_t>{1, 1} : p.dilation;
  auto pads = p.padding.empty() ? std::vector<std::pair<int64_t, int64_t>>(2, {0, 0}) : p.padding;
  if (stride.size() != 2 || dil.size() != 2 || pads.size() != 2)
    throw Error("conv_u8s8: strides, dilations and pads need two spatial axes");
  int64_t n = x.dim(0), c = x.dim(1), co = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  int64_t c4 = round_up(c, kDotGroup), cop = round_up(co, kDotPanel), blocks = c4 / kDotGroup;
  double pad_value = static_cast<double>(zx);

  // x is materialized in its own layout first: fused into its producer, the channel-blocked
  // copy gave that kernel a store with the channels innermost (a quantized depthwise layer
  // before a 1x1 convolution then tiled 2 channels x 8 positions and stored bytes one by one,
  // 5x slower than the float layer).
  Tensor xp = materialized(x).pad({{0, 0}, {0, c4 - c}, pads[0], pads[1]}, pad_value);
  int64_t hp = xp.dim(2), wp = xp.dim(3);
  if (dil[0] * (kh - 1) + 1 > hp || dil[1] * (kw - 1) + 1 > wp)
    throw Error(str_cat("conv_u8s8: kernel ", kh, "x", kw, " is larger than the padded input ",
                        shape_str(xp.shape())));
  // Channel-blocked storage, read back as (N, C4, H', W').
  xp = xp.reshape({n, blocks, kDotGroup, hp, wp})
           .permute({0, 1, 3, 4, 2})
           .contiguous()
           .permute({0, 1, 4, 2, 3})
           .reshape({n, c4, hp, wp});
  Tensor xw = xp.window({kh, kw}, stride, dil);  // (N, C4, OH, OW, KH, KW)
  int64_t oh = xw.dim(2), ow = xw.dim(3);
  // (N, 1, OH, OW, C4/4, KH, KW, 4): the reduction's four channels innermost.
  Tensor xs = xw.reshape({n, blocks, kDotGroup, oh, ow, kh, kw})
                  .permute({0, 3, 4, 1, 5, 6, 2})
                  .unsqueeze(1);

  Tensor wz = w.pad({{0, cop - co}, {0, c4 - c}, {0, 0}, {0, 0}});
  Tensor stored = wz.reshape({cop / kDotPanel, kDotPanel, blocks, kDotGroup, kh, kw})
                      .permute({0, 2, 4, 5, 1, 3})
                      .contiguous();  // (Co/16, C4/4, KH, KW, 16, 4)
  Tensor wv = stored.permute({0, 4, 1, 2, 3, 5}).reshape({cop, blocks, kh, kw, kDotGroup});
  if (cop != co) wv = wv.shrink({{0, co}, {0, blocks}, {0, kh}, {0, kw}, {0, kDotGroup}});
  wv = wv.reshape({1, co, 1, 1, blocks, kh, kw, kDotGroup});

  Tensor acc = xs.cast(dtypes::int32).mul(wv.cast(dtypes::int32)).sum({4, 5, 6, 7});
  if (zx != 0)
    acc = acc.sub(w.cast(dtypes::int32).sum({1, 2, 3}).reshape({1, co, 1, 1}).mul(pad_value));
  return acc;
}

}  // namespace kiln
