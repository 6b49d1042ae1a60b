// NonMaxSuppression (opsets 10-11): greedy selection per batch and class, its output's length a
// size computed from data (Graph::counted: planned at a bound, reporting the boxes selected).
//
// As ONNX Runtime does it: candidates are the boxes whose score is above score_threshold, taken
// in order of score (ties: the lower box index first); a candidate is selected unless a box
// already selected in its class overlaps it with an IoU above iou_threshold (boxes of no area
// never overlap), until max_output_boxes_per_class are selected. Output rows (batch, class, box)
// are ordered by batch, class, then selection.
//
// Built in the sorted order: each box's rank among its class's scores (pairwise comparisons), the
// boxes gathered in that order and their IoU matrix, then the selection as a loop group over the
// ranks (the state: which ranks are selected, and how many), and the selected boxes gathered into
// rows: per class the j-th selected (a prefix count), then the classes placed one after another.
// O(batches x classes x boxes^2) work and memory: meant for up to a few thousand boxes.
#include <algorithm>
#include <optional>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/indexing.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// Corners (x_min, y_min, x_max, y_max) of boxes [..., 4] in either ONNX encoding.
std::vector<Tensor> corners(const Tensor& b, bool center) {
  int64_t last = b.ndim() - 1;
  auto col = [&](int64_t i) {
    std::vector<std::pair<int64_t, int64_t>> s;
    for (int64_t d = 0; d < b.ndim(); ++d)
      s.push_back(d == last ? std::make_pair(i, i + 1)
                            : std::make_pair<int64_t, int64_t>(0, b.dim(d)));
    return b.shrink(s).squeeze({last});
  };
  if (center) {  // [x_center, y_center, width, height]
    Tensor xc = col(0), yc = col(1), hw = col(2).mul(0.5), hh = col(3).mul(0.5);
    return {xc.sub(hw), yc.sub(hh), xc.add(hw), yc.add(hh)};
  }
  // [y1, x1, y2, x2], any two opposite corners
  Tensor y1 = col(0), x1 = col(1), y2 = col(2), x2 = col(3);
  return {x1.minimum(x2), y1.minimum(y2), x1.maximum(x2), y1.maximum(y2)};
}

