#include "compiler/codegen/expander.h"

#include "compiler/codegen/store_copies.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "compiler/ir/const_eval.h"
#include "compiler/ir/dot_product.h"
#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/ir/verify.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

// The widest accumulator (in lanes) the expander splits across unrolled copies of a reduction.
constexpr int64_t kMaxSplitAccumulatorLanes = 64;

using Mask = uint32_t;

class Expander {
 public:
  explicit Expander(const UOp* ast) : ctx_(ast->ctx()) {
    for (const UOp* u : ast->toposort()) {
      if (u->op == Op::RANGE && u->range().kind == AxisKind::Upcast) ups_.push_back(u);
      if (u->op == Op::RANGE) next_range_id_ = std::max(next_range_id_, u->range().id + 1);
    }
    std::sort(ups_.begin(), ups_.end(),
              [](const UOp* a, const UOp* b) { return a->range().id < b->range().id; });
    KILN_CHECK(ups_.size() <= 16, "too many upcast ranges: ", ups_.size());
  }

  const UOp* run(const UOp* sink) {
    std::vector<const UOp*> stores;
    for (const UOp* st : sink->src) {
      KILN_CHECK(st->op == Op::STORE, "kernel root source is not a STORE");
      for (const UOp* copy : store_copies(st))
        for (const UOp* s : expand_store(copy)) stores.push_back(s);
    }
    return ctx_->make(Op::SINK, dtypes::void_, stores);
  }

 private:
  // ---------------------------------------------------------------- lanes

  Mask mask_of(const UOp* n) {
    Mask m = 0;
    for (const UOp* r : n->ranges())
      for (size_t i = 0; i < ups_.size(); ++i)
        if (ups_[i] == r) m |= Mask{1} << i;
    return m;
  }
  int64_t lanes(Mask m) const {
    int64_t n = 1;
    for (size_t i = 0; i < ups_.size(); ++i)
      if (m & (Mask{1} << i)) n *= ups_[i]->src[0]->cval().i;
    return n;
  }
  // The upcast-range values of lane `l` of layout `m` (ranges not in m are absent).
  std::vector<std::pair<const UOp*, int64_t>> lane_values(Mask m, int64_t l) const {
    std::vector<std::pair<const UOp*, int64_t>> v;
    for (size_t i = ups_.size(); i-- > 0;) {
      if (!(m & (Mask{1} << i))) continue;
      int64_t n = ups_[i]->src[0]->cval().i;
      v.push_back({ups_[i], l % n});
      l /= n;
    }
    return v;
  }
  // Lane of layout `from` that lane `l` of layout `to` (a superset) reads.
  int64_t project(Mask from, Mask to, int64_t l) const {
    int64_t out = 0;
    auto vals = lane_values(to, l);
    // Rebuild the index in `from`, row-major over its ranges in id order.
    for (size_t i = 0; i < ups_.size(); ++i) {
      if (!(from & (Mask{1} << i))) continue;
      int64_t n = ups_[i]->src[0]->cval().i;
      int64_t c = 0;
      for (auto& [r, v] : vals)
        if (r == ups_[i]) c = v;
      out = out * n + c;
    }
    return out;
  }
  DType vec(DType d, int64_t n) const {
    return n == 1 ? d.base() : d.base().vec(static_cast<uint16_t>(n));
  }

