#include "compiler/schedule/extents.h"

#include "compiler/ir/printer.h"
#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/schedule/rangeify.h"
#include "compiler/support/error.h"
#include "schema/kiln_abi.h"

#include <bit>
#include <functional>

namespace kiln {

const UOp* Extents::axis(const UOp* n, size_t i) const {
  if (auto it = dynamic_.find(n); it != dynamic_.end()) return it->second.at(i);
  return ctx_->const_index(n->shape().at(i));
}

std::vector<const UOp*> Extents::of(const UOp* n) const {
  if (auto it = dynamic_.find(n); it != dynamic_.end()) return it->second;
  std::vector<const UOp*> r;
  for (int64_t d : n->shape()) r.push_back(ctx_->const_index(d));
  return r;
}

class ExtentAnalysis {
 public:
  ExtentAnalysis(Graph& g, Extents& out) : g_(g), ctx_(g.ctx()), out_(out) {}

  void run() {
    for (const GraphInput& in : g_.inputs()) {
      if (in.axis_symbols.empty()) continue;
      std::vector<const UOp*> e;
      const Shape& shape = in.buffer->shape();
      for (size_t i = 0; i < shape.size(); ++i)
        e.push_back(in.axis_symbols[i] >= 0 ? g_.symbol_var(in.axis_symbols[i])
                                            : ctx_.const_index(shape[i]));
      set(in.buffer, std::move(e));
    }
    // A loop's stacked outputs hold as many rows as it ran iterations.
    for (const GraphLoop& l : g_.loops())
      for (const auto& sc : l.scans) {
        if (l.fixed) continue;  // always max_trips rows
        std::vector<const UOp*> e = out_.of(sc.out);
        e[0] = g_.symbol_var(l.count);
        set(sc.out, std::move(e));
      }
    // A counted value holds its count's entries along its axis.
    for (const GraphCounted& c : g_.counted_values()) {
      std::vector<const UOp*> e = out_.of(c.out);
      e[c.axis] = g_.symbol_var(g_.counts()[static_cast<size_t>(c.count)].symbol);
      set(c.out, std::move(e));
    }
    for (const UOp* u : g_.sink()->toposort())
      if (u->has_shape() && u->op != Op::BUFFER) {
        set(u, extents_of(u));
        if (u->op == Op::FDIV) find_mean(u);
      }
  }

 private:
  // Keeps `e` only when some axis is symbolic (a static node needs no entry).
  void set(const UOp* u, std::vector<const UOp*> e) {
    bool symbolic = false;
    for (size_t i = 0; i < e.size(); ++i) {
      e[i] = simplify(e[i]);
      symbolic |= e[i]->op != Op::CONST || e[i]->cval().i != u->shape()[i];
    }
    if (symbolic) out_.dynamic_[u] = std::move(e);
  }

  // FDIV(sum over axes A, count) where some axis of A is symbolic and the count is a constant
  // equal to the product of A's bounds: Tensor::mean's form. The count becomes the extents'.
  void find_mean(const UOp* u) {
    const UOp* sum = u->src[0];
    while (sum->op == Op::RESHAPE || sum->op == Op::CAST) sum = sum->src[0];
    if (sum->op != Op::REDUCE_AXIS || sum->reduce_arg().op != Op::ADD) return;
    const UOp* src = sum->src[0];
    if (!out_.symbolic(src)) return;
    const UOp* c = u->src[1];
    while (c->op == Op::EXPAND || c->op == Op::RESHAPE) c = c->src[0];
    if (c->op != Op::CONST) return;
    int64_t bound = 1;
    const UOp* count = ctx_.const_index(1);
    bool symbolic = false;
    for (int64_t a : sum->reduce_arg().axes) {
      size_t i = static_cast<size_t>(a);
      bound *= src->shape()[i];
      count = count->mul(out_.axis(src, i));
      symbolic |= !full(src, i, out_.axis(src, i));
    }
    if (symbolic && c->cval().as_double() == static_cast<double>(bound))
      out_.mean_counts_[u] = simplify(count);
  }

  const UOp* size(const UOp* n, size_t i) { return ctx_.const_index(n->shape()[i]); }
  bool full(const UOp* n, size_t i, const UOp* e) {
    return e->op == Op::CONST && e->cval().i == n->shape()[i];
  }

  [[noreturn]] void refuse(const UOp* u, const std::string& why) {
    const std::string* origin = g_.origin(u);
    throw Error(str_cat("symbolic shapes: ", origin ? *origin + " (" : std::string(),
                        describe_node(u), origin ? ")" : "", ": ", why));
  }

