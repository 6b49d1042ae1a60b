#include "compiler/tensor/weight_layout.h"

#include <algorithm>

#include "compiler/support/error.h"

namespace kiln {

bool is_constant(const Tensor& t) {
  for (const UOp* u : t.uop()->toposort())
    if (u->op == Op::BUFFER && !t.graph()->is_weight(u)) return false;
  return true;
}

int64_t panel_lanes(const Graph& g, int64_t n) {
  int64_t wide = weight_panel_for(g.lowering().vector_bytes);
  if (wide > kWeightPanel && n % wide == 0) return wide;
  return n % kWeightPanel == 0 ? kWeightPanel : 0;
}

Tensor packed_in_panels(const Tensor& w, int64_t axis) {
  int64_t nd = w.ndim();
  if (axis < 0 || axis >= nd || w.dim(axis) % kWeightPanel != 0)
    throw Error(str_cat("packed_in_panels: axis ", axis, " of ", shape_str(w.shape()),
                        " is not a multiple of ", kWeightPanel));
  const int64_t lanes = panel_lanes(*w.graph(), w.dim(axis));
  // Split the axis into (panel, lane): shape (..., A/P, P, ...), axis `axis` and `axis + 1`.
  Shape split = w.shape();
  split[static_cast<size_t>(axis)] = w.dim(axis) / lanes;
  split.insert(split.begin() + axis + 1, lanes);
  // Storage order: panel, the other axes, lane.
  std::vector<int64_t> to_panels = {axis};
  for (int64_t j = 0; j < nd + 1; ++j)
    if (j != axis && j != axis + 1) to_panels.push_back(j);
  to_panels.push_back(axis + 1);
  std::vector<int64_t> back(to_panels.size());
  for (size_t j = 0; j < to_panels.size(); ++j)
    back[static_cast<size_t>(to_panels[j])] = static_cast<int64_t>(j);
  Tensor panels = w.reshape(split).permute(to_panels);
  // A tile streams several panels at once, one vector from each per reduction step. When the
  // panel stride is a multiple of 4 KiB those streams share an L1 set (8 ways) and evict each
  // other before a line's second vector is read (an LSTM step's 128 x 512 weight ran at a third
  // of the speed of the 96 x 384 one); a 64-byte skew per panel spreads them over the sets.
  int64_t rows = w.numel() / w.dim(axis);
  int64_t row_bytes = lanes * w.dtype().itemsize();
  if (rows * row_bytes % kSetAliasBytes == 0 && kCacheLineBytes % row_bytes == 0) {
    Shape stored = panels.shape();
    int64_t skew = kCacheLineBytes / row_bytes;
    Tensor flat = panels.reshape({w.dim(axis) / lanes, rows, lanes});
    panels = flat.pad({{0, 0}, {0, skew}, {0, 0}})
                 .contiguous()
                 .shrink({{0, w.dim(axis) / lanes}, {0, rows}, {0, lanes}})
                 .reshape(stored);
  } else {
    panels = panels.contiguous();
  }
  return panels.permute(back).reshape(w.shape());
}

Tensor packed_in_vector_pairs(const Tensor& w, int64_t axis) {
  int64_t n = w.dim(axis);
  int64_t pair = 2 * std::max(panel_lanes(*w.graph(), n),
                              weight_panel_for(w.graph()->lowering().vector_bytes));
  if (n % pair == 0) return packed_in_panels(w, axis);
  std::vector<std::pair<int64_t, int64_t>> grow(static_cast<size_t>(w.ndim()), {0, 0}), keep;
  grow[static_cast<size_t>(axis)] = {0, pair - n % pair};
  for (int64_t j = 0; j < w.ndim(); ++j) keep.push_back({0, w.dim(j)});
  return packed_in_panels(w.pad(grow, 0.0), axis).shrink(keep);
}

Tensor materialized(const Tensor& t) {
  const UOp* u = t.uop();
  while (u->op == Op::RESHAPE) u = u->src[0];
  return u->op == Op::BUFFER || u->op == Op::CONTIGUOUS ? t : t.contiguous();
}

Tensor packed_for_dot(const Tensor& w) {
  if (w.ndim() != 2 || w.dim(0) % kDotGroup != 0)
    throw Error(str_cat("packed_for_dot: ", shape_str(w.shape()),
                        " is not (K, N) with K a multiple of ", kDotGroup));
  int64_t k = w.dim(0), n = w.dim(1);
  int64_t np = (n + kDotPanel - 1) / kDotPanel * kDotPanel;
  Tensor padded = np == n ? w : w.pad({{0, 0}, {0, np - n}});
  Tensor stored = padded.reshape({k / kDotGroup, kDotGroup, np / kDotPanel, kDotPanel})
                      .permute({2, 0, 3, 1})
                      .contiguous();
  Tensor back = stored.permute({1, 3, 0, 2}).reshape({k, np});
  return np == n ? back : back.shrink({{0, k}, {0, n}});
}

}  // namespace kiln