  // `e` (in layout `from`) in layout `to` (a superset of from).
  const UOp* convert(const UOp* e, Mask from, Mask to) {
    if (from == to) return e;
    int64_t n = lanes(to);
    if (from == 0)
      return ctx_->make(Op::VECTORIZE, vec(e->dtype, n),
                        std::vector<const UOp*>(static_cast<size_t>(n), e));
    // A vector load broadcast along the fastest (lane) axis: built from its elements loaded one
    // by one, which LLVM emits as broadcasts straight from memory; shuffling each element out of
    // the loaded vector costs a shuffle per broadcast on the ports the FMAs use.
    Mask lane_axis = Mask{1} << (ups_.size() - 1);
    if ((to & lane_axis) && !(from & lane_axis)) {
      auto it = lane_loads_.find(e);
      if (it != lane_loads_.end()) {
        std::vector<const UOp*> v(static_cast<size_t>(n));
        for (int64_t l = 0; l < n; ++l)
          v[static_cast<size_t>(l)] = it->second[static_cast<size_t>(project(from, to, l))];
        return ctx_->make(Op::VECTORIZE, vec(e->dtype, n), v);
      }
    }
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t l = 0; l < n; ++l) idx[static_cast<size_t>(l)] = project(from, to, l);
    return ctx_->make(Op::GEP, vec(e->dtype, n), {e}, idx);
  }

  const UOp* substitute_lane(const UOp* e, Mask m, int64_t l) {
    std::unordered_map<const UOp*, const UOp*> map;
    for (auto& [r, c] : lane_values(m, l)) map[r] = ctx_->const_index(c);
    return simplify(substitute(e, map));
  }

  // ---------------------------------------------------------------- values

  // The expanded value of `n`, in layout mask_of(n).
  const UOp* expand(const UOp* n) {
    if (auto it = done_.find(n); it != done_.end()) return it->second;
    const UOp* r = expand_uncached(n);
    done_[n] = r;
    return r;
  }

  const UOp* expand_uncached(const UOp* n) {
    switch (n->op) {
      case Op::RANGE: {
        if (n->range().kind != AxisKind::Upcast) return n;
        int64_t size = n->src[0]->cval().i;
        std::vector<ConstValue> v;
        for (int64_t i = 0; i < size; ++i) v.push_back(ConstValue::of_int(i));
        return ctx_->make(Op::VCONST, vec(dtypes::index, size), {}, v);
      }
      case Op::CONST:
      case Op::DEFINE_GLOBAL:
      case Op::DEFINE_VAR:
        return n;
      case Op::LOAD:
        return expand_load(n);
      case Op::REDUCE:
        return expand_reduce(n);
      default:
        break;
    }
    KILN_CHECK(alu_arity(n->op) || n->op == Op::CAST || n->op == Op::BITCAST,
               "expander: unexpected ", op_name(n->op));
    Mask m = mask_of(n);
    std::vector<const UOp*> src;
    for (const UOp* s : n->src) src.push_back(convert(expand(s), mask_of(s), m));
    return ctx_->make(n->op, vec(n->dtype, lanes(m)), std::move(src), n->arg);
  }

  struct Access {
    const UOp* gate;  // bool, or nullptr when ungated
    const UOp* lin;   // the element index, or nullptr when the lane is masked off (Invalid)
  };
  static Access split_index(const UOp* idx) {
    if (idx->is_invalid()) return {nullptr, nullptr};
    if (idx->op == Op::WHERE && idx->src[2]->is_invalid()) return {idx->src[0], idx->src[1]};
    return {nullptr, idx};
  }
  const UOp* make_index(const UOp* buf, const UOp* gate, const UOp* lin) {
    const UOp* idx = gate ? gate->where(lin, ctx_->invalid()) : lin;
    return ctx_->make(Op::INDEX, buf->dtype, {buf, simplify(idx)});
  }

  // Per lane: the access, and its offset from lane 0 when that is a constant and the gate is
  // shared (contiguous-run candidates).
  struct Lanes {
    std::vector<Access> acc;
    std::vector<int64_t> offset;
    bool uniform = true;  // every lane has a constant offset from lane 0 and the same gate
  };
  Lanes lanes_of(const UOp* idx, Mask m) {
    std::vector<Access> acc;
    int64_t n = lanes(m);
    for (int64_t l = 0; l < n; ++l) acc.push_back(split_index(substitute_lane(idx, m, l)));
    return lanes_from(std::move(acc));
  }
  Lanes lanes_from(std::vector<Access> acc) {
    Lanes out;
    out.acc = std::move(acc);
    const Access& a0 = out.acc[0];
    for (const Access& a : out.acc) {
      if (!a.lin || !a0.lin || a.gate != a0.gate) {
        out.uniform = false;
        break;
      }
      const UOp* d = simplify(a.lin->sub(a0.lin));
      if (d->op != Op::CONST) {
        out.uniform = false;
        break;
      }
      out.offset.push_back(d->cval().i);
    }
    return out;
  }

  // Lanes at consecutive elements (lane l at lin0 + l) whose gates differ per lane (a padded
  // lane axis: the last lanes of a 14-wide row; a pad copy's border): one masked vector access,
  // gated by the vector of the lanes' gates: the access's index (nullptr if not of that shape).
  // The gate vector is the index's gate expression expanded over the lanes (vector compares),
  // not the lanes' gates assembled one by one.
  const UOp* masked_run(const UOp* idx, Mask m, const Lanes& ls, DType el, bool load) {
    if (ls.uniform || el.is_bool() || ls.acc.size() < 4) return nullptr;
    if (idx->op != Op::WHERE || !idx->src[2]->is_invalid()) return nullptr;
    const UOp* base = run_base(ls, load);
    if (!base) return nullptr;
    const UOp* gate = idx->src[0];
    return convert(expand(gate), mask_of(gate), m)->where(base, ctx_->invalid());
  }

  // Runs of an odd length (7 consecutive floats of a 7x7 map) are loaded element by element:
  // LLVM splits an odd-length vector load into lane inserts and, broadcast across the other
  // upcast axes, into long shuffles; scalar loads become broadcasts straight from memory.
  static bool odd_run(const std::vector<std::pair<int64_t, int64_t>>& runs) {
    for (auto [start, len] : runs)
      if (len > 1 && len % 2 == 1) return true;
    return false;
  }

  // Runs of consecutive offsets: (start offset, length), in increasing offset order.
  static std::vector<std::pair<int64_t, int64_t>> runs_of(std::vector<int64_t> offs) {
    std::sort(offs.begin(), offs.end());
    offs.erase(std::unique(offs.begin(), offs.end()), offs.end());
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t o : offs) {
      if (!runs.empty() && runs.back().first + runs.back().second == o)
        ++runs.back().second;
      else
        runs.push_back({o, 1});
    }
    return runs;
  }

  // Lanes per load of a strided row: a long row (7 vectors of a 56-wide output) in chunks of at
  // most 64 loaded elements.
  static int64_t strided_chunk(int64_t lanes, int64_t stride) {
    int64_t chunk = lanes;
    while (chunk * stride > 64 && chunk % 2 == 0) chunk /= 2;
    return chunk;
  }

  // Lanes in rows at a constant stride of 2 or 4 elements (a stride-2 convolution's input along
  // W): per row one contiguous load of (row length x stride) elements, and a shuffle that picks
  // every stride-th, instead of scalar loads assembled lane by lane. Only when every row's span
  // is inside the buffer for every value of the index (it reads up to stride - 1 elements past a
  // row's last lane).
  const UOp* strided_load(const Lanes& ls, const UOp* buf, int64_t n, DType el) {
    if (!ls.uniform || n < 4 || buf->dtype.ptr_size < 0) return nullptr;
    int64_t stride = ls.offset[1] - ls.offset[0];
    if (stride != 2 && stride != 4) return nullptr;
    int64_t row = 1;  // lanes per row
    while (row < n && ls.offset[static_cast<size_t>(row)] == row * stride) ++row;
    if (row < 4 || n % row != 0) return nullptr;
    int64_t chunk = strided_chunk(row, stride);
    int64_t span = chunk * stride;
    const Access& a0 = ls.acc[0];
    if (span > 64 || span > buf->dtype.ptr_size || a0.lin->vmin() < 0) return nullptr;
    std::vector<const UOp*> loads;
    std::vector<int64_t> pick;
    for (int64_t c = 0; c < n / chunk; ++c) {
      int64_t first = ls.offset[static_cast<size_t>(c * chunk)];
      for (int64_t l = 0; l < chunk; ++l)
        if (ls.offset[static_cast<size_t>(c * chunk + l)] != first + l * stride) return nullptr;
      // A masked access addresses element 0 (see the emitter): that end fits by span <= size.
      if (a0.lin->vmax() + first + span > buf->dtype.ptr_size || a0.lin->vmin() + first < 0)
        return nullptr;
      const UOp* lin = simplify(a0.lin->add(first));
      loads.push_back(ctx_->make(Op::LOAD, vec(el, span), {make_index(buf, a0.gate, lin)}));
      for (int64_t l = 0; l < chunk; ++l) pick.push_back(c * span + l * stride);
    }
    return ctx_->make(Op::GEP, vec(el, n), loads, pick);
  }

  // Lanes at a constant stride of 2 or 4 elements whose gates differ or that have holes (a
  // stride-2 pooling or convolution row padded to whole vectors: 55 outputs in 64 lanes, each
  // lane's gate the row's bound): per chunk one masked contiguous load of the span with only
  // the picked elements enabled, and the shuffle that picks them, instead of scalar loads
  // assembled lane by lane (squeezenet's first max pool ran at 13 GB/s). Lanes without an
  // address are off. The enabled elements are the lanes' own, so the span needs no bounds.
  const UOp* masked_strided_load(const UOp* idx, Mask m, const Lanes& ls, const UOp* buf, int64_t n,
                                 DType el) {
    if (ls.uniform || el.is_bool() || n < 4 || idx->op != Op::WHERE || !idx->src[2]->is_invalid())
      return nullptr;
    const Access& a0 = ls.acc[0];
    if (!a0.lin || !ls.acc[1].lin) return nullptr;
    const UOp* d1 = simplify(ls.acc[1].lin->sub(a0.lin));
    if (d1->op != Op::CONST) return nullptr;
    int64_t stride = d1->cval().i;
    if (stride != 2 && stride != 4) return nullptr;
    for (size_t l = 2; l < ls.acc.size(); ++l) {
      if (!ls.acc[l].lin) continue;
      const UOp* d = simplify(ls.acc[l].lin->sub(a0.lin));
      if (d->op != Op::CONST || d->cval().i != static_cast<int64_t>(l) * stride) return nullptr;
    }
    int64_t chunk = strided_chunk(n, stride);
    int64_t span = chunk * stride;
    if (span > 64) return nullptr;
    const UOp* gates = convert(expand(idx->src[0]), mask_of(idx->src[0]), m);
    const UOp* off = ctx_->make(
        Op::VECTORIZE, vec(dtypes::bool_, n),
        std::vector<const UOp*>(static_cast<size_t>(n),
                                ctx_->const_value(dtypes::bool_, ConstValue::of_int(0))));
    std::vector<const UOp*> loads;
    std::vector<int64_t> pick;
    for (int64_t c = 0; c < n / chunk; ++c) {
      std::vector<int64_t> enabled;  // per element of the span: its lane's gate, or off
      for (int64_t e = 0; e < span; ++e)
        enabled.push_back(e % stride == 0 ? c * chunk + e / stride : n);
      const UOp* g = ctx_->make(Op::GEP, vec(dtypes::bool_, span), {gates, off}, enabled);
      const UOp* lin = simplify(a0.lin->add(c * chunk * stride));
      loads.push_back(
          ctx_->make(Op::LOAD, vec(el, span),
                     {ctx_->make(Op::INDEX, buf->dtype, {buf, g->where(lin, ctx_->invalid())})}));
      for (int64_t l = 0; l < chunk; ++l) pick.push_back(c * span + l * stride);
    }
    return ctx_->make(Op::GEP, vec(el, n), loads, pick);
  }

  // Lanes that share few elements scattered over a short span (a resize by 5 / 4: each window
  // position's lanes 4 apart, five lanes to an element): one contiguous load of the span and a
  // shuffle that picks the lanes, not a load per run of one or two elements. The span is rounded
  // up to an even length (LLVM splits an odd one lane by lane), and taken only where it stays
  // inside the buffer for every value of the index. Lanes with elements of their own (a Winograd
  // transform's tiles 4 apart) keep their runs. nullptr otherwise.
  const UOp* span_load(const Lanes& ls, const std::vector<std::pair<int64_t, int64_t>>& runs,
                       const UOp* buf, int64_t n, DType el) {
    if (runs.size() < 4 || buf->dtype.ptr_size < 0) return nullptr;
    int64_t first = runs.front().first, elements = 0;
    for (auto [start, len] : runs) elements += len;
    int64_t span = runs.back().first + runs.back().second - first;
    span += span % 2;
    if (elements > 2 * static_cast<int64_t>(runs.size()) || 2 * elements > n || span > 64)
      return nullptr;
    const Access& a0 = ls.acc[0];
    if (a0.lin->vmin() + first < 0 || a0.lin->vmax() + first + span > buf->dtype.ptr_size)
      return nullptr;
    const UOp* load = ctx_->make(Op::LOAD, vec(el, span),
                                 {make_index(buf, a0.gate, simplify(a0.lin->add(first)))});
    std::vector<int64_t> pick;
    for (int64_t l = 0; l < n; ++l) pick.push_back(ls.offset[static_cast<size_t>(l)] - first);
    return ctx_->make(Op::GEP, vec(el, n), {load}, pick);
  }

  // Lanes that share a gate at constant offsets from the first as vector loads (one per run of
  // consecutive offsets, strided, or one over a short span), or nullptr.
  const UOp* uniform_load(const Lanes& ls, const UOp* buf, int64_t n, DType el) {
    if (!ls.uniform) return nullptr;
    if (const UOp* strided = strided_load(ls, buf, n, el)) return strided;
    auto runs = runs_of(ls.offset);
    if (const UOp* spanned = span_load(ls, runs, buf, n, el)) return spanned;
    if (odd_run(runs)) return nullptr;
    const Access& a0 = ls.acc[0];
    std::vector<const UOp*> loads;
    std::map<int64_t, int64_t> pos;  // offset -> position in the concatenation of the runs
    int64_t p = 0;
    for (auto [start, len] : runs) {
      const UOp* lin = simplify(a0.lin->add(start));
      loads.push_back(ctx_->make(Op::LOAD, vec(el, len), {make_index(buf, a0.gate, lin)}));
      for (int64_t k = 0; k < len; ++k) pos[start + k] = p++;
    }
    bool identity = loads.size() == 1 && p == n;
    for (int64_t l = 0; l < n && identity; ++l)
      identity = pos[ls.offset[static_cast<size_t>(l)]] == l;
    if (identity) return loads[0];
    std::vector<int64_t> lane_map;
    for (int64_t l = 0; l < n; ++l) lane_map.push_back(pos[ls.offset[static_cast<size_t>(l)]]);
    return ctx_->make(Op::GEP, vec(el, n), loads, lane_map);
  }

  // Lanes whose rows (the lanes along the fastest upcast axis) are each uniform, or each a
  // masked run, but not all alike: rows clamped or gated one by one (the tail rows of an output
  // tile taller than what is left; the padded lanes of a 28-wide row, in every row of the tile).
  // Each row as its vector loads, the rows concatenated; nullptr if some row is neither. A row
  // masked off entirely is zeros.
  const UOp* row_loads(const UOp* idx, const Lanes& ls, Mask m, const UOp* buf, int64_t n,
                       DType el) {
    int64_t row = fastest_size(m);
    if (row < 4 || row == n) return nullptr;
    const UOp* gates = nullptr;  // the index's gate over all lanes, for masked rows
    std::vector<const UOp*> rows;
    for (int64_t r = 0; r < n / row; ++r) {
      auto first = ls.acc.begin() + r * row;
      Lanes part = lanes_from(std::vector<Access>(first, first + row));
      const UOp* v = nullptr;
      if (std::all_of(part.acc.begin(), part.acc.end(), [](const Access& a) { return !a.lin; })) {
        const UOp* zero = ctx_->const_value(el, ConstValue::of_int(0));
        v = ctx_->make(Op::VECTORIZE, vec(el, row),
                       std::vector<const UOp*>(static_cast<size_t>(row), zero));
      } else if (part.uniform) {
        v = uniform_load(part, buf, row, el);
      } else {
        std::vector<int64_t> pick;
        for (int64_t l = 0; l < row; ++l) pick.push_back(r * row + l);
        if (const UOp* at = masked_row(idx, part, m, buf, el, pick, gates, true))
          v = ctx_->make(Op::LOAD, vec(el, row), {at});
      }
      if (!v) return nullptr;
      rows.push_back(v);
    }
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t l = 0; l < n; ++l) all[static_cast<size_t>(l)] = l;
    return ctx_->make(Op::GEP, vec(el, n), rows, all);
  }

  // The masked access of one row of a tile (lanes `pick` of layout m, at consecutive addresses,
  // gates differing): the index's gate expanded over the lanes (`gates`, built once per tile),
  // the row's lanes picked from it. nullptr if the row is not of that shape.
  const UOp* masked_row(const UOp* idx, const Lanes& part, Mask m, const UOp* buf, DType el,
                        const std::vector<int64_t>& pick, const UOp*& gates, bool load) {
    const UOp* base = run_base(part, load);
    if (!base || el.is_bool() || idx->op != Op::WHERE || !idx->src[2]->is_invalid()) return nullptr;
    if (!gates) gates = convert(expand(idx->src[0]), mask_of(idx->src[0]), m);
    const UOp* g =
        ctx_->make(Op::GEP, vec(dtypes::bool_, static_cast<int64_t>(pick.size())), {gates}, pick);
    return ctx_->make(Op::INDEX, buf->dtype, {buf, g->where(base, ctx_->invalid())});
  }

  // The masked access of one row of a tile along upcast axis `axis` (its lanes at consecutive
  // addresses, gates differing), the row's first lane `first` of layout m: the index's gate
  // with the other axes fixed at that lane's values, expanded along the axis alone. Picking a
  // strided row's lanes out of the whole tile's gate vector instead cost ~25 mask-register
  // operations per row (a classifier's NCHW output, 32 channel rows x 8 positions: 20% of the
  // kernel's time). nullptr if the row is not of that shape.
  const UOp* gated_row(const UOp* idx, const Lanes& part, Mask m, const UOp* buf, DType el,
                       size_t axis, int64_t first) {
    const UOp* base = run_base(part);
    if (!base || el.is_bool() || idx->op != Op::WHERE || !idx->src[2]->is_invalid()) return nullptr;
    Mask row_axis = Mask{1} << axis, others = m & ~row_axis;
    const UOp* gate = substitute_lane(idx->src[0], others, project(others, m, first));
    const UOp* g = convert(expand(gate), mask_of(gate), row_axis);
    return ctx_->make(Op::INDEX, buf->dtype, {buf, g->where(base, ctx_->invalid())});
  }

  // Lane 0's element index when every lane has an address, lane l at lane 0's plus l (gates
  // may differ); nullptr otherwise. For a load (`holes`), lanes masked off entirely (no
  // address: a padded lane axis's last lanes, beyond the row; a window's first lane, left of a
  // padded row) fit any address, since the access's gate is false there: a 14-wide row in 16
  // lanes is one masked load, not 14 scalar loads assembled lane by lane (a 5x5 depthwise layer
  // at 14x14 ran at 5 GMAC/s). Lane 0's index may then lie before the buffer: the emitter forms
  // no address for a masked lane. Stores keep their per-lane form there (masked stores are
  // microcoded on AMD Zen; a classifier's last group ran 2x slower).
  const UOp* run_base(const Lanes& ls, bool holes = false) {
    size_t first = 0;
    while (holes && first < ls.acc.size() && !ls.acc[first].lin) ++first;
    if (first == ls.acc.size() || !ls.acc[first].lin) return nullptr;
    const UOp* base = simplify(ls.acc[first].lin->sub(static_cast<int64_t>(first)));
    for (size_t l = first + 1; l < ls.acc.size(); ++l) {
      const Access& a = ls.acc[l];
      if (!a.lin && holes) continue;
      if (!a.lin) return nullptr;
      const UOp* d = simplify(a.lin->sub(base));
      if (d->op != Op::CONST || d->cval().i != static_cast<int64_t>(l)) return nullptr;
    }
    return base;
  }

  const UOp* expand_load(const UOp* ld) {
    const UOp* index = ld->src[0];
    const UOp* buf = index->src[0];
    Mask m = mask_of(ld);
    if (m == 0) return ld;
    Lanes ls = lanes_of(index->src[1], m);
    int64_t n = lanes(m);
    DType el = ld->dtype.base();
    const UOp* out = uniform_load(ls, buf, n, el);
    if (!out) {
      if (const UOp* at = masked_run(index->src[1], m, ls, el, true))
        return ctx_->make(Op::LOAD, vec(el, n), {ctx_->make(Op::INDEX, buf->dtype, {buf, at})});
      out = row_loads(index->src[1], ls, m, buf, n, el);
      if (!out) out = masked_strided_load(index->src[1], m, ls, buf, n, el);
    }
    std::vector<const UOp*> scalars;
    for (const Access& a : ls.acc) {
      if (!a.lin)
        scalars.push_back(ctx_->const_value(el, ConstValue::of_int(0)));
      else
        scalars.push_back(ctx_->make(Op::LOAD, el, {make_index(buf, a.gate, a.lin)}));
    }
    if (!out) return ctx_->make(Op::VECTORIZE, vec(el, n), scalars);
    // Its lanes as scalar loads too, for convert() to broadcast from memory.
    lane_loads_[out] = std::move(scalars);
    return out;
  }

  std::vector<const UOp*> expand_store(const UOp* st) {
    const UOp* index = st->src[0];
    const UOp* buf = index->src[0];
    Mask mi = mask_of(index), mv = mask_of(st->src[1]);
    KILN_CHECK((mv & ~mi) == 0, "a store whose value has upcast lanes its index lacks");
    const UOp* value = convert(expand(st->src[1]), mv, mi);
    if (mi == 0) return {ctx_->make(Op::STORE, dtypes::void_, {index, value})};
    Lanes ls = lanes_of(index->src[1], mi);
    int64_t n = lanes(mi);
    DType el = value->dtype.base();
    std::vector<const UOp*> out;
    if (ls.uniform) {
      const Access& a0 = ls.acc[0];
      for (auto [start, len] : runs_of(ls.offset)) {
        std::vector<int64_t> lane_map;
        for (int64_t k = 0; k < len; ++k)
          for (int64_t l = 0; l < n; ++l)
            if (ls.offset[static_cast<size_t>(l)] == start + k) {
              lane_map.push_back(l);
              break;
            }
        bool identity = len == n;
        for (int64_t k = 0; k < len && identity; ++k)
          identity = lane_map[static_cast<size_t>(k)] == k;
        const UOp* v = identity ? value : ctx_->make(Op::GEP, vec(el, len), {value}, lane_map);
        out.push_back(ctx_->make(Op::STORE, dtypes::void_,
                                 {make_index(buf, a0.gate, simplify(a0.lin->add(start))), v}));
      }
      return out;
    }
    if (const UOp* at = masked_run(index->src[1], mi, ls, el, false))
      return {ctx_->make(Op::STORE, dtypes::void_,
                         {ctx_->make(Op::INDEX, buf->dtype, {buf, at}), value})};
    if (row_stores(index->src[1], ls, mi, buf, value, out)) return out;
    for (int64_t l = 0; l < n; ++l) {
      const Access& a = ls.acc[static_cast<size_t>(l)];
      if (!a.lin) continue;
      const UOp* v = ctx_->make(Op::GEP, el, {value}, std::vector<int64_t>{l});
      out.push_back(ctx_->make(Op::STORE, dtypes::void_, {make_index(buf, a.gate, a.lin), v}));
    }
    return out;
  }

  // The stores of row_loads' shape: each row of the tile one vector store, or one masked store
  // when its lanes' gates differ, a row masked off entirely none. A row is the lanes along one
  // upcast axis: the fastest, or a slower one the output is contiguous along while the lanes are
  // not (a stem convolution's tile of 8 positions x 32 output channels, channels the lanes, in an
  // NCHW output: 32 stores of 8 positions after a shuffle, not 256 scalar stores). False
  // (nothing added) if no axis gives such rows.
  bool row_stores(const UOp* idx, const Lanes& ls, Mask m, const UOp* buf, const UOp* value,
                  std::vector<const UOp*>& out) {
    int64_t n = lanes(m), step = 1;
    for (size_t a = ups_.size(); a-- > 0;) {
      if (!(m & (Mask{1} << a))) continue;
      int64_t size = ups_[a]->src[0]->cval().i;
      if (size >= 4 && size < n && rows_along(idx, ls, m, buf, value, a, step, out)) return true;
      step *= size;
    }
    return false;
  }

  // Rows along upcast axis `axis`, at lane step `step` (lane j of a row is lane first + j *
  // step, its axis value j).
  bool rows_along(const UOp* idx, const Lanes& ls, Mask m, const UOp* buf, const UOp* value,
                  size_t axis, int64_t step, std::vector<const UOp*>& out) {
    int64_t n = lanes(m), row = ups_[axis]->src[0]->cval().i;
    DType el = value->dtype.base();
    std::vector<const UOp*> stores;
    for (int64_t r = 0; r < n / row; ++r) {
      int64_t first = r / step * step * row + r % step;  // rows in lane order of their first lane
      std::vector<int64_t> pick;
      std::vector<Access> acc;
      for (int64_t j = 0; j < row; ++j) {
        pick.push_back(first + j * step);
        acc.push_back(ls.acc[static_cast<size_t>(first + j * step)]);
      }
      Lanes part = lanes_from(std::move(acc));
      if (std::all_of(part.acc.begin(), part.acc.end(), [](const Access& a) { return !a.lin; }))
        continue;
      const UOp* v = ctx_->make(Op::GEP, vec(el, row), {value}, pick);
      bool contiguous = part.uniform;
      for (int64_t l = 0; l < row && contiguous; ++l)
        contiguous = part.offset[static_cast<size_t>(l)] == l;
      const UOp* where;
      if (contiguous) {
        where = make_index(buf, part.acc[0].gate, part.acc[0].lin);
      } else if (!(where = gated_row(idx, part, m, buf, el, axis, first))) {
        return false;
      }
      stores.push_back(ctx_->make(Op::STORE, dtypes::void_, {where, v}));
    }
    out.insert(out.end(), stores.begin(), stores.end());
    return true;
  }

  // The size of the fastest upcast axis of layout m.
  int64_t fastest_size(Mask m) const {
    size_t fastest = ups_.size();
    while (fastest-- > 0 && !(m & (Mask{1} << fastest))) {
    }
    return ups_[fastest]->src[0]->cval().i;
  }

  const UOp* expand_reduce(const UOp* red) {
    Op op = red->op_arg();
    std::vector<const UOp*> unroll, loops;
    for (size_t i = 1; i < red->src.size(); ++i) {
      const UOp* r = red->src[i];
      (r->range().kind == AxisKind::Unroll ? unroll : loops).push_back(r);
    }
    // One copy of the body per assignment of the unroll ranges, in row-major order.
    std::vector<const UOp*> copies;
    for (int64_t c = 0; c < unroll_assignments(unroll); ++c) {
      std::unordered_map<const UOp*, const UOp*> map = unroll_assignment(unroll, c);
      const UOp* copy = unroll.empty() ? red->src[0] : simplify(substitute(red->src[0], map));
      // Reductions nested in the body get loops of their own in every copy.
      copies.push_back(c == 0 ? copy : fresh_inner_ranges(copy));
    }
    // Substituting unroll values can only remove upcast dependencies: every copy fits the
    // reduction's own layout.
    Mask m = mask_of(red);
    int64_t n = lanes(m), k = static_cast<int64_t>(copies.size());
    DType d = vec(red->dtype, n);
    if (const UOp* dot = dot_reduce(red, copies, m, loops)) return dot;
    // A small tile gets several accumulators, the unrolled copies spread over them: they become
    // lanes of a wider accumulator (p independent registers), so the loop-carried chain is one
    // operation per iteration instead of k, and the slices are combined after the loop. p is a
    // power of two: 5 copies of an 8-lane tile in one 40-lane vector were split by LLVM into
    // pieces and lane inserts (a 5x5 depthwise layer ran at 5 GFLOP/s); 4 slices of 32 lanes,
    // the fifth copy added into the first, are whole registers. Bigger tiles (all copies over
    // 64 lanes) keep one accumulator (more would not fit in registers).
    int64_t p = 1;
    while (p * 2 <= k && n * k <= kMaxSplitAccumulatorLanes) p *= 2;
    if (p > 1) {
      DType wide = vec(red->dtype, n * p);
      std::vector<const UOp*> parts(static_cast<size_t>(p), nullptr);
      for (int64_t c = 0; c < k; ++c) {
        const UOp* v = convert(expand(copies[static_cast<size_t>(c)]),
                               mask_of(copies[static_cast<size_t>(c)]), m);
        const UOp*& slot = parts[static_cast<size_t>(c % p)];
        slot = slot ? ctx_->make(op, d, {slot, v}) : v;
      }
      const UOp* cat;
      if (n == 1) {
        cat = ctx_->make(Op::VECTORIZE, wide, parts);
      } else {
        std::vector<int64_t> all(static_cast<size_t>(n * p));
        for (int64_t l = 0; l < n * p; ++l) all[static_cast<size_t>(l)] = l;
        cat = ctx_->make(Op::GEP, wide, parts, all);
      }
      const UOp* acc = ctx_->make(Op::ACC, wide, {}, next_acc_++);
      std::vector<const UOp*> src = {ctx_->make(op, wide, {acc, cat}), acc};
      src.insert(src.end(), loops.begin(), loops.end());
      const UOp* r = ctx_->make(Op::REDUCE, wide, src, op);
      std::vector<const UOp*> slices;
      for (int64_t j = 0; j < p; ++j) {
        std::vector<int64_t> idx(static_cast<size_t>(n));
        for (int64_t l = 0; l < n; ++l) idx[static_cast<size_t>(l)] = j * n + l;
        slices.push_back(ctx_->make(Op::GEP, d, {r}, idx));
      }
      while (slices.size() > 1) {  // pairwise
        std::vector<const UOp*> next;
        for (size_t i = 0; i + 1 < slices.size(); i += 2)
          next.push_back(ctx_->make(op, d, {slices[i], slices[i + 1]}));
        if (slices.size() % 2) next.push_back(slices.back());
        slices = std::move(next);
      }
      return slices[0];
    }
    const UOp* acc = ctx_->make(Op::ACC, d, {}, next_acc_++);
    const UOp* body = acc;
    for (const UOp* c : copies) body = ctx_->make(op, d, {body, convert(expand(c), mask_of(c), m)});
    std::vector<const UOp*> src = {body, acc};
    src.insert(src.end(), loops.begin(), loops.end());
    return ctx_->make(Op::REDUCE, d, src, op);
  }

  // An int32 sum of products of uint8 and int8 values (an integer contraction, its reduction
  // unrolled by a multiple of 4): each four consecutive copies one DOT4 (vpdpbusd where the
  // target has it; late_lower lowers it otherwise). The kernel's layouts put the four bytes of
  // each lane next to each other (the reduction's innermost 4 elements are contiguous in both
  // operands), so each operand is one vector load. nullptr if the reduction is not of that form.
  const UOp* dot_reduce(const UOp* red, const std::vector<const UOp*>& copies, Mask m,
                        const std::vector<const UOp*>& loops) {
    if (red->op_arg() != Op::ADD || red->dtype != dtypes::int32 || copies.size() % 4 != 0)
      return nullptr;
    std::vector<const UOp*> us, ss;  // the uint8 and the int8 factor of each copy
    for (const UOp* c : copies) {
      auto [u, s] = byte_product_factors(c);
      if (!u) return nullptr;
      us.push_back(u);
      ss.push_back(s);
    }
    int64_t n = lanes(m);
    const UOp* acc = ctx_->make(Op::ACC, vec(red->dtype, n), {}, next_acc_++);
    const UOp* body = acc;
    for (size_t g = 0; g < copies.size(); g += 4) {
      const UOp* a = interleaved(std::vector<const UOp*>(us.begin() + g, us.begin() + g + 4), m);
      const UOp* b = interleaved(std::vector<const UOp*>(ss.begin() + g, ss.begin() + g + 4), m);
      body = ctx_->make(Op::DOT4, acc->dtype, {body, a, b});
    }
    std::vector<const UOp*> src = {body, acc};
    src.insert(src.end(), loops.begin(), loops.end());
    return ctx_->make(Op::REDUCE, acc->dtype, src, Op::ADD);
  }

  // Four values in layout m as one vector of 4 x lanes(m): lane 4l + j is value j's lane l. Four
  // loads of one buffer whose lanes are at constant offsets from each other are loaded as runs
  // (the int8 weights' 64 consecutive bytes; an activation's 4 bytes, broadcast); other values
  // are expanded and interleaved.
  const UOp* interleaved(const std::vector<const UOp*>& xs, Mask m) {
    int64_t n = lanes(m);
    DType el = xs[0]->dtype.base();
    bool loads = true;
    for (const UOp* x : xs)
      loads = loads && x->op == Op::LOAD && x->src[0]->src[0] == xs[0]->src[0]->src[0];
    if (loads) {
      std::vector<Access> acc;
      for (int64_t l = 0; l < n; ++l)
        for (const UOp* x : xs)
          acc.push_back(split_index(substitute_lane(x->src[0]->src[1], m, l)));
      Lanes ls = lanes_from(std::move(acc));
      const UOp* buf = xs[0]->src[0]->src[0];
      if (const UOp* v = broadcast_words(ls, buf, n, el)) return v;
      if (const UOp* v = uniform_load(ls, buf, 4 * n, el)) return v;
    }
    std::vector<const UOp*> vs;
    for (const UOp* x : xs) vs.push_back(convert(expand(x), mask_of(x), m));
    std::vector<int64_t> idx;
    for (int64_t l = 0; l < n; ++l)
      for (int64_t j = 0; j < 4; ++j) idx.push_back(j * n + l);
    return ctx_->make(Op::GEP, vec(el, 4 * n), vs, idx);
  }

  // The broadcast operand of a DOT4 (an activation's four channels, the same for every output
  // channel lane): every 32-bit lane four consecutive bytes, lanes sharing them. One 4-byte load
  // per distinct word, each broadcast: merged into one run (the words of consecutive positions
  // are adjacent), LLVM built them from 8-byte loads, shifts and shuffles. nullptr if the lanes
  // are not of that shape.
  const UOp* broadcast_words(const Lanes& ls, const UOp* buf, int64_t n, DType el) {
    if (!ls.uniform) return nullptr;
    std::vector<int64_t> words;  // distinct word offsets, in first-use order
    std::vector<int64_t> pick;
    for (int64_t l = 0; l < n; ++l) {
      int64_t o = ls.offset[static_cast<size_t>(4 * l)];
      for (int64_t j = 1; j < 4; ++j)
        if (ls.offset[static_cast<size_t>(4 * l + j)] != o + j) return nullptr;
      auto it = std::find(words.begin(), words.end(), o);
      int64_t w = it - words.begin();
      if (it == words.end()) words.push_back(o);
      for (int64_t j = 0; j < 4; ++j) pick.push_back(4 * w + j);
    }
    if (static_cast<int64_t>(words.size()) == n) return nullptr;  // no lane shares a word
    // Each word loaded as 4 bytes and read as one int32; the lanes a vector of those int32s
    // (a splat per register: vpbroadcastd from memory), read back as bytes.
    const Access& a0 = ls.acc[0];
    std::vector<const UOp*> loaded;
    for (int64_t o : words)
      loaded.push_back(
          ctx_->make(Op::BITCAST, dtypes::int32,
                     {ctx_->make(Op::LOAD, vec(el, 4),
                                 {make_index(buf, a0.gate, simplify(a0.lin->add(o)))})}));
    std::vector<const UOp*> lanes_words;
    for (int64_t l = 0; l < n; ++l)
      lanes_words.push_back(loaded[static_cast<size_t>(pick[static_cast<size_t>(4 * l)] / 4)]);
    const UOp* v = ctx_->make(Op::VECTORIZE, vec(dtypes::int32, n), lanes_words);
    return ctx_->make(Op::BITCAST, vec(el, 4 * n), {v});
  }

  // `body` with the ranges of the REDUCEs inside it replaced by new ranges (new ids).
  const UOp* fresh_inner_ranges(const UOp* body) {
    std::unordered_map<const UOp*, const UOp*> map;
    for (const UOp* u : body->toposort())
      if (u->op == Op::REDUCE)
        for (size_t i = 1; i < u->src.size(); ++i)
          if (!map.count(u->src[i]))
            map[u->src[i]] =
                ctx_->range(u->src[i]->src[0], next_range_id_++, u->src[i]->range().kind);
    return map.empty() ? body : substitute(body, map);
  }

  Context* ctx_;
  int64_t next_range_id_ = 0;
  std::vector<const UOp*> ups_;
  std::unordered_map<const UOp*, const UOp*> done_;
  // Expanded vector loads of contiguous runs -> the same lanes as scalar loads.
  std::unordered_map<const UOp*, std::vector<const UOp*>> lane_loads_;
  int64_t next_acc_ = 0;
};

}  // namespace

const UOp* expand_kernel(const UOp* ast) {
  const UOp* out = Expander(ast).run(ast);
  verify(out, IrStage::Lowered);
  return out;
}

}  // namespace kiln