  std::vector<const UOp*> extents_of(const UOp* u) {
    const Shape& shape = u->shape();
    const UOp* s0 = u->src.empty() ? nullptr : u->src[0];
    bool elementwise =
        alu_arity(u->op) || u->op == Op::CAST || u->op == Op::BITCAST || u->op == Op::CONTIGUOUS;
    if (elementwise) {
      // The region every operand holds values in: the smallest operand extent per axis (the
      // operands have the node's shape; broadcasts are explicit EXPANDs, whose extent is their
      // full size).
      std::vector<const UOp*> e;
      for (size_t i = 0; i < shape.size(); ++i) {
        const UOp* m = nullptr;
        for (const UOp* s : u->src) {
          if (!s->has_shape() || s->shape().size() != shape.size() || !out_.symbolic(s)) continue;
          const UOp* x = out_.axis(s, i);
          if (full(s, i, x)) continue;
          m = m ? simplify(m->minimum(x)) : x;
        }
        e.push_back(m ? m : size(u, i));
      }
      return e;
    }
    if (!s0 || !s0->has_shape() || !out_.symbolic(s0)) {
      if (u->op == Op::GATHER && out_.symbolic(u->src[1])) return gather(u);
      return out_.of(u);
    }
    std::vector<const UOp*> in = out_.of(s0);
    switch (u->op) {
      case Op::REDUCE_AXIS: {
        for (int64_t a : u->reduce_arg().axes) in[static_cast<size_t>(a)] = ctx_.const_index(1);
        return in;
      }
      case Op::PERMUTE: {
        std::vector<const UOp*> e;
        for (int64_t p : u->varg()) e.push_back(in[static_cast<size_t>(p)]);
        return e;
      }
      case Op::EXPAND: {
        for (size_t i = 0; i < shape.size(); ++i)
          if (s0->shape()[i] == 1) in[i] = size(u, i);
        return in;
      }
      case Op::FLIP:
        return in;
      case Op::PAD: {
        const auto& p = u->varg();
        for (size_t i = 0; i < in.size(); ++i)
          in[i] = full(s0, i, in[i]) ? size(u, i) : in[i]->add(p[2 * i] + p[2 * i + 1]);
        return in;
      }
      case Op::SHRINK: {
        const auto& p = u->varg();
        for (size_t i = 0; i < in.size(); ++i) {
          if (full(s0, i, in[i])) {
            in[i] = size(u, i);
          } else if (p[2 * i + 1] == s0->shape()[i]) {
            in[i] = in[i]->sub(p[2 * i])->maximum(ctx_.const_index(0));
          } else {
            refuse(u, str_cat("a slice [", p[2 * i], ", ", p[2 * i + 1], ") of axis ", i,
                              ", whose size is symbolic (", render(in[i]),
                              "): only a slice to the end of the axis is supported"));
          }
        }
        return in;
      }
      case Op::WINDOW:
        return window(u, in);
      case Op::RESHAPE:
        return reshape(u, in);
      case Op::GATHER:
        return gather(u);
      default:
        break;
    }
    refuse(u, "no extent rule for this op");
  }

  // Output positions of a window along a symbolic axis of extent e: the positions p with
  // p * stride + (window - 1) * dilation < e.
  std::vector<const UOp*> window(const UOp* u, const std::vector<const UOp*>& in) {
    const auto& w = u->varg();
    size_t k = w.size() / 3, lead = in.size() - k;
    std::vector<const UOp*> e(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(lead));
    for (size_t j = 0; j < k; ++j) {
      const UOp* x = in[lead + j];
      int64_t win = u->shape()[lead + k + j], stride = w[k + j], dil = w[2 * k + j];
      if (full(u->src[0], lead + j, x))
        e.push_back(size(u, lead + j));
      else
        e.push_back(
            x->sub((win - 1) * dil + 1 - stride)->maximum(ctx_.const_index(0))->idiv(stride));
    }
    for (size_t j = 0; j < k; ++j) e.push_back(size(u, lead + k + j));
    return e;
  }

