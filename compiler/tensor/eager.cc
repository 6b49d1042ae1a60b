#include "compiler/tensor/eager.h"

#include <array>
#include <cstring>
#include <functional>

#include "compiler/ir/const_eval.h"
#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

namespace {

// Calls f(out_index, multi_index) for every element of `shape` in C order.
void for_each_index(const Shape& shape,
                    const std::function<void(int64_t, const std::vector<int64_t>&)>& f) {
  int64_t n = shape_numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t linear(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t l = 0;
  for (size_t i = 0; i < idx.size(); ++i) l += idx[i] * strides[i];
  return l;
}

// out[i] = in[base + sum_d idx_d * view[d]] for every element of `out` in C order: a movement
// op that is a strided view of its source (a permute, an expand, a shrink, a flip, a window),
// copied as bytes. Constant folding moves every weight through a few of these (packing into
// panels, the Winograd layouts): element by element through ConstValue they were most of
// resnet50's compile.
template <typename T>
void copy_view(const uint8_t* in, uint8_t* out, const Shape& shape,
               const std::vector<int64_t>& view, int64_t base) {
  int64_t n = shape_numel(shape);
  if (n == 0) return;
  size_t rank = shape.size();
  const T* src = reinterpret_cast<const T*>(in);
  T* dst = reinterpret_cast<T*>(out);
  if (rank == 0) {
    dst[0] = src[base];
    return;
  }
  int64_t inner = shape[rank - 1], step = view[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t off = base;
  for (int64_t o = 0; o < n; o += inner) {
    for (int64_t j = 0; j < inner; ++j) dst[o + j] = src[off + j * step];
    for (size_t d = rank - 1; d-- > 0;) {
      off += view[d];
      if (++idx[d] < shape[d]) break;
      off -= idx[d] * view[d];
      idx[d] = 0;
    }
  }
}

void copy_view(const NDArray& s, NDArray& a, const std::vector<int64_t>& view, int64_t base) {
  switch (s.dtype().itemsize()) {
    case 1:
      return copy_view<uint8_t>(s.data(), a.data(), a.shape(), view, base);
    case 2:
      return copy_view<uint16_t>(s.data(), a.data(), a.shape(), view, base);
    case 4:
      return copy_view<uint32_t>(s.data(), a.data(), a.shape(), view, base);
    case 8:
      return copy_view<uint64_t>(s.data(), a.data(), a.shape(), view, base);
    default:
      throw InternalError(str_cat("eager evaluation: a view of ", s.dtype().str()));
  }
}

// A weight is read where the graph keeps it, and a CONTIGUOUS is its source's value: neither
// is copied into the cache (resnet50's 100 MB of weights were copied once more per fold).
const UOp* stored_as(const UOp* u) {
  while (u->op == Op::CONTIGUOUS) u = u->src[0];
  return u;
}

bool is_graph_weight(const UOp* u) {
  return u->op == Op::BUFFER && u->buffer().kind == BufferKind::Weight;
}

}  // namespace

EagerEvaluator::EagerEvaluator(const Graph& g, std::map<std::string, NDArray> inputs)
    : g_(g), inputs_(std::move(inputs)) {}

const NDArray& EagerEvaluator::value_of(const UOp* u) const {
  u = stored_as(u);
  if (is_graph_weight(u)) return g_.weight(u->buffer().id);
  return cache_.at(u);
}

const NDArray& EagerEvaluator::eval(const UOp* root) {
  const UOp* r = stored_as(root);
  if (is_graph_weight(r)) return g_.weight(r->buffer().id);
  if (auto it = cache_.find(r); it != cache_.end()) return it->second;
  // Bottom-up over the toposort so that deep graphs do not recurse.
  for (const UOp* u : r->toposort()) {
    if (cache_.count(u) || !u->has_shape() || u->op == Op::CONTIGUOUS || is_graph_weight(u))
      continue;
    cache_.emplace(u, compute(u));
  }
  return cache_.at(r);
}

NDArray EagerEvaluator::take(const UOp* root) {
  const UOp* r = stored_as(root);
  if (is_graph_weight(r)) return g_.weight(r->buffer().id);  // the graph keeps its own
  eval(r);
  NDArray v = std::move(cache_.at(r));
  cache_.clear();
  return v;
}

int64_t EagerEvaluator::symbol(int slot) const {
  auto it = symbols_.find(slot);
  return it == symbols_.end() ? -1 : it->second;
}

void EagerEvaluator::run_loop(size_t index) {
  const GraphLoop& l = g_.loops()[index];
  int64_t trips = l.trips ? eval(l.trips).get(0).as_int() : INT64_MAX;
  std::vector<NDArray> states;
  for (const auto& s : l.states) states.push_back(eval(s.init));
  std::vector<NDArray> scans;
  for (const auto& sc : l.scans) {
    scans.emplace_back(sc.out->dtype, sc.out->shape());
    std::memset(scans.back().data(), 0, static_cast<size_t>(scans.back().nbytes()));
  }
  int64_t i = 0;
  for (; i < trips && (l.cond < 0 || states[static_cast<size_t>(l.cond)].get(0).as_int()); ++i) {
    if (i >= l.max_trips)
      throw Error(str_cat(l.name, ": more than the ", l.max_trips, " iterations planned"));
    // A fresh evaluator per iteration: every body value is computed anew from this state.
    EagerEvaluator body(g_, inputs_);
    body.bound_ = bound_;
    body.symbols_ = symbols_;
    body.symbols_[l.iteration] = i;
    for (size_t k = 0; k < states.size(); ++k) body.bound_[l.states[k].in] = states[k];
    std::vector<NDArray> next;
    for (const auto& s : l.states) next.push_back(body.eval(s.next));
    for (size_t j = 0; j < scans.size(); ++j) {
      const NDArray& v = body.eval(l.scans[j].value);
      std::memcpy(scans[j].data() + i * v.nbytes(), v.data(), static_cast<size_t>(v.nbytes()));
    }
    states = std::move(next);
  }
  for (size_t k = 0; k < states.size(); ++k) bound_[l.states[k].out] = states[k];
  for (size_t j = 0; j < scans.size(); ++j) bound_[l.scans[j].out] = scans[j];
  symbols_[l.count] = i;
}

NDArray EagerEvaluator::compute(const UOp* u) {
  auto src = [&](size_t i) -> const NDArray& { return value_of(u->src[i]); };
  const Shape& shape = u->shape();
  switch (u->op) {
    case Op::BUFFER: {
      const BufferArg& b = u->buffer();  // not a weight: eval reads those in place
      if (b.kind == BufferKind::Intermediate) {
        if (auto it = bound_.find(u); it != bound_.end()) return it->second;
        for (const GraphCounted& c : g_.counted_values()) {
          if (c.out != u) continue;
          const GraphCount& k = g_.counts()[static_cast<size_t>(c.count)];
          symbols_[k.symbol] = eval(k.count).get(0).as_int();
          return eval(c.value);
        }
        for (size_t l = 0; l < g_.loops().size(); ++l) {
          const GraphLoop& loop = g_.loops()[l];
          bool result = false;
          for (const auto& st : loop.states) result |= st.out == u;
          for (const auto& sc : loop.scans) result |= sc.out == u;
          if (!result) continue;
          run_loop(l);
          return bound_.at(u);
        }
        throw Error("eager evaluation: loop state '" + b.name + "' read outside its loop body");
      }
      auto it = inputs_.find(b.name);
      if (it == inputs_.end()) throw Error("eager evaluation: no value for input '" + b.name + "'");
      if (it->second.shape() != b.shape || it->second.dtype() != u->dtype)
        throw Error("eager evaluation: input '" + b.name + "' is " + it->second.dtype().str() +
                    " " + shape_str(it->second.shape()) + ", the model wants " + u->dtype.str() +
                    " " + shape_str(b.shape));
      return it->second;
    }
    case Op::CONST: {
      NDArray a(u->dtype, {});
      a.set(0, u->cval());
      return a;
    }
    case Op::RESHAPE:
      return NDArray(u->dtype, shape, src(0).bytes());
    case Op::CAST:
    case Op::BITCAST: {
      if (u->src[0]->op == Op::DEFINE_VAR) {
        int64_t v = symbol(static_cast<int>(u->src[0]->var().slot));
        if (v < 0) throw Error("eager evaluation: symbol '" + u->src[0]->var().name + "' unset");
        NDArray a(u->dtype, {});
        a.set(0, eval_cast(dtypes::int64, u->dtype, ConstValue::of_int(v)));
        return a;
      }
      const NDArray& s = src(0);
      NDArray a(u->dtype, shape);
      for (int64_t i = 0; i < a.numel(); ++i)
        a.set(i, u->op == Op::CAST ? eval_cast(s.dtype(), u->dtype, s.get(i))
                                   : eval_bitcast(s.dtype(), u->dtype, s.get(i)));
      return a;
    }
    default:
      break;
  }
  if (alu_arity(u->op)) {
    NDArray a(u->dtype, shape);
    std::array<ConstValue, 3> args;
    DType d = u->op == Op::WHERE ? u->src[1]->dtype : u->src[0]->dtype;
    size_t n = u->src.size();
    for (int64_t i = 0; i < a.numel(); ++i) {
      for (size_t k = 0; k < n; ++k) args[k] = src(k).get(i);
      a.set(i, eval_alu(u->op, d, std::span<const ConstValue>(args.data(), n)));
    }
    return a;
  }
  const NDArray& s = src(0);
  const Shape& in = s.shape();
  std::vector<int64_t> st = s.strides();
  NDArray a(u->dtype, shape);
  std::vector<int64_t> si(in.size());
  // Per output axis, the source elements one step along it moves: the strided views.
  std::vector<int64_t> view(shape.size(), 0);
  switch (u->op) {
    case Op::PERMUTE: {
      const auto& p = u->varg();
      for (size_t i = 0; i < p.size(); ++i) view[i] = st[static_cast<size_t>(p[i])];
      copy_view(s, a, view, 0);
      return a;
    }
    case Op::EXPAND:
      for (size_t i = 0; i < in.size(); ++i) view[i] = in[i] == 1 ? 0 : st[i];
      copy_view(s, a, view, 0);
      return a;
    case Op::PAD: {
      const auto& p = u->varg();
      ConstValue pv = u->src[1]->cval();
      for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
        bool inside = true;
        for (size_t i = 0; i < in.size(); ++i) {
          si[i] = idx[i] - p[2 * i];
          inside &= si[i] >= 0 && si[i] < in[i];
        }
        a.set(o, inside ? s.get(linear(si, st)) : pv);
      });
      return a;
    }
    case Op::SHRINK: {
      const auto& p = u->varg();
      int64_t base = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        view[i] = st[i];
        base += p[2 * i] * st[i];
      }
      copy_view(s, a, view, base);
      return a;
    }
    case Op::FLIP: {
      int64_t base = 0;
      for (size_t i = 0; i < in.size(); ++i) view[i] = st[i];
      for (int64_t x : u->varg()) {
        size_t i = static_cast<size_t>(x);
        base += (in[i] - 1) * st[i];
        view[i] = -st[i];
      }
      copy_view(s, a, view, base);
      return a;
    }
    case Op::WINDOW: {
      // Output axes (lead..., positions..., offsets...): position j steps w[n + j] source
      // elements along source axis lead + j, offset j steps w[2n + j].
      const auto& w = u->varg();
      size_t n = w.size() / 3, lead = in.size() - n;
      for (size_t i = 0; i < lead; ++i) view[i] = st[i];
      for (size_t j = 0; j < n; ++j) {
        view[lead + j] = w[n + j] * st[lead + j];
        view[lead + n + j] = w[2 * n + j] * st[lead + j];
      }
      copy_view(s, a, view, 0);
      return a;
    }
    case Op::GATHER: {
      const NDArray& ix = src(1);
      std::vector<int64_t> ist = ix.strides();
      size_t axis = static_cast<size_t>(u->iarg()), k = ix.shape().size();
      std::vector<int64_t> ii(k);
      for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
        for (size_t i = 0; i < axis; ++i) si[i] = idx[i];
        for (size_t i = 0; i < k; ++i) ii[i] = idx[axis + i];
        int64_t g = ix.get(linear(ii, ist)).i;
        if (g < 0) g += in[axis];
        for (size_t i = axis + 1; i < in.size(); ++i) si[i] = idx[i + k - 1];
        si[axis] = g;
        // Out-of-range indices read 0 (the generated code does the same, and never faults).
        a.set(o, (g >= 0 && g < in[axis]) ? s.get(linear(si, st)) : ConstValue::of_int(0));
      });
      return a;
    }
    case Op::REDUCE_AXIS: {
      const ReduceArg& r = u->reduce_arg();
      DType d = u->dtype;
      std::vector<int64_t> ost = a.strides();
      for (int64_t o = 0; o < a.numel(); ++o) a.set(o, reduce_identity(r.op, d));
      for_each_index(in, [&](int64_t i, const std::vector<int64_t>& idx) {
        std::vector<int64_t> oi = idx;
        for (int64_t ax : r.axes) oi[static_cast<size_t>(ax)] = 0;
        int64_t o = linear(oi, ost);
        ConstValue args[2] = {a.get(o), s.get(i)};
        a.set(o, eval_alu(r.op, d, args));
      });
      return a;
    }
    default:
      break;
  }
  throw InternalError(str_cat("eager evaluation: unsupported op ", op_name(u->op)));
}

}  // namespace kiln
