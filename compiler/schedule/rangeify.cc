// rangeify(): the driver, buffers, one kernel's building and the lowering of tensor nodes into
// index expressions (rangeify.h; the class is in rangeify_lowerer.h).
#include "compiler/schedule/rangeify_lowerer.h"

#include <algorithm>
#include <map>

#include "compiler/ir/printer.h"
#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/ir/verify.h"
#include "compiler/support/error.h"

namespace kiln::rangeify_internal {

RangeifyResult Lowerer::run() {
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

int Lowerer::new_buffer(const std::string& name, BufferKind kind, const UOp* node) {
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

int Lowerer::realize(const UOp* n) {
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

int Lowerer::buffer_of_leaf(const UOp* n) {
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

// `place`: store into a region of a concatenation's buffer (concat_in_place); a part queued
// to compute itself there finds its region in into_.
void Lowerer::build_kernel(const UOp* root, int out, bool copy, const Placement* place, int loop,
                           bool carry) {
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

void Lowerer::begin_kernel(const UOp* root, int out, int loop, bool carry) {
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
const UOp* Lowerer::loop_axis(const UOp* extent) {
  if (extent->is_const(0) || extent->is_const(1)) return ctx_.const_index(0);
  const UOp* r = ctx_.range(extent, next_range_++, AxisKind::Loop);
  loops_.push_back(r);
  return r;
}

// The kernel storing `value` at `out_idx` of its output (argument 0, `out_numel` elements),
// over loops that visit `visits` indices.
bool Lowerer::finish_kernel(const UOp* root, const UOp* out_idx, int64_t out_numel,
                            const UOp* value, int64_t visits) {
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

int64_t Lowerer::users_of(const UOp* n) const {
  auto it = direct_users_.find(n);
  return it == direct_users_.end() ? 0 : it->second;
}

// The origins of the nodes this kernel computes inline, in model order, each once.
std::vector<std::string> Lowerer::fused_origins() const {
  std::map<int64_t, const UOp*> order;
  for (const UOp* u : fused_)
    if (int64_t i = g_.origin_index(u); i >= 0) order.emplace(i, u);
  std::vector<std::string> r;
  for (const auto& [i, u] : order) r.push_back(*g_.origin(u));
  return r;
}

// Simplification can remove every load of an argument (a gate that is never true, a product
// with zero): renumber the remaining arguments densely and drop the unused ones.
const UOp* Lowerer::drop_unused_args(const UOp* ast) {
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

int Lowerer::arg_for(int buffer) {
  if (auto it = arg_of_.find(buffer); it != arg_of_.end()) return it->second;
  int a = static_cast<int>(args_.size());
  args_.push_back(buffer);
  arg_of_[buffer] = a;
  return a;
}

const UOp* Lowerer::linear_index(const Idx& idx, const Shape& shape) {
  const UOp* lin = ctx_.const_index(0);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] > 1) lin = lin->add(idx[i]->mul(stride));
    stride *= shape[i];
  }
  return simplify(lin);
}

const UOp* Lowerer::load(int buffer, const UOp* node, const Idx& idx, const UOp* valid) {
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

const UOp* Lowerer::zero(DType d) {
  return d.is_float() ? ctx_.const_float(d, 0.0) : ctx_.const_int(d, 0);
}

// The value of tensor node `n` at index `idx`, under gate `valid` (loads are masked by it).
const UOp* Lowerer::lower(const UOp* n, const Idx& idx, const UOp* valid) {
  MemoKey key{n, valid, idx};
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  ++depth_;
  const UOp* r = lower_uncached(n, idx, valid);
  --depth_;
  memo_.emplace(std::move(key), r);
  return r;
}

const UOp* Lowerer::lower_uncached(const UOp* n, const Idx& idx, const UOp* valid) {
  if (n->op == Op::BUFFER) return load(buffer_of_leaf(n), n, idx, valid);
  if (n != root_) {
    if (auto it = realized_.find(n); it != realized_.end()) return load(it->second, n, idx, valid);
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
    // So is a concatenation (concat_in_place then stores each part into its region): inlined,
    // the reduction would load every part through a gate, and each PAD, read in a reduction,
    // would be written out whole with its border (densenet121's final batch norm and ReLU,
    // done in the parts by elementwise_through_concat.h, are read by a global average pool).
    const char* written_once = n->op == Op::PAD && walks_reduce(idx)    ? "padding"
                               : in_place_parts(n) && walks_reduce(idx) ? "a concatenation"
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
                                        describe_node(n), " -> ", d.inline_it ? "inlined" : "kept",
                                        " (", d.reason, ")"));
      if (!d.inline_it) return load(realize(n), n, idx, valid);
    }
  }
  return compute(n, idx, valid);
}

const UOp* Lowerer::compute(const UOp* n, const Idx& idx, const UOp* valid) {
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
      // `cond`: where the input's values are; `gate`: the part of it the input's loads need.
      // An axis of one element (a part of a stack) is read at 0 whatever the gate: its
      // condition selects the value only, so the input is lowered alike for every part that
      // shares it (a Winograd input transform's 36 points share their first pass's sums, which
      // gated per point were lowered 36 times: resnet50's rangeify stage took 2.2 s, not 0.06).
      const UOp* cond = ctx_.const_bool(true);
      const UOp* gate = cond;
      for (size_t i = 0; i < si.size(); ++i) {
        if (p[2 * i] == 0 && p[2 * i + 1] == 0) continue;
        // Past a symbolic axis's extent the input holds no values: the fill value, as beyond it.
        const UOp* end = extents_.axis(s0, i)->add(p[2 * i]);
        const UOp* in_axis = idx[i]->ge(p[2 * i])->logical_and(idx[i]->lt(end));
        cond = cond->logical_and(in_axis);
        if (end->is_const(p[2 * i] + 1)) {
          si[i] = ctx_.const_index(0);
          continue;
        }
        si[i] = simplify(idx[i]->sub(p[2 * i]));
        gate = gate->logical_and(in_axis);
      }
      cond = simplify(cond);
      if (cond->is_const(0)) return n->src[1];
      const UOp* inner = lower(s0, si, simplify(valid->logical_and(gate)));
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
        const UOp* rr =
            ctx_.range(extents_.axis(s0, static_cast<size_t>(a)), next_range_++, AxisKind::Reduce);
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
Idx Lowerer::reshape_index(const Idx& idx, const Shape& out, const Shape& in) {
  const UOp* flat = linear_index(idx, out);
  Idx si(in.size());
  int64_t stride = 1;
  for (size_t j = in.size(); j-- > 0;) {
    si[j] = in[j] == 1 ? ctx_.const_index(0) : simplify(flat->idiv(stride)->mod(in[j]));
    stride *= in[j];
  }
  return si;
}

}  // namespace kiln::rangeify_internal

namespace kiln {

RangeifyResult rangeify(Graph& g, const FusionPolicy& policy) {
  return rangeify_internal::Lowerer(g, policy).run();
}

}  // namespace kiln