  // Axes grouped by equal running products (size-1 axes aside); in a group only the outermost
  // input axis may be symbolic, and then the outermost output axis holds what fills whole rows.
  std::vector<const UOp*> reshape(const UOp* u, const std::vector<const UOp*>& in) {
    const Shape& is = u->src[0]->shape();
    const Shape& os = u->shape();
    std::vector<const UOp*> e;
    for (size_t j = 0; j < os.size(); ++j) e.push_back(size(u, j));
    std::vector<size_t> ia, oa;
    for (size_t i = 0; i < is.size(); ++i)
      if (is[i] != 1) ia.push_back(i);
    for (size_t j = 0; j < os.size(); ++j)
      if (os[j] != 1) oa.push_back(j);
    size_t i = 0, j = 0;
    while (i < ia.size() && j < oa.size()) {
      size_t i0 = i, j0 = j;
      int64_t pi = is[ia[i++]], pj = os[oa[j++]];
      while (pi != pj) {
        if (pi < pj && i < ia.size())
          pi *= is[ia[i++]];
        else if (j < oa.size())
          pj *= os[oa[j++]];
        else
          break;
      }
      for (size_t x = i0 + 1; x < i; ++x)
        if (!full(u->src[0], ia[x], in[ia[x]]))
          refuse(u, str_cat("axis ", ia[x], " has a symbolic size (", render(in[ia[x]]),
                            ") and is merged inside axis ", ia[i0],
                            ": only the outermost axis of a merged group may be symbolic"));
      const UOp* x = in[ia[i0]];
      if (full(u->src[0], ia[i0], x)) continue;
      int64_t inner_in = 1, inner_out = 1;
      for (size_t y = i0 + 1; y < i; ++y) inner_in *= is[ia[y]];
      for (size_t y = j0 + 1; y < j; ++y) inner_out *= os[oa[y]];
      const UOp* filled = x->mul(inner_in);
      if (!simplify(filled->mod(inner_out))->is_const(0))
        refuse(u, str_cat("axis ", ia[i0], " of size ", render(x), " is split by ", inner_out,
                          ", which the symbol's values need not divide"));
      e[oa[j0]] = filled->idiv(inner_out);
    }
    return e;
  }

  std::vector<const UOp*> gather(const UOp* u) {
    const UOp* s0 = u->src[0];
    const UOp* ix = u->src[1];
    size_t axis = static_cast<size_t>(u->iarg());
    std::vector<const UOp*> d = out_.of(s0), k = out_.of(ix);
    std::vector<const UOp*> e(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(axis));
    e.insert(e.end(), k.begin(), k.end());
    e.insert(e.end(), d.begin() + static_cast<std::ptrdiff_t>(axis + 1), d.end());
    return e;
  }