V non_max_suppression(NodeContext& n) {
  Graph& g = n.graph();
  Tensor boxes = n.input(0), scores = n.input(1);
  if (boxes.ndim() != 3 || boxes.dim(2) != 4)
    n.invalid("boxes must be (batches, boxes, 4), got " + shape_str(boxes.shape()));
  if (scores.ndim() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    n.invalid("scores must be (batches, classes, boxes) for boxes " + shape_str(boxes.shape()) +
              ", got " + shape_str(scores.shape()));
  if (!boxes.dtype().is_float() || scores.dtype() != boxes.dtype())
    n.invalid("boxes and scores must be floats of one dtype");
  if (g.in_loop_body())
    n.unsupported("NonMaxSuppression inside a loop group's body (loops do not nest yet)");
  const int64_t B = boxes.dim(0), C = scores.dim(1), N = boxes.dim(1);
  if (B * C * N == 0) n.unsupported("NonMaxSuppression of no boxes");
  bool center = n.attr_int("center_point_box", 0) != 0;
  DType f = boxes.dtype();
  // max_output_boxes_per_class: none selected when absent (the spec's default 0).
  Tensor max_out = n.has_input(2) ? n.input(2).reshape({}).cast(dtypes::int64)
                                  : Tensor::full(g, {}, 0, dtypes::int64);
  int64_t per_class = N;  // selected per class at most, for the bound
  if (n.has_input(2) && n.input_is_const(2))
    per_class = std::clamp<int64_t>(n.const_ints(2).at(0), 0, N);
  Tensor iou_threshold =
      n.has_input(3) ? n.input(3).reshape({}).cast(f) : Tensor::full(g, {}, 0, f);

  // Ranks: box i comes after box j when j scores higher, or as high with a lower index.
  Tensor s_i = scores.unsqueeze(3), s_j = scores.unsqueeze(2);  // (B, C, N, 1), (B, C, 1, N)
  Tensor ii = iota(n, N).reshape({N, 1}), jj = iota(n, N).reshape({1, N});
  Tensor before = s_j.gt(s_i).logical_or(s_j.eq(s_i).logical_and(jj.lt(ii)));  // (B, C, N, N)
  Tensor rank = before.cast(dtypes::int64).sum({3});                           // (B, C, N)
  // The box of each rank, and its flat index into (B * N) boxes.
  Tensor at_rank = rank.unsqueeze(2).eq(iota(n, N).reshape({N, 1}));  // (B, C, k, i)
  Tensor sorted = at_rank.where(iota(n, N).reshape({1, N}), ii.like(0.0).reshape({1, 1}))
                      .sum({3});  // (B, C, N): box index
  Tensor flat = sorted.add(iota(n, B).mul(ii.like(static_cast<double>(N))).reshape({B, 1, 1}));
  Tensor sorted_scores =
      scores.reshape({B * C * N})
          .gather(
              sorted.add(iota(n, B * C).mul(ii.like(static_cast<double>(N))).reshape({B, C, 1})),
              0);  // (B, C, N)
  Tensor candidate = n.has_input(4) ? sorted_scores.gt(n.input(4).reshape({}).cast(f))
                                    : Tensor::full(g, {B, C, N}, 1, dtypes::bool_);
  // The IoU of every two boxes in rank order, per class: suppress[l][k] when box l (selected
  // first) overlaps box k by more than the threshold.
  std::vector<Tensor> c = corners(boxes.reshape({B * N, 4}).gather(flat, 0), center);  // (B,C,N)
  auto pair = [](const Tensor& t) { return std::make_pair(t.unsqueeze(3), t.unsqueeze(2)); };
  auto [x0l, x0k] = pair(c[0]);
  auto [y0l, y0k] = pair(c[1]);
  auto [x1l, x1k] = pair(c[2]);
  auto [y1l, y1k] = pair(c[3]);
  Tensor zero = x0l.like(0.0);
  Tensor area_l = x1l.sub(x0l).mul(y1l.sub(y0l)), area_k = x1k.sub(x0k).mul(y1k.sub(y0k));
  Tensor inter = x1l.minimum(x1k)
                     .sub(x0l.maximum(x0k))
                     .maximum(zero)
                     .mul(y1l.minimum(y1k).sub(y0l.maximum(y0k)).maximum(zero));
  Tensor uni = area_l.add(area_k).sub(inter);
  Tensor overlaps = area_l.gt(zero).logical_and(area_k.gt(zero)).logical_and(inter.gt(zero));
  Tensor safe_uni = overlaps.where(uni, uni.like(1.0));
  Tensor suppress = overlaps.logical_and(inter.div(safe_uni).gt(iou_threshold));  // (B,C,N,N)

  // The selection, rank by rank: a loop group over the N ranks.
  int loop =
      g.begin_loop(n.where(), Tensor::full(g, {}, static_cast<double>(N), dtypes::int64).uop(), N);
  Tensor keep, count;
  try {
    Tensor k(&g, g.loop_iteration(loop));
    Tensor kept(&g, g.add_loop_state(loop, Tensor::full(g, {B, C, N}, 0, dtypes::bool_).uop()));
    Tensor taken(&g, g.add_loop_state(loop, Tensor::full(g, {B, C}, 0, dtypes::int64).uop()));
    Tensor suppressed =
        kept.logical_and(suppress.gather(k, 3)).cast(dtypes::int64).max({2}).gt(taken.like(0.0));
    Tensor select = candidate.gather(k, 2)
                        .logical_and(suppressed.logical_not())
                        .logical_and(taken.lt(max_out));  // (B, C)
    Tensor next_kept = iota(n, N).eq(k).logical_and(select.unsqueeze(2)).logical_or(kept);
    Tensor next_taken = taken.add(select.cast(dtypes::int64));
    std::vector<const UOp*> out = g.end_loop(loop, {next_kept.uop(), next_taken.uop()}, {});
    keep = Tensor(&g, out[0]);
    count = Tensor(&g, out[1]);
  } catch (...) {
    g.abandon_loop(loop);
    throw;
  }

  // Per class, the box of its j-th selection (j < per_class).
  int64_t J = std::max<int64_t>(per_class, 1);
  Tensor nth = cumsum(keep.cast(dtypes::int64), 2);  // (B, C, N): selections up to each rank
  Tensor is_j = keep.unsqueeze(2).logical_and(
      nth.unsqueeze(2).eq(iota(n, J).add(ii.like(1.0).reshape({1})).reshape({J, 1})));  // (B,C,J,N)
  Tensor pick = is_j.where(sorted.unsqueeze(2), ii.like(0.0).reshape({1, 1, 1, 1})).sum({3});
  // The classes one after another: output row r is selection r - offset of entry (b, c).
  Tensor counts = count.reshape({B * C});
  Tensor offset = cumsum(counts, 0, true);
  std::optional<NodeContext::Rows> rows = n.declared_rows(0);
  int64_t R = rows ? rows->bound : B * C * per_class;
  if (R < 1) R = 1;
  Tensor r = iota(n, R).reshape({R, 1});
  Tensor hit = r.ge(offset.reshape({1, B * C}))
                   .logical_and(r.lt(offset.add(counts).reshape({1, B * C})));  // (R, B*C)
  Tensor e = iota(n, B * C).reshape({1, B * C});
  Tensor flat_pick = e.mul(e.like(static_cast<double>(J))).add(r).sub(offset.reshape({1, B * C}));
  Tensor none = r.like(0.0).reshape({1, 1});
  Tensor entry = hit.where(e, none).sum({1});  // (R,)
  Tensor box = pick.reshape({B * C * J}).gather(hit.where(flat_pick, none).sum({1}), 0);
  Tensor cls = entry.mod(entry.like(static_cast<double>(C)));
  Tensor batch = entry.sub(cls).div(entry.like(static_cast<double>(C)));
  Tensor selected = concat({batch.unsqueeze(1), cls.unsqueeze(1), box.unsqueeze(1)}, 1);
  Tensor total = counts.sum();
  std::string out_name = n.wants_output(0) ? n.node().output(0) : n.name();
  return V{Tensor(&g, g.counted(n.where(), out_name + ".rows", selected.uop(), total.uop(),
                                rows ? rows->symbol : -1))};
}

}  // namespace

void register_detection_ops(OpRegistry& r) {
  r["NonMaxSuppression"] = non_max_suppression;
}

}  // namespace kiln::onnxfe
