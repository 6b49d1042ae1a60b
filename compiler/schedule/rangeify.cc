#include "compiler/schedule/rangeify.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/printer.h"
#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/ir/verify.h"
#include "compiler/schedule/extents.h"
#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

namespace {

using Idx = std::vector<const UOp*>;

struct MemoKey {
  const UOp* node;
  const UOp* valid;
  Idx idx;
  bool operator==(const MemoKey&) const = default;
};
struct MemoHash {
  size_t operator()(const MemoKey& k) const {
    size_t h = std::hash<const void*>{}(k.node) * 31 + std::hash<const void*>{}(k.valid);
    for (const UOp* u : k.idx) h = h * 1000003 + std::hash<const void*>{}(u);
    return h;
  }
};

// The deepest expression one kernel computes (nodes from the store to a leaf).
constexpr int kMaxFusedDepth = 256;

// Where a part of a concatenation is stored (concat_in_place): the whole's shape and the part's
// offset along the axis.
// A loop's stacked output is stored the same way, a new axis at row `iteration` (a symbol).
// A padded map's interior (pad_in_place) is offset along every padded axis: `shift`.
struct Placement {
  Shape layout;
  size_t axis = 0;
  const UOp* offset = nullptr;      // nullptr: none along `axis`
  bool new_axis = false;            // `layout` has one more axis, at `axis`, indexed by `offset`
  std::vector<int64_t> shift = {};  // per axis of `layout`, added to the index (empty: none)
};

// A kernel queued with its output and region given (a loop's initial, carry and stacked
// kernels), rather than a node realized into its own buffer.
struct Job {
  const UOp* node;
  int out;
  bool copy;  // copy `node`'s buffer (or the buffer it is) instead of computing it
  std::optional<Placement> place;
  int loop;
  bool carry;
};

class Lowerer {
 public:
  Lowerer(Graph& g, const FusionPolicy& policy)
      : g_(g), ctx_(g.ctx()), policy_(policy), extents_(compute_extents(g)) {}

  RangeifyResult run() {
    index_loops();
    count_consumers();
    for (const GraphInput& in : g_.inputs()) {
      int id = new_buffer(in.name, BufferKind::Input, in.buffer);
      realized_[in.buffer] = id;
      res_.inputs.push_back(id);
      res_.buffers[static_cast<size_t>(id)].value_symbols = in.value_symbols;
    }
    for (const GraphOutput& out : g_.outputs()) {
      int id = new_buffer(out.name, BufferKind::Output, out.node);
      res_.outputs.push_back(id);
      bool copy = out.node->op == Op::BUFFER || realized_.count(out.node);
      if (copy) {
        copies_.push_back({out.node, id});
      } else {
        realized_[out.node] = id;
        work_.push_back(out.node);
      }
    }
    for (auto& [node, id] : copies_) build_kernel(node, id, true);
    // Every loop is scheduled, also one whose results nothing reads: its symbols are in the
    // plan's table, which the runtime checks are each set by an input or a loop.
    for (size_t l = 0; l < g_.loops().size(); ++l) schedule_loop(static_cast<int>(l));
    for (size_t c = 0; c < g_.counts().size(); ++c) schedule_count(static_cast<int>(c));
    // Realized nodes first: a loop's stacked value that some kernel realizes anyway is then
    // copied into its row, not computed a second time.
    while (!work_.empty() || !jobs_.empty()) {
      if (work_.empty()) {
        Job j = jobs_.front();
        jobs_.pop_front();
        // (Realized since it was queued: copied from its buffer, not computed again.)
        bool copy = j.copy || j.node->op == Op::BUFFER || realized_.count(j.node);
        build_kernel(j.node, j.out, copy, j.place ? &*j.place : nullptr, j.loop, j.carry);
        continue;
      }
      const UOp* n = work_.front();
      work_.pop_front();
      build_kernel(n, realized_.at(n), false, nullptr, varies_in(n), false);
    }
    return std::move(res_);
  }

 private:
  int new_buffer(const std::string& name, BufferKind kind, const UOp* node) {
    PlanBuffer b;
    b.id = static_cast<int>(res_.buffers.size());
    b.name = name;
    b.kind = kind;
    b.dtype = node->dtype;
    b.shape = node->shape();
    if (kind == BufferKind::Weight) b.weight_id = node->buffer().id;
    if (kind != BufferKind::Weight && extents_.symbolic(node)) b.extents = extents_.of(node);
    res_.buffers.push_back(b);
    return b.id;
  }

  int realize(const UOp* n) {
    if (auto it = realized_.find(n); it != realized_.end()) return it->second;
    int id = new_buffer("t" + std::to_string(n->id()), BufferKind::Intermediate, n);
    realized_[n] = id;
    // Walks through `n` now stop at its buffer: only a walk that went through n and found a
    // reduction below it can change (every walk caches the nodes it passes), so the cache is kept
    // otherwise (an unrolled loop's chain is split every few hundred nodes: clearing each time
    // re-walked the rest of the chain, quadratic).
    if (auto it = reaches_reduction_.find(n); it != reaches_reduction_.end() && it->second)
      reaches_reduction_.clear();
    work_.push_back(n);
    return id;
  }