  Graph& g_;
  Context& ctx_;
  Extents& out_;
};

int64_t eval_extent(const UOp* e, const std::vector<int64_t>& vars) {
  std::unordered_map<const UOp*, const UOp*> values;
  for (const UOp* u : e->toposort())
    if (u->op == Op::DEFINE_VAR)
      values[u] = e->ctx()->const_index(vars.at(static_cast<size_t>(u->var().slot)));
  const UOp* v = simplify(substitute(e, values));
  KILN_CHECK(v->op == Op::CONST, "extent ", render(e), " does not evaluate to a number");
  return v->cval().i;
}

std::vector<int64_t> extent_program(const UOp* e) {
  std::vector<int64_t> out;
  std::function<void(const UOp*)> emit = [&](const UOp* u) {
    if (u->op == Op::CONST) {
      out.insert(out.end(), {KILN_ABI_EXTENT_CONST, u->cval().i});
      return;
    }
    if (u->op == Op::DEFINE_VAR) {
      out.insert(out.end(), {KILN_ABI_EXTENT_VAR, u->var().slot});
      return;
    }
    // Programs compute in int64: a cast between integer kinds (or of a 0/1 comparison) is a
    // no-op.
    if (u->op == Op::CAST) {
      emit(u->src[0]);
      return;
    }
    // A check's conditions (format 2.5): comparisons give 0 or 1, so AND and OR are MIN and
    // MAX; a != b and not-a compare with 0.
    bool negate = u->op == Op::CMPNE || (u->op == Op::XOR && u->dtype == dtypes::bool_);
    int64_t code = u->op == Op::ADD               ? KILN_ABI_EXTENT_ADD
                   : u->op == Op::MUL             ? KILN_ABI_EXTENT_MUL
                   : u->op == Op::IDIV            ? KILN_ABI_EXTENT_IDIV
                   : u->op == Op::MOD             ? KILN_ABI_EXTENT_MOD
                   : u->op == Op::MAX             ? KILN_ABI_EXTENT_MAX
                   : u->op == Op::MIN             ? KILN_ABI_EXTENT_MIN
                   : u->op == Op::AND             ? KILN_ABI_EXTENT_MIN
                   : u->op == Op::OR              ? KILN_ABI_EXTENT_MAX
                   : u->op == Op::CMPEQ || negate ? KILN_ABI_EXTENT_EQ
                   : u->op == Op::CMPLT           ? KILN_ABI_EXTENT_LT
                                                  : -1;
    if (code < 0 || u->src.size() != 2)
      throw InternalError(
          str_cat("extent ", render(e), ": no package opcode for ", op_name(u->op)));
    emit(u->src[0]);
    emit(u->src[1]);
    out.push_back(code);
    if (negate) out.insert(out.end(), {KILN_ABI_EXTENT_CONST, 0, KILN_ABI_EXTENT_EQ});
  };
  emit(e);
  return out;
}

void bind_value_symbols(const Plan& plan, const std::map<std::string, NDArray>& inputs,
                        std::vector<int64_t>& vars) {
  for (int id : plan.inputs) {
    const PlanBuffer& b = plan.buffer(id);
    for (size_t e = 0; e < b.value_symbols.size(); ++e) {
      const NDArray& a = inputs.at(b.name);
      int64_t v = a.get(static_cast<int64_t>(e)).as_int();
      if (a.dtype().is_float())  // the float32's bit pattern, as the runtime reads it
        v = std::bit_cast<int32_t>(static_cast<float>(a.get(static_cast<int64_t>(e)).as_double()));
      vars.at(static_cast<size_t>(b.value_symbols[e])) = v;
    }
  }
  // The runtime's interpreter, so a run the JIT accepts is one kiln_session_run accepts: an
  // overflow or a division by zero fails the check.
  for (const GraphCheck& c : plan.checks) {
    std::vector<int64_t> code = extent_program(c.holds);
    int64_t holds = 0;
    if (kiln_abi_extent_eval(code.data(), static_cast<uint32_t>(code.size()), vars.data(),
                             static_cast<uint32_t>(vars.size()), &holds) != 0 ||
        holds == 0)
      throw Error(c.message);
  }
}

std::vector<int64_t> bind_symbols(const std::vector<Symbol>& symbols,
                                  const std::vector<std::string>& names,
                                  const std::vector<Shape>& static_shapes,
                                  const std::vector<std::vector<const UOp*>>& extents,
                                  const std::vector<Shape>& shapes) {
  std::vector<int64_t> vars(symbols.size(), -1);
  std::vector<std::string> bound_by(symbols.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const Shape& want = static_shapes[i];
    const Shape& got = shapes[i];
    if (got.size() != want.size())
      throw Error(str_cat("input '", names[i], "' has rank ", got.size(), ", the model wants ",
                          want.size()));
    for (size_t a = 0; a < got.size(); ++a) {
      const UOp* e = extents[i].empty() ? nullptr : extents[i][a];
      if (!e || e->op != Op::DEFINE_VAR) {
        if (got[a] != want[a])
          throw Error(str_cat("input '", names[i], "' axis ", a, " is ", got[a],
                              ", the model fixes it to ", want[a]));
        continue;
      }
      size_t slot = static_cast<size_t>(e->var().slot);
      const Symbol& s = symbols.at(slot);
      if (got[a] < s.min || got[a] > s.max)
        throw Error(str_cat("input '", names[i], "' axis ", a, " is ", got[a], ": '", s.name,
                            "' must be in [", s.min, ", ", s.max, "]"));
      if (vars[slot] >= 0 && vars[slot] != got[a])
        throw Error(str_cat("input '", names[i], "' axis ", a, " is ", got[a], ": '", s.name,
                            "' is ", vars[slot], " (", bound_by[slot], ")"));
      vars[slot] = got[a];
      bound_by[slot] = str_cat("input '", names[i], "' axis ", a);
    }
  }
  for (size_t k = 0; k < symbols.size(); ++k)
    if (vars[k] < 0 && !symbols[k].value && symbols[k].loop < 0 && symbols[k].count < 0)
      throw Error("no input sets the symbol '" + symbols[k].name + "'");
  return vars;
}

Extents compute_extents(Graph& g) {
  Extents e;
  e.ctx_ = &g.ctx();
  if (g.symbols().empty()) return e;
  ExtentAnalysis(g, e).run();
  return e;
}

}  // namespace kiln
