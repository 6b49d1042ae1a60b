#include "compiler/tensor/extent_analysis.h"

#include <unordered_set>

#include "compiler/ir/printer.h"
#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/support/error.h"

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

  // Every node `root` reaches (the whole graph: its sink).
  void run(const UOp* root) {
    for (const GraphInput& in : g_.inputs()) {
      if (in.axis_symbols.empty()) continue;
      std::vector<const UOp*> e;
      const Shape& shape = in.buffer->shape();
      for (size_t i = 0; i < shape.size(); ++i)
        e.push_back(in.axis_symbols[i] >= 0 ? g_.symbol_var(in.axis_symbols[i])
                                            : ctx_.const_index(shape[i]));
      set(in.buffer, std::move(e));
    }
    // A counted value holds its count's entries along its axis.
    for (const GraphCounted& c : g_.counted_values()) {
      std::vector<const UOp*> e = out_.of(c.out);
      e[c.axis] = g_.symbol_var(g_.counts()[static_cast<size_t>(c.count)].symbol);
      set(c.out, std::move(e));
    }
    for (const GraphLoop& l : g_.loops()) loop(l);
    visit(root);
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

  // Extents of every node `root` reaches not visited yet.
  void visit(const UOp* root) {
    for (const UOp* u : root->toposort())
      if (u->has_shape() && u->op != Op::BUFFER && visited_.insert(u).second) {
        if (seen_) seen_->push_back(u);
        set(u, extents_of(u));
        if (u->op == Op::FDIV) find_mean(u);
      }
  }

  // A loop group's states and stacked outputs (loops in order: a loop's initial values may read
  // an earlier one's results). A state holds its initial value's extents, except along an axis
  // the initial value fills (a constant broadcast: zeros before a recurrence over a symbolic
  // batch) where the next value holds fewer: there the state holds the next value's, and the
  // body is visited again with them. Any other difference between the next value's extents
  // and the state's is refused: a state keeps its shape. Stacked outputs hold as many rows as
  // the loop ran iterations of its stacked values.
  void loop(const GraphLoop& l) {
    std::vector<std::vector<const UOp*>> held;
    for (const auto& st : l.states) {
      visit(st.init);
      held.push_back(out_.of(st.init));
    }
    for (int pass = 0;; ++pass) {
      for (size_t k = 0; k < l.states.size(); ++k) {
        out_.dynamic_.erase(l.states[k].in);
        out_.dynamic_.erase(l.states[k].out);
        set(l.states[k].in, held[k]);
        set(l.states[k].out, held[k]);
      }
      std::vector<const UOp*> seen;
      seen_ = &seen;
      for (const auto& st : l.states)
        if (st.next) visit(st.next);
      for (const auto& sc : l.scans) visit(sc.value);
      seen_ = nullptr;
      bool changed = false;
      for (size_t k = 0; k < l.states.size(); ++k) {
        const GraphLoop::State& st = l.states[k];
        if (!st.next || st.next == st.in) continue;
        std::vector<const UOp*> b = out_.of(st.next);
        for (size_t i = 0; i < b.size(); ++i) {
          if (simplify(held[k][i]) == simplify(b[i])) continue;
          if (pass > 0 || !full(st.init, i, held[k][i]))
            refuse(st.next, str_cat(l.name, ": the next value of a loop-carried state holds ",
                                    render(b[i]), " along axis ", i, " where the state holds ",
                                    render(held[k][i]), " (a state keeps its shape)"));
          held[k][i] = b[i];
          changed = true;
        }
      }
      if (!changed) break;
      for (const UOp* u : seen) {
        visited_.erase(u);
        out_.dynamic_.erase(u);
        out_.mean_counts_.erase(u);
      }
    }
    for (const auto& sc : l.scans) {
      std::vector<const UOp*> e = {l.fixed  ? ctx_.const_index(l.max_trips)
                                   : l.rows ? l.rows
                                            : g_.symbol_var(l.count)};
      for (const UOp* x : out_.of(sc.value)) e.push_back(x);
      set(sc.out, std::move(e));
    }
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
  std::unordered_set<const UOp*> visited_;
  std::vector<const UOp*>* seen_ = nullptr;  // records the nodes visit() reaches, when set
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

Extents compute_extents(Graph& g) {
  Extents e;
  e.ctx_ = &g.ctx();
  if (g.symbols().empty()) return e;
  ExtentAnalysis(g, e).run(g.sink());
  return e;
}

std::vector<const UOp*> extents_now(Graph& g, const UOp* node) {
  Extents e;
  e.ctx_ = &g.ctx();
  if (!g.symbols().empty()) ExtentAnalysis(g, e).run(node);
  return e.of(node);
}

}  // namespace kiln