  int buffer_of_leaf(const UOp* n) {
    if (auto it = realized_.find(n); it != realized_.end()) return it->second;
    if (auto it = loop_results_.find(n); it != loop_results_.end()) {
      schedule_loop(it->second);
      return realized_.at(n);
    }
    if (auto it = counted_outs_.find(n); it != counted_outs_.end()) {
      const GraphCounted& c = g_.counted_values()[static_cast<size_t>(it->second)];
      int id = new_buffer(n->buffer().name, BufferKind::Intermediate, n);
      realized_[n] = id;
      jobs_.push_back({c.value, id, false, std::nullopt, -1, false});
      return id;
    }
    KILN_CHECK(g_.is_weight(n), "BUFFER that is neither an input nor a weight: ", describe_node(n));
    int id = new_buffer(n->buffer().name, BufferKind::Weight, n);
    realized_[n] = id;
    return id;
  }

  // ---------------------------------------------------------------- one kernel

  // `place`: store into a region of a concatenation's buffer (concat_in_place); a part queued
  // to compute itself there finds its region in into_.
  void build_kernel(const UOp* root, int out, bool copy, const Placement* place = nullptr,
                    int loop = -1, bool carry = false) {
    if (!place) {
      auto it = into_.find(root);
      if (it != into_.end()) place = &it->second;
    }
    if (!copy && !place && concat_in_place(root, out)) return;
    if (borders_.count(root)) return build_border_kernels(root, out);
    begin_kernel(
        root, out,
        std::max({loop, varies_in(root), place && place->offset ? varies_in(place->offset) : -1}),
        carry);
    const Shape& shape = root->shape();
    Idx idx;
    // A symbolic axis loops to its extent (the values it holds at run time), not its bound.
    for (size_t i = 0; i < shape.size(); ++i) idx.push_back(loop_axis(extents_.axis(root, i)));
    const UOp* t = ctx_.const_bool(true);
    const UOp* value;
    if (copy)
      value = root->op == Op::BUFFER ? load(buffer_of_leaf(root), root, idx, t)
                                     : load(realized_.at(root), root, idx, t);
    else if (root->op == Op::CONTIGUOUS)
      value = lower(root->src[0], idx, t);
    else
      value = compute(root, idx, t);
    // A part of a concatenation stores into its region of the whole (concat_in_place).
    const Shape& layout = place ? place->layout : shape;
    Idx at = idx;
    if (place && place->new_axis)
      at.insert(at.begin() + static_cast<std::ptrdiff_t>(place->axis), place->offset);
    else if (place && place->offset)
      at[place->axis] = simplify(idx[place->axis]->add(place->offset));
    for (size_t i = 0; place && i < place->shift.size(); ++i)
      if (place->shift[i] != 0) at[i] = simplify(at[i]->add(place->shift[i]));
    finish_kernel(root, linear_index(at, layout), shape_numel(layout), value, shape_numel(shape));
  }

  void begin_kernel(const UOp* root, int out, int loop, bool carry) {
    root_ = root;
    loop_ = loop;
    carry_ = carry;
    args_.assign(1, out);
    arg_of_.clear();
    arg_of_[out] = 0;
    memo_.clear();
    loops_.clear();
    fused_.clear();
    next_range_ = 0;
  }

  // The index of one output axis of `extent` values: a loop, or 0 for a static extent of 1.
  const UOp* loop_axis(const UOp* extent) {
    if (extent->is_const(0) || extent->is_const(1)) return ctx_.const_index(0);
    const UOp* r = ctx_.range(extent, next_range_++, AxisKind::Loop);
    loops_.push_back(r);
    return r;
  }

  // The kernel storing `value` at `out_idx` of its output (argument 0, `out_numel` elements),
  // over loops that visit `visits` indices.
  bool finish_kernel(const UOp* root, const UOp* out_idx, int64_t out_numel, const UOp* value,
                     int64_t visits) {
    const UOp* g =
        ctx_.make(Op::DEFINE_GLOBAL, DType::ptr(root->dtype.scalar, out_numel), {}, int64_t{0});
    const UOp* store =
        ctx_.make(Op::STORE, dtypes::void_, {ctx_.make(Op::INDEX, g->dtype, {g, out_idx}), value});
    const UOp* ast = graph_rewrite(ctx_.make(Op::SINK, dtypes::void_, {store}), pm_symbolic());
    ast = drop_unused_args(ast);
    verify(ast, IrStage::Kernel);
    // A tensor with no elements needs no kernel (its empty loops simplify away, so a kernel
    // would store once); its buffer still exists, with zero bytes.
    if (visits == 0) return false;
    res_.kernels.push_back({ast, args_, describe_node(root), fused_origins(), loop_, carry_});
    return true;
  }

