// Rangeify's kernels that store into a region of another buffer: a concatenation's parts into
// their regions of it, a padded map's interior, and the fill kernels of its border
// (rangeify_lowerer.h).
#include "compiler/schedule/rangeify_lowerer.h"

#include <algorithm>

#include "compiler/ir/printer.h"
#include "compiler/ir/symbolic.h"
#include "compiler/support/error.h"
#include "compiler/tensor/indexing.h"

namespace kiln::rangeify_internal {

// The border of a padded map whose interior another kernel stores (realize_padding): one
// kernel per padded axis a, over the slab where the axes before a lie inside the map, a in
// its pads and the axes after it anywhere. The slabs tile the border exactly and each is a
// plain store of the fill value (one kernel over the whole map, gated to its border, walked
// every interior row too: 0.19 of mobilenet_v2's 4.4 ms).
void Lowerer::build_border_kernels(const UOp* p, int out) {
  const auto& pads = p->varg();
  const Shape& shape = p->shape();
  const Shape& inner = p->src[0]->shape();
  for (size_t a = 0; a < shape.size(); ++a) {
    int64_t lead = pads[2 * a], trail = pads[2 * a + 1];
    if (lead == 0 && trail == 0) continue;
    begin_kernel(p, out, -1, false);
    fused_.push_back(p);
    Idx at;
    int64_t visits = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t n = i < a ? inner[i] : i == a ? lead + trail : shape[i];
      const UOp* r = loop_axis(ctx_.const_index(n));
      if (i < a)
        at.push_back(simplify(r->add(pads[2 * i])));
      else if (i == a)
        at.push_back(simplify(r->lt(lead)->where(r, r->add(inner[a]))));
      else
        at.push_back(r);
      visits *= n;
    }
    // Named after the node padded, marked as its border ("c2 (border)" in a profile).
    if (finish_kernel(p, linear_index(at, shape), shape_numel(shape), p->src[1], visits))
      for (std::string& o : res_.kernels.back().origins) o += " (border)";
  }
}

// The parts of a concatenation concat_in_place takes (rangeify_lowerer.h).
std::optional<ConcatParts> Lowerer::in_place_parts(const UOp* root) const {
  // The sum's terms: a tree of joins that nothing else reads, with PADs as leaves (asked first:
  // any node may come here, one without a tensor shape too).
  std::optional<ConcatParts> c = concat_parts(root, [&](const UOp* t) { return users_of(t) == 1; });
  if (!c || c->parts.size() > 64) return std::nullopt;
  if (extents_.symbolic(root) || shape_numel(root->shape()) == 0) return std::nullopt;
  for (const auto& [off, x] : c->parts)
    if (extents_.symbolic(x)) return std::nullopt;
  return c;
}

// A concatenation (concat(): a sum of its parts, each padded with zeros to the whole along one
// axis) computed by its own kernel reads every part through a gate and writes it again:
// squeezenet1_1's eight Concat kernels took 0.37 of its 4.4 ms. Instead each part's kernel
// stores into its region of the concatenation's buffer (at an offset along the axis), and the
// concatenation has no kernel of its own. A part that other nodes read too is computed into its
// region by a kernel of its own when it is cheap (a view, elementwise work over buffers), else
// kept in its buffer and copied there, as is a part already in one (an input, a weight).
// parallel_groups runs the writers of one buffer in different groups.
bool Lowerer::concat_in_place(const UOp* root, int out) {
  std::optional<ConcatParts> c = in_place_parts(root);
  if (!c) return false;
  size_t axis = c->axis;
  const auto& parts = c->parts;
  for (const auto& [off, x] : parts) {
    Placement place{root->shape(), axis, ctx_.const_index(off)};
    bool own = !realized_.count(x) && x->op != Op::BUFFER && x->op != Op::CONST &&
               users_of(x) == 1 && !into_.count(x);
    res_.fusion_log.push_back(str_cat(res_.kernels.size(), " ", describe_node(root), ": ",
                                      describe_node(x),
                                      " -> stored into its region of the concatenation"));
    if (own) {
      realized_[x] = out;
      into_.emplace(x, place);
      reaches_reduction_.clear();  // walks through x now stop at its buffer
      work_.push_back(x);
      continue;
    }
    bool in_buffer = x->op == Op::BUFFER || realized_.count(x);
    if (!in_buffer && !reaches_reduction(x)) {
      build_kernel(x, out, false, &place);
      continue;
    }
    if (!in_buffer) realize(x);
    build_kernel(x, out, true, &place);
  }
  return true;
}

// A padded map read in a reduction is written out with its border (lower_uncached). When its
// interior is a value some kernel computes anyway (a convolution's output, padded for a
// depthwise convolution or a max pool), that kernel stores it straight into the interior of
// the padded buffer and a second kernel writes only the border's fill: a copy kernel read
// every value again and wrote it with its border (mobilenet_v2's 17 copies took 0.64 of its
// 5.2 ms). Only when the padded rows' interiors are whole vectors of the target: the
// producer's tile then walks them as it would its own rows, where a 28- or 56-wide interior
// split its merged positions into rows padded to 32 or 64 lanes (efficientnet_b0's 40 -> 240
// expansion at 28x28 ran 0.12 -> 0.26 ms, more than the copy it saved). The interior's kernel
// is queued first: parallel_groups chains one buffer's writers
// in launch order, so the buffer lives from the interior's group on, and the border's kernel,
// having no inputs, is not hoisted to the first group (every padded map live at once).
// True when PAD p leaves its last axis alone or that axis's interior is whole vectors.
bool Lowerer::whole_vector_rows(const UOp* p) const {
  if (p->shape().empty()) return false;
  size_t last = p->shape().size() - 1;
  const auto& pads = p->varg();
  if (pads[2 * last] == 0 && pads[2 * last + 1] == 0) return true;
  int64_t lanes = std::max<int64_t>(1, g_.lowering().vector_bytes / p->dtype.itemsize());
  return p->src[0]->shape()[last] % lanes == 0;
}

int Lowerer::realize_padding(const UOp* p) {
  if (auto it = realized_.find(p); it != realized_.end()) return it->second;
  const UOp* x = p->src[0];
  const auto& pads = p->varg();
  bool in_place = p->src[1]->op == Op::CONST && !extents_.symbolic(p) && varies_in(p) < 0 &&
                  std::all_of(
                      pads.begin(), pads.end(), [](int64_t v) { return v >= 0; }) &&
                  x->op != Op::BUFFER && x->op != Op::CONST && x->op != Op::CONTIGUOUS &&
                  !realized_.count(x) && !into_.count(x) && users_of(x) == 1 &&
                  whole_vector_rows(p) && reaches_reduction(x);
  if (!in_place) return realize(p);
  int id = new_buffer("t" + std::to_string(p->id()), BufferKind::Intermediate, p);
  realized_[p] = id;
  Placement place{p->shape()};
  for (size_t i = 0; i < p->shape().size(); ++i) place.shift.push_back(pads[2 * i]);
  realized_[x] = id;
  into_.emplace(x, place);
  reaches_reduction_.clear();  // walks through x and p now stop at the buffer
  res_.fusion_log.push_back(str_cat(res_.kernels.size(), " ", describe_node(p), ": ",
                                    describe_node(x),
                                    " -> stored into the interior of the padded map"));
  work_.push_back(x);
  borders_.insert(p);
  work_.push_back(p);
  return id;
}

}  // namespace kiln::rangeify_internal