  // The border of a padded map whose interior another kernel stores (realize_padding): one
  // kernel per padded axis a, over the slab where the axes before a lie inside the map, a in
  // its pads and the axes after it anywhere. The slabs tile the border exactly and each is a
  // plain store of the fill value (one kernel over the whole map, gated to its border, walked
  // every interior row too: 0.19 of mobilenet_v2's 4.4 ms).
  void build_border_kernels(const UOp* p, int out) {
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

  // A concatenation (concat(): a sum of its parts, each padded with zeros to the whole along one
  // axis) computed by its own kernel reads every part through a gate and writes it again:
  // squeezenet1_1's eight Concat kernels took 0.37 of its 4.4 ms. Instead each part's kernel
  // stores into its region of the concatenation's buffer (at an offset along the axis), and the
  // concatenation has no kernel of its own. A part that other nodes read too is computed into its
  // region by a kernel of its own when it is cheap (a view, elementwise work over buffers), else
  // kept in its buffer and copied there, as is a part already in one (an input, a weight).
  // parallel_groups runs the writers of one buffer in different groups.
  bool concat_in_place(const UOp* root, int out) {
    if (extents_.symbolic(root) || shape_numel(root->shape()) == 0) return false;
    Op join = root->dtype.is_bool() ? Op::OR : Op::ADD;
    if (root->op != join) return false;
    // The sum's terms: a tree of `join` nodes that nothing else reads, with PADs as leaves.
    std::vector<const UOp*> terms, stack{root};
    while (!stack.empty()) {
      const UOp* t = stack.back();
      stack.pop_back();
      if (t->op == join && t->shape() == root->shape() && (t == root || users_of(t) == 1)) {
        stack.push_back(t->src[1]);
        stack.push_back(t->src[0]);
      } else {
        terms.push_back(t);
      }
    }
    if (terms.size() < 2 || terms.size() > 64) return false;
    size_t axis = SIZE_MAX;
    std::vector<std::pair<int64_t, const UOp*>> parts;  // (offset, part)
    for (const UOp* t : terms) {
      if (t->op != Op::PAD || users_of(t) != 1 || t->src[1]->op != Op::CONST ||
          !t->src[1]->is_const(0) || extents_.symbolic(t->src[0]))
        return false;
      const auto& p = t->varg();
      for (size_t i = 0; i < t->shape().size(); ++i) {
        if (p[2 * i] == 0 && p[2 * i + 1] == 0) continue;
        if (axis != SIZE_MAX && axis != i) return false;
        axis = i;
      }
      if (axis == SIZE_MAX) return false;
      parts.push_back({p[2 * axis], t->src[0]});
    }
    // The regions tile the axis exactly.
    std::sort(parts.begin(), parts.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t next = 0;
    for (const auto& [off, x] : parts) {
      if (off != next) return false;
      next += x->shape()[axis];
    }
    if (next != root->shape()[axis]) return false;
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

  // Where PAD `p`'s index `idx` falls on its input, not on the fill: every padded axis between
  // its leading pad and that plus the input's extent (past a symbolic axis's extent the input
  // holds no values: the fill, as beyond it).
  const UOp* inside_padding(const UOp* p, const Idx& idx) {
    const auto& pads = p->varg();
    const UOp* cond = ctx_.const_bool(true);
    for (size_t i = 0; i < idx.size(); ++i) {
      if (pads[2 * i] == 0 && pads[2 * i + 1] == 0) continue;
      const UOp* end = extents_.axis(p->src[0], i)->add(pads[2 * i]);
      cond = cond->logical_and(idx[i]->ge(pads[2 * i]))->logical_and(idx[i]->lt(end));
    }
    return simplify(cond);
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
  bool whole_vector_rows(const UOp* p) const {
    if (p->shape().empty()) return false;
    size_t last = p->shape().size() - 1;
    const auto& pads = p->varg();
    if (pads[2 * last] == 0 && pads[2 * last + 1] == 0) return true;
    int64_t lanes = std::max<int64_t>(1, g_.lowering().vector_bytes / p->dtype.itemsize());
    return p->src[0]->shape()[last] % lanes == 0;
  }

  int realize_padding(const UOp* p) {
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

  int64_t users_of(const UOp* n) const {
    auto it = direct_users_.find(n);
    return it == direct_users_.end() ? 0 : it->second;
  }

  // The origins of the nodes this kernel computes inline, in model order, each once.
  std::vector<std::string> fused_origins() const {
    std::map<int64_t, const UOp*> order;
    for (const UOp* u : fused_)
      if (int64_t i = g_.origin_index(u); i >= 0) order.emplace(i, u);
    std::vector<std::string> r;
    for (const auto& [i, u] : order) r.push_back(*g_.origin(u));
    return r;
  }

  // Simplification can remove every load of an argument (a gate that is never true, a product
  // with zero): renumber the remaining arguments densely and drop the unused ones.
  const UOp* drop_unused_args(const UOp* ast) {
    std::vector<const UOp*> used(args_.size(), nullptr);
    for (const UOp* u : ast->toposort())
      if (u->op == Op::DEFINE_GLOBAL) used[static_cast<size_t>(u->iarg())] = u;
    std::unordered_map<const UOp*, const UOp*> remap;
    std::vector<int> kept;
    for (size_t i = 0; i < used.size(); ++i) {
      if (!used[i]) continue;
      int64_t j = static_cast<int64_t>(kept.size());
      if (j != static_cast<int64_t>(i))
        remap[used[i]] = ctx_.make(Op::DEFINE_GLOBAL, used[i]->dtype, {}, j);
      kept.push_back(args_[i]);
    }
    if (kept.size() == args_.size()) return ast;
    args_ = kept;
    return substitute(ast, remap);
  }

  int arg_for(int buffer) {
    if (auto it = arg_of_.find(buffer); it != arg_of_.end()) return it->second;
    int a = static_cast<int>(args_.size());
    args_.push_back(buffer);
    arg_of_[buffer] = a;
    return a;
  }

  const UOp* linear_index(const Idx& idx, const Shape& shape) {
    const UOp* lin = ctx_.const_index(0);
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      if (shape[i] > 1) lin = lin->add(idx[i]->mul(stride));
      stride *= shape[i];
    }
    return simplify(lin);
  }

  const UOp* load(int buffer, const UOp* node, const Idx& idx, const UOp* valid) {
    const UOp* v = simplify(valid);
    if (v->is_const(0)) return zero(node->dtype);
    const UOp* lin = linear_index(idx, node->shape());
    const PlanBuffer& b = res_.buffers[static_cast<size_t>(buffer)];
    const UOp* index = lin;
    if (!v->is_const(1)) {
      // The value only matters where v holds: every gate comes from a PAD or a GATHER, which
      // selects its fill value elsewhere (WHERE(cond, value, fill)). An index that stays inside
      // the buffer either way needs no gate, so a padded layer's weights and bias are plain
      // loads (gated, they varied along the padded axes and the weights lost their reuse).
      const UOp* given = simplify_given(lin, v);
      index = given->vmin() >= 0 && given->vmax() < b.numel()
                  ? given
                  : simplify(v->where(given, ctx_.invalid()));
    }
    const UOp* g = ctx_.make(Op::DEFINE_GLOBAL, DType::ptr(b.dtype.scalar, b.numel()), {},
                             int64_t{arg_for(buffer)});
    return ctx_.make(Op::LOAD, node->dtype, {ctx_.make(Op::INDEX, g->dtype, {g, index})});
  }

  const UOp* zero(DType d) {
    return d.is_float() ? ctx_.const_float(d, 0.0) : ctx_.const_int(d, 0);
  }

  // ---------------------------------------------------------------- fusion decisions

  FusionQuery query(const UOp* n, const Idx& idx, const UOp* valid) {
    FusionQuery q;
    q.node = n;
    q.loops = loops_;
    std::vector<const UOp*> used;
    auto add = [&](const UOp* e) {
      for (const UOp* r : e->ranges())
        if (std::find(used.begin(), used.end(), r) == used.end()) used.push_back(r);
    };
    for (const UOp* e : idx) add(e);
    add(valid);
    q.used = used;
    int last = -1;
    for (size_t p = 0; p < loops_.size(); ++p)
      if (std::find(used.begin(), used.end(), loops_[p]) != used.end()) last = static_cast<int>(p);
    for (int p = 0; p <= last; ++p)
      if (std::find(used.begin(), used.end(), loops_[static_cast<size_t>(p)]) == used.end())
        q.recompute *= loops_[static_cast<size_t>(p)]->src[0]->vmax();
    // The used loops can also revisit values: a sliding window (output position + window offset)
    // reads each value about window-size times. More iterations than the node has values means
    // that many recomputations at least.
    int64_t iterations = 1;
    for (const UOp* r : used) iterations *= r->src[0]->vmax();
    int64_t values = std::max<int64_t>(1, shape_numel(n->shape()));
    if (iterations > values) q.recompute *= (iterations + values - 1) / values;
    for (const UOp* r : used)
      if (r->range().kind == AxisKind::Reduce) q.under_reduce = true;
    if (n->op != Op::REDUCE_AXIS) q.above_reduction = reaches_reduction(n);
    if (auto it = consumers_.find(n); it != consumers_.end()) q.consumers = it->second;
    return q;
  }

  static bool walks_reduce(const Idx& idx) {
    for (const UOp* e : idx)
      for (const UOp* r : e->ranges())
        if (r->range().kind == AxisKind::Reduce) return true;
    return false;
  }

  // A GATHER whose looked-up positions depend on the consumer's output loops only while its
  // other axes walk a reduce loop: rows chosen once, read along the reduction (an embedding
  // feeding a matmul). Not a resize written as a contraction, whose taps (reduce loops) choose
  // the positions themselves.
  static bool gathers_rows_walked_by_reduce(const UOp* n, const Idx& idx) {
    size_t axis = static_cast<size_t>(n->iarg()), k = n->src[1]->shape().size();
    Idx looked(idx.begin() + static_cast<std::ptrdiff_t>(axis),
               idx.begin() + static_cast<std::ptrdiff_t>(axis + k));
    Idx rest(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(axis));
    rest.insert(rest.end(), idx.begin() + static_cast<std::ptrdiff_t>(axis + k), idx.end());
    return !walks_reduce(looked) && walks_reduce(rest);
  }

  // How many computing nodes read each node, looking through movement ops (a PAD read by two
  // convolutions counts twice for the node it pads). Uses that all end in one elementwise node
  // count once (merged_uses).
  void count_consumers() {
    std::vector<const UOp*> order = g_.sink()->toposort();
    std::unordered_map<const UOp*, std::vector<const UOp*>> users;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const UOp* u = *it;
      int64_t weight = (is_movement_like(u->op) ? std::max<int64_t>(1, consumers_[u]) : 1);
      std::vector<const UOp*> seen;
      for (const UOp* s : u->src) {
        if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
        seen.push_back(s);
        consumers_[s] += weight;
        users[s].push_back(u);
        ++direct_users_[s];
      }
    }
    std::unordered_set<const UOp*> outputs;
    for (const GraphOutput& out : g_.outputs()) outputs.insert(out.node);
    for (const UOp* s : order)
      if (consumers_[s] > 1 && merged_uses(s, users, outputs)) consumers_[s] = 1;
  }

  // True when every use of `s` is elementwise at s's own index and all of them end in one node m
  // (x * sigmoid(x), gelu's x * (1 + erf(x / sqrt 2))): wherever m is computed, the uses read s
  // at one index, which hash-consing makes one value, so inlining s computes it once. A use
  // through a movement op (another index), a reduction or a graph output is not merged.
  static bool merged_uses(const UOp* s,
                          const std::unordered_map<const UOp*, std::vector<const UOp*>>& users,
                          const std::unordered_set<const UOp*>& outputs) {
    // One movement node that every use goes through (a reduction's reshape to its output
    // shape) is one index: the uses are looked at after it.
    for (int hops = 0; hops < 8 && !outputs.count(s); ++hops) {
      auto it = users.find(s);
      if (it == users.end() || it->second.size() != 1 || !is_movement_like(it->second[0]->op))
        break;
      s = it->second[0];
    }
    if (!s->has_shape() || outputs.count(s) || !users.count(s)) return false;
    auto elementwise_here = [&](const UOp* u) {
      return (ops::alu().has(u->op) || u->op == Op::CAST) && u->has_shape() &&
             u->shape() == s->shape();
    };
    auto in = [](const std::vector<const UOp*>& v, const UOp* u) {
      return std::find(v.begin(), v.end(), u) != v.end();
    };
    for (const UOp* u : users.at(s))
      if (!elementwise_here(u)) return false;
    // s and the elementwise nodes its uses run through; a node with another use (or an output)
    // is an exit.
    std::vector<const UOp*> region = {s};
    int exits = 0;
    for (size_t i = 0; i < region.size(); ++i) {
      auto it = users.find(region[i]);
      bool exit = outputs.count(region[i]) > 0 || it == users.end();
      if (it != users.end())
        for (const UOp* u : it->second) {
          if (in(region, u)) continue;
          if (!elementwise_here(u)) {
            exit = true;
          } else if (region.size() >= 32) {
            return false;
          } else {
            region.push_back(u);
          }
        }
      exits += exit;
      if (exits > 1) return false;
    }
    return exits == 1;
  }

  static bool is_movement_like(Op op) {
    return ops::movement().has(op) || op == Op::WINDOW || op == Op::GATHER;
  }

  // True if computing `n` inline would compute a reduction (one not already in a buffer).
  // Iterative: an unrolled loop makes chains tens of thousands of nodes deep.
  bool reaches_reduction(const UOp* root) {
    std::vector<std::pair<const UOp*, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      const UOp* n = stack.back().first;
      if (reaches_reduction_.count(n)) {
        stack.pop_back();
        continue;
      }
      if (n->op == Op::REDUCE_AXIS || n->op == Op::BUFFER || n->op == Op::CONTIGUOUS ||
          realized_.count(n)) {
        reaches_reduction_[n] = n->op == Op::REDUCE_AXIS;
        stack.pop_back();
        continue;
      }
      size_t& i = stack.back().second;
      if (i == n->src.size()) {
        reaches_reduction_[n] = false;
        stack.pop_back();
        continue;
      }
      auto it = reaches_reduction_.find(n->src[i]);
      if (it == reaches_reduction_.end()) {
        stack.push_back({n->src[i], 0});
      } else if (it->second) {
        reaches_reduction_[n] = true;
        stack.pop_back();
      } else {
        ++i;
      }
    }
    return reaches_reduction_.at(root);
  }

  // ---------------------------------------------------------------- lowering

  // The value of tensor node `n` at index `idx`, under gate `valid` (loads are masked by it).
  const UOp* lower(const UOp* n, const Idx& idx, const UOp* valid) {
    MemoKey key{n, valid, idx};
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    ++depth_;
    const UOp* r = lower_uncached(n, idx, valid);
    --depth_;
    memo_.emplace(std::move(key), r);
    return r;
  }

  const UOp* lower_uncached(const UOp* n, const Idx& idx, const UOp* valid) {
    if (n->op == Op::BUFFER) return load(buffer_of_leaf(n), n, idx, valid);
    if (n != root_) {
      if (auto it = realized_.find(n); it != realized_.end())
        return load(it->second, n, idx, valid);
      if (n->op == Op::CONTIGUOUS) return load(realize(n), n, idx, valid);
      // A kernel's expression is at most kMaxFusedDepth nodes deep: an unrolled loop's chain
      // (4096 steps of a 16-node body) is split into kernels instead of one kernel that neither
      // the recursion here nor LLVM could handle.
      if (depth_ > kMaxFusedDepth && n->op != Op::CONST && n->op != Op::DEFINE_VAR) {
        res_.fusion_log.push_back(str_cat(res_.kernels.size(), " ", describe_node(root_), ": ",
                                          describe_node(n), " -> kept (the kernel's expression is ",
                                          kMaxFusedDepth, " nodes deep)"));
        return load(realize(n), n, idx, valid);
      }
      // A padded tensor read inside a reduction (a convolution's input) is written out once
      // with its border: the reduction's inner loop then loads without per-lane bounds checks.
      // Likewise gathered rows (an embedding lookup feeding a matmul): inlined, each of the
      // reduction's loads would look its row up and check it against the table's bounds (the
      // transformer's first projection ran at 78 GFLOP/s fused with its embedding, 162 without).
      const char* written_once = n->op == Op::PAD && walks_reduce(idx) ? "padding"
                                 : n->op == Op::GATHER && gathers_rows_walked_by_reduce(n, idx)
                                     ? "gathered rows"
                                     : nullptr;
      if (written_once) {
        res_.fusion_log.push_back(str_cat(res_.kernels.size(), " ", describe_node(root_), ": ",
                                          describe_node(n), " -> kept (", written_once,
                                          " read in a reduction)"));
        return load(n->op == Op::PAD ? realize_padding(n) : realize(n), n, idx, valid);
      }
      bool computes =
          alu_arity(n->op) || n->op == Op::REDUCE_AXIS || n->op == Op::CAST || n->op == Op::BITCAST;
      // A reduction a loop's body reads that does not vary with the iteration is computed once,
      // before the loop, not in every iteration.
      if (computes && loop_ >= 0 && varies_in(n) < 0 &&
          (n->op == Op::REDUCE_AXIS || reaches_reduction(n))) {
        res_.fusion_log.push_back(str_cat(res_.kernels.size(), " ", describe_node(root_), ": ",
                                          describe_node(n),
                                          " -> kept (the same in every iteration of the loop)"));
        return load(realize(n), n, idx, valid);
      }
      if (computes) {
        FusionDecision d = policy_.decide(query(n, idx, valid));
        res_.fusion_log.push_back(str_cat(res_.kernels.size(), " ", describe_node(root_), ": ",
                                          describe_node(n), " -> ",
                                          d.inline_it ? "inlined" : "kept", " (", d.reason, ")"));
        if (!d.inline_it) return load(realize(n), n, idx, valid);
      }
    }
    return compute(n, idx, valid);
  }

  const UOp* compute(const UOp* n, const Idx& idx, const UOp* valid) {
    if (n->op == Op::CONST || n->op == Op::DEFINE_VAR) return n;
    fused_.push_back(n);
    if (alu_arity(n->op) || n->op == Op::CAST || n->op == Op::BITCAST) {
      std::vector<const UOp*> src;
      for (const UOp* s : n->src) src.push_back(lower(s, idx, valid));
      // A mean over a symbolic axis divides by the number of values it summed at run time.
      if (const UOp* count = extents_.mean_count(n)) src[1] = count->cast(n->dtype);
      return ctx_.make(n->op, n->dtype, std::move(src), n->arg);
    }
    const UOp* s0 = n->src.empty() ? nullptr : n->src[0];
    switch (n->op) {
      case Op::CONTIGUOUS:
        return lower(s0, idx, valid);
      case Op::RESHAPE:
        return lower(s0, reshape_index(idx, n->shape(), s0->shape()), valid);
      case Op::PERMUTE: {
        Idx si(idx.size());
        const auto& p = n->varg();
        for (size_t i = 0; i < p.size(); ++i) si[static_cast<size_t>(p[i])] = idx[i];
        return lower(s0, si, valid);
      }
      case Op::EXPAND: {
        Idx si = idx;
        const Shape& in = s0->shape();
        for (size_t i = 0; i < in.size(); ++i)
          if (in[i] == 1) si[i] = ctx_.const_index(0);
        return lower(s0, si, valid);
      }
      case Op::SHRINK: {
        Idx si = idx;
        const auto& p = n->varg();
        for (size_t i = 0; i < si.size(); ++i) si[i] = simplify(idx[i]->add(p[2 * i]));
        return lower(s0, si, valid);
      }
      case Op::FLIP: {
        Idx si = idx;
        for (int64_t a : n->varg()) {
          size_t i = static_cast<size_t>(a);
          si[i] = simplify(idx[i]->neg()->add(extents_.axis(s0, i))->sub(1));
        }
        return lower(s0, si, valid);
      }
      case Op::PAD: {
        Idx si = idx;
        const auto& p = n->varg();
        for (size_t i = 0; i < si.size(); ++i)
          if (p[2 * i] != 0 || p[2 * i + 1] != 0) si[i] = simplify(idx[i]->sub(p[2 * i]));
        const UOp* cond = inside_padding(n, idx);
        if (cond->is_const(0)) return n->src[1];
        const UOp* inner = lower(s0, si, simplify(valid->logical_and(cond)));
        if (cond->is_const(1)) return inner;
        return cond->where(inner, n->src[1]);
      }
      case Op::WINDOW: {
        const auto& w = n->varg();
        size_t k = w.size() / 3, lead = s0->shape().size() - k;
        Idx si(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(lead));
        for (size_t j = 0; j < k; ++j)
          si.push_back(
              simplify(idx[lead + j]->mul(w[k + j])->add(idx[lead + k + j]->mul(w[2 * k + j]))));
        return lower(s0, si, valid);
      }
      case Op::GATHER: {
        const UOp* ix = n->src[1];
        size_t axis = static_cast<size_t>(n->iarg()), k = ix->shape().size();
        const UOp* dim = extents_.axis(s0, axis);
        Idx ii(idx.begin() + static_cast<std::ptrdiff_t>(axis),
               idx.begin() + static_cast<std::ptrdiff_t>(axis + k));
        // Positions computed by a reduction (an ArgMax, a count) are written out first: a
        // reduction belongs in a kernel's value, not inside a load's index.
        const UOp* looked =
            reaches_reduction(ix) ? load(realize(ix), ix, ii, valid) : lower(ix, ii, valid);
        const UOp* gv = simplify(looked->cast(dtypes::index));
        const UOp* gw = simplify(gv->lt(int64_t{0})->where(gv->add(dim), gv));
        const UOp* cond = simplify(gw->ge(int64_t{0})->logical_and(gw->lt(dim)));
        Idx si(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(axis));
        si.push_back(gw);
        si.insert(si.end(), idx.begin() + static_cast<std::ptrdiff_t>(axis + k), idx.end());
        const UOp* inner = lower(s0, si, simplify(valid->logical_and(cond)));
        if (cond->is_const(1)) return inner;
        return cond->where(inner, zero(n->dtype));
      }
      case Op::REDUCE_AXIS: {
        const ReduceArg& r = n->reduce_arg();
        Idx si = idx;
        std::vector<const UOp*> ranges;
        for (int64_t a : r.axes) {
          const UOp* rr = ctx_.range(extents_.axis(s0, static_cast<size_t>(a)), next_range_++,
                                     AxisKind::Reduce);
          ranges.push_back(rr);
          si[static_cast<size_t>(a)] = rr;
        }
        size_t depth = loops_.size();
        loops_.insert(loops_.end(), ranges.begin(), ranges.end());
        const UOp* body = lower(s0, si, valid);
        loops_.resize(depth);
        std::vector<const UOp*> src = {body};
        src.insert(src.end(), ranges.begin(), ranges.end());
        return ctx_.make(Op::REDUCE, n->dtype, std::move(src), r.op);
      }
      default:
        break;
    }
    throw InternalError(str_cat("rangeify: cannot lower ", describe_node(n)));
  }

  // RESHAPE: the flat position of `idx` in `out`, unflattened into `in`.
  Idx reshape_index(const Idx& idx, const Shape& out, const Shape& in) {
    const UOp* flat = linear_index(idx, out);
    Idx si(in.size());
    int64_t stride = 1;
    for (size_t j = in.size(); j-- > 0;) {
      si[j] = in[j] == 1 ? ctx_.const_index(0) : simplify(flat->idiv(stride)->mod(in[j]));
      stride *= in[j];
    }
    return si;
  }

  // ---------------------------------------------------------------- loop groups

  // The loop whose body `n` belongs to: the one whose state or iteration number it reads; -1
  // for a node outside every body. Memoized, iteratively (unrolled chains are deep).
  int varies_in(const UOp* root) {
    if (g_.loops().empty()) return -1;
    if (auto it = varies_.find(root); it != varies_.end()) return it->second;
    for (const UOp* u : root->toposort()) {
      if (varies_.count(u)) continue;
      int v = -1;
      if (auto it = loop_inputs_.find(u); it != loop_inputs_.end()) v = it->second;
      if (auto it = branch_of_.find(u); it != branch_of_.end()) v = it->second;
      for (const UOp* s : u->src) v = std::max(v, varies_.at(s));
      varies_[u] = v;
    }
    return varies_.at(root);
  }

  void index_loops() {
    for (size_t i = 0; i < g_.loops().size(); ++i) {
      const GraphLoop& l = g_.loops()[i];
      int li = static_cast<int>(i);
      loop_inputs_[g_.symbol_var(l.iteration)] = li;
      for (const auto& st : l.states) {
        loop_inputs_[st.in] = li;
        loop_results_[st.out] = li;
      }
      for (const auto& sc : l.scans) loop_results_[sc.out] = li;
    }
    res_.loops.resize(g_.loops().size());
    index_branches();
    for (size_t i = 0; i < g_.counted_values().size(); ++i)
      counted_outs_[g_.counted_values()[i].out] = static_cast<int>(i);
    res_.counts.resize(g_.counts().size());
  }

  // A conditional group's body (an If's branch) is what only its next values reach: every
  // computing node they reach that no other root of the graph reaches runs inside it, whether or
  // not it reads a state (a value the graph needs elsewhere is computed outside, once).
  void index_branches() {
    std::vector<const UOp*> others, mine;
    for (const UOp* r : g_.sink()->src) others.push_back(r);
    for (size_t i = 0; i < g_.loops().size(); ++i) {
      const GraphLoop& l = g_.loops()[i];
      if (!l.conditional) continue;
      std::unordered_set<const UOp*> next;
      for (const auto& st : l.states) next.insert(st.next);
      std::vector<const UOp*> rest;
      for (const UOp* r : others)
        if (!next.count(r)) rest.push_back(r);
      std::unordered_set<const UOp*> outside;
      for (const UOp* u : ctx_.make(Op::SINK, dtypes::void_, rest)->toposort()) outside.insert(u);
      for (const UOp* r : next)
        for (const UOp* u : r->toposort())
          if (!outside.count(u) && u->op != Op::BUFFER && u->op != Op::CONST &&
              u->op != Op::DEFINE_VAR)
            branch_of_[u] = static_cast<int>(i);
    }
  }

  // A size computed from data: its count realized into a buffer of its own (a copy when it is
  // one already), which the runtime reads into the symbol.
  void schedule_count(int ci) {
    const GraphCount& c = g_.counts()[static_cast<size_t>(ci)];
    if (varies_in(c.count) >= 0)
      throw Error(c.name + ": a size computed from data inside a loop group's body");
    const UOp* count = c.count;
    if (count->op == Op::BUFFER || count->op == Op::CONST)
      count = ctx_.make(Op::CONTIGUOUS, count->dtype, {count});
    res_.counts[static_cast<size_t>(ci)] = {c.name, c.symbol, realize(count), -1};
  }

  // Buffers for loop `li`'s states and stacked outputs, and its kernels queued: the initial
  // values (before the loop), the next values (realized in the body, or before it when they do
  // not vary) each copied into its state by a carry kernel, and the stacked values stored at
  // row `iteration`. Idempotent.
  void schedule_loop(int li) {
    if (!scheduled_loops_.insert(li).second) return;
    const GraphLoop& l = g_.loops()[static_cast<size_t>(li)];
    PlanLoop& pl = res_.loops[static_cast<size_t>(li)];
    pl.name = l.name;
    pl.max_trips = l.max_trips;
    pl.iteration = l.iteration;
    pl.count = l.count;
    std::vector<int> state_buffer;
    for (size_t k = 0; k < l.states.size(); ++k) {
      const GraphLoop::State& st = l.states[k];
      int id = new_buffer(st.in->buffer().name, BufferKind::Intermediate, st.in);
      realized_[st.in] = id;
      realized_[st.out] = id;
      state_buffer.push_back(id);
      if (static_cast<int>(k) == l.cond) pl.cond = id;
    }
    for (const auto& sc : l.scans)
      realized_[sc.out] = new_buffer(sc.out->buffer().name, BufferKind::Intermediate, sc.out);
    if (l.trips) pl.trips = l.trips->op == Op::BUFFER ? buffer_of_leaf(l.trips) : realize(l.trips);
    for (size_t k = 0; k < l.states.size(); ++k)
      jobs_.push_back({l.states[k].init, state_buffer[k], false, std::nullopt, -1, false});
    for (size_t k = 0; k < l.states.size(); ++k) {
      const GraphLoop::State& st = l.states[k];
      if (st.next == st.in) continue;
      // A state's next value that is another state (a swap) is copied out first: the carry
      // kernels run together, and one would read a state another writes.
      const UOp* next = st.next;
      if (loop_inputs_.count(next)) next = ctx_.make(Op::CONTIGUOUS, next->dtype, {next});
      if (next->op != Op::BUFFER) realize(next);
      jobs_.push_back({next, state_buffer[k], true, std::nullopt, li, true});
    }
    const UOp* row = g_.symbol_var(l.iteration);
    for (size_t j = 0; j < l.scans.size(); ++j) {
      const GraphLoop::Scan& sc = l.scans[j];
      Placement place{sc.out->shape(), 0, row, true};
      jobs_.push_back({sc.value, realized_.at(sc.out), false, place, li, false});
    }
  }

  Graph& g_;
  Context& ctx_;
  const FusionPolicy& policy_;
  Extents extents_;
  RangeifyResult res_;
  std::unordered_map<const UOp*, int> loop_inputs_;   // states and iteration numbers: their loop
  std::unordered_map<const UOp*, int> loop_results_;  // final states, stacked outputs: their loop
  std::unordered_map<const UOp*, int> counted_outs_;  // counted values: their GraphCounted index
  std::unordered_map<const UOp*, int> varies_;        // see varies_in
  std::unordered_map<const UOp*, int> branch_of_;     // conditional groups' bodies
  std::set<int> scheduled_loops_;
  std::deque<Job> jobs_;
  int loop_ = -1;  // the loop whose body the current kernel is in (or -1)
  bool carry_ = false;
  std::unordered_map<const UOp*, int> realized_;
  std::deque<const UOp*> work_;
  std::vector<std::pair<const UOp*, int>> copies_;
  // per kernel
  const UOp* root_ = nullptr;
  std::vector<int> args_;
  std::unordered_map<int, int> arg_of_;
  std::unordered_map<MemoKey, const UOp*, MemoHash> memo_;
  std::vector<const UOp*> loops_;
  std::vector<const UOp*> fused_;  // the nodes the current kernel computes inline
  std::unordered_map<const UOp*, int64_t> consumers_;     // see count_consumers
  std::unordered_map<const UOp*, int64_t> direct_users_;  // nodes with it as a source
  // The parts of concatenations that compute themselves into their region, from the work queue.
  std::unordered_map<const UOp*, Placement> into_;
  // PADs whose interior another kernel stores (realize_padding): their kernels write the border.
  std::unordered_set<const UOp*> borders_;
  std::unordered_map<const UOp*, bool> reaches_reduction_;  // cache; realized nodes stop the walk
  int64_t next_range_ = 0;
  int depth_ = 0;  // of lower() calls: the expression depth reached
};

}  // namespace

RangeifyResult rangeify(Graph& g, const FusionPolicy& policy) {
  return Lowerer(g, policy).run();
}

}  // namespace kiln
