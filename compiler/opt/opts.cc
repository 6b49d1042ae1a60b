#include "compiler/opt/opts.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/support/error.h"

namespace kiln {

const char* opt_kind_name(OptKind k) {
  switch (k) {
    case OptKind::Upcast:
      return "UPCAST";
    case OptKind::Unroll:
      return "UNROLL";
    case OptKind::Tile:
      return "TILE";
    case OptKind::Parallel:
      return "PARALLEL";
  }
  return "?";
}

std::string Opt::str() const {
  return str_cat(opt_kind_name(kind), "(r", range_id, ",", amount, ")");
}

KernelRanges kernel_ranges(const UOp* ast) {
  KernelRanges kr;
  std::vector<const UOp*> all;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE) all.push_back(u);
  std::sort(all.begin(), all.end(),
            [](const UOp* a, const UOp* b) { return a->range().id < b->range().id; });
  for (const UOp* r : all) {
    switch (r->range().kind) {
      case AxisKind::Loop:
      case AxisKind::Parallel:
        kr.loops.push_back(r);
        break;
      case AxisKind::Reduce:
        kr.reduces.push_back(r);
        break;
      case AxisKind::Upcast:
      case AxisKind::Unroll:
        kr.upcasts.push_back(r);
        break;
    }
  }
  return kr;
}

namespace {

// A range's size; for a symbolic range (its end a run-time value), its upper bound.
int64_t size_of(const UOp* r) {
  return r->src[0]->vmax();
}

// Replaces range `r` in the AST: every use by `expr`, and in a REDUCE's range list by `parts`.
const UOp* replace_range(const UOp* ast, const UOp* r, const UOp* expr,
                         const std::vector<const UOp*>& parts) {
  std::unordered_map<const UOp*, const UOp*> done;
  for (const UOp* n : ast->toposort()) {
    if (n == r) {
      done[n] = expr;
      continue;
    }
    std::vector<const UOp*> src;
    bool changed = false;
    for (size_t i = 0; i < n->src.size(); ++i) {
      const UOp* s = n->src[i];
      if (n->op == Op::REDUCE && i > 0 && s == r) {
        src.insert(src.end(), parts.begin(), parts.end());
        changed = true;
        continue;
      }
      const UOp* m = done.at(s);
      changed |= m != s;
      src.push_back(m);
    }
    done[n] = changed ? n->with_src(std::move(src)) : n;
  }
  return done.at(ast);
}

class Applier {
 public:
  explicit Applier(const UOp* ast) : ast_(ast), ctx_(ast->ctx()) {
    KernelRanges kr = kernel_ranges(ast);
    loop_order_ = kr.loops;
    for (const UOp* r : ast->toposort())
      if (r->op == Op::RANGE) next_id_ = std::max(next_id_, r->range().id + 1);
  }

  void apply(const Opt& o, bool lane_axis = false) {
    const UOp* r = find(o);
    int64_t n = size_of(r);
    AxisKind k = r->range().kind;
    auto bad = [&](const std::string& why) { throw Error(str_cat("opt ", o.str(), ": ", why)); };
    if (o.amount < 1) bad("amount must be >= 1");
    // A symbolic range's size is known at run time only. It can be split into tasks (each
    // takes its share of the run-time size), and an output loop upcast by an amount that
    // divides its bound: the last group's lanes past the run-time size compute values nobody
    // reads and store them in the buffer's padding (it is laid out at the bound). A reduction
    // must not run past its size, so it is not unrolled; nor tiled (not needed yet).
    bool symbolic = r->src[0]->op != Op::CONST;
    if (symbolic && (o.kind == OptKind::Unroll || o.kind == OptKind::Tile))
      bad(str_cat("r", o.range_id, " has a symbolic size (", n, " at most)"));
    if (symbolic && o.kind == OptKind::Upcast && n % o.amount != 0)
      bad(str_cat("r", o.range_id, " has a symbolic size: the amount must divide its bound ", n));
    switch (o.kind) {
      case OptKind::Upcast:
      case OptKind::Tile:
        if (k != AxisKind::Loop)
          bad(str_cat("needs an output loop, r", o.range_id, " is ", axis_kind_name(k)));
        break;
      case OptKind::Unroll:
        // An output loop is unrolled whole, into one copy of the store per iteration (the
        // expander's selector copies), in a kernel without reductions (whose copies would share
        // their loops).
        if (k == AxisKind::Loop) {
          if (o.amount != n) bad(str_cat("an output loop is unrolled whole (", n, ")"));
          if (n > kMaxUnrolledOutputs)
            bad(str_cat("more than ", kMaxUnrolledOutputs, " copies of the store"));
          if (!kernel_ranges(ast_).reduces.empty())
            bad("an output loop of a kernel with reductions is not unrolled");
          break;
        }
        if (k != AxisKind::Reduce)
          bad(str_cat("needs a reduce range or an output loop, r", o.range_id, " is ",
                      axis_kind_name(k)));
        break;
      case OptKind::Parallel:
        if (k != AxisKind::Loop)
          bad(str_cat("needs an output loop, r", o.range_id, " is ", axis_kind_name(k)));
        if (loop_order_.empty() || loop_order_.front() != r)
          bad("only the outermost loop can be split into tasks");
        break;
    }
    if (o.kind == OptKind::Parallel) {
      const UOp* p = ctx_->range(r->src[0], r->range().id, AxisKind::Parallel);
      ast_ = substitute(ast_, {{r, p}});
      loop_order_.front() = p;
      ntasks_ = std::min(o.amount, n);
      return;
    }
    // An upcast may pad: the range is covered by ceil(n / amount) groups of `amount` lanes and
    // the lanes past n are masked (their loads read nothing, their stores are skipped), so a 7x7
    // map can take a tile of 8. At most a third of the lanes may be padding.
    bool padded = o.kind == OptKind::Upcast && n % o.amount != 0;
    int64_t groups = (n + o.amount - 1) / o.amount;
    if (padded && kMaxUpcastPaddingDenominator * (groups * o.amount - n) > groups * o.amount)
      bad(str_cat("amount pads the range of ", n, " by more than a third"));
    if (!padded && n % o.amount != 0) bad(str_cat("amount does not divide the range size ", n));
    if (o.amount == n && o.kind == OptKind::Tile) bad("a tile as large as the range is no tile");
    if (o.kind == OptKind::Upcast && lanes_ * o.amount > kMaxUpcastLanes)
      bad(str_cat("more than ", kMaxUpcastLanes, " upcast lanes in one kernel"));
    // Every check is above: a refused opt leaves the applier as it was.
    if (o.kind == OptKind::Upcast) lanes_ *= o.amount;
    AxisKind outer_kind =
        o.kind == OptKind::Unroll && k == AxisKind::Reduce ? AxisKind::Reduce : AxisKind::Loop;
    AxisKind inner_kind = o.kind == OptKind::Upcast   ? AxisKind::Upcast
                          : o.kind == OptKind::Unroll ? AxisKind::Unroll
                                                      : AxisKind::Loop;
    const UOp* groups_end = symbolic ? simplify(r->src[0]->add(o.amount - 1)->idiv(o.amount))
                                     : ctx_->const_index(groups);
    const UOp* outer = groups > 1 ? ctx_->range(groups_end, next_id_++, outer_kind) : nullptr;
    const UOp* inner = ctx_->range(o.amount, next_id_++, inner_kind);
    const UOp* expr = outer ? outer->mul(o.amount)->add(inner) : inner;
    std::vector<const UOp*> parts;
    if (outer) parts.push_back(outer);
    parts.push_back(inner);
    ast_ = replace_range(ast_, r, expr, parts);
    if (padded) {
      // Stores of a padded lane are gated off; its loads only need a valid address, as their
      // values are never stored. On a broadcast axis a load reads the range's last element
      // instead (inner clamped so that outer * amount + inner <= n - 1: no per-access select).
      // On the lane axis the lanes must stay consecutive: a load reads past the range where
      // the bounds prove that stays inside the buffer, else it is gated (a masked vector load).
      const UOp* last = ctx_->const_index(n - 1);
      const UOp* clamp =
          lane_axis ? nullptr : inner->minimum(outer ? last->sub(outer->mul(o.amount)) : last);
      ast_ = mask_padded_lanes(ast_, inner, clamp, expr->lt(ctx_->const_index(n)));
    }
    auto it = std::find(loop_order_.begin(), loop_order_.end(), r);
    if (it != loop_order_.end()) {
      size_t pos = static_cast<size_t>(it - loop_order_.begin());
      loop_order_.erase(it);
      if (o.kind == OptKind::Tile) {
        loop_order_.insert(loop_order_.begin() + static_cast<std::ptrdiff_t>(pos), inner);
        if (outer) loop_order_.insert(loop_order_.begin(), outer);
      } else if (outer) {
        loop_order_.insert(loop_order_.begin() + static_cast<std::ptrdiff_t>(pos), outer);
      }
    }
    renamed_[o.range_id] = outer ? outer : inner;
  }

  OptimizedKernel finish(const std::vector<Opt>& opts) {
    // Renumber: loops in loop order, then reduce ranges (in their old id order), then the rest.
    KernelRanges kr = kernel_ranges(ast_);
    std::unordered_map<const UOp*, const UOp*> map;
    int64_t id = 0;
    auto renum = [&](const UOp* r) {
      if (map.count(r)) return;
      map[r] = ctx_->range(r->src[0], id++, r->range().kind);
    };
    for (const UOp* r : loop_order_)
      if (std::find(kr.loops.begin(), kr.loops.end(), r) != kr.loops.end()) renum(r);
    for (const UOp* r : kr.loops) renum(r);
    for (const UOp* r : kr.reduces) renum(r);
    for (const UOp* r : kr.upcasts) renum(r);
    // The replacement is simultaneous, so a new range equal to another old one is not remapped.
    OptimizedKernel out;
    out.ast = graph_rewrite(replace_all(ast_, map), pm_symbolic());
    out.ntasks = ntasks_;
    out.opts = opts;
    return out;
  }

 private:
  const UOp* find(const Opt& o) {
    // An opt may name a range created by an earlier opt's split only through its original id
    // (which then means the outer part).
    if (auto it = renamed_.find(o.range_id); it != renamed_.end()) return it->second;
    for (const UOp* u : ast_->toposort())
      if (u->op == Op::RANGE && u->range().id == o.range_id) return u;
    throw Error(str_cat("opt ", o.str(), ": the kernel has no range r", o.range_id));
  }

  // Accesses whose index uses the padded upcast range `range`: loads read at `range` replaced
  // by `clamped` (or, without one, as they are when in bounds, else gated), stores get `valid`
  // as (part of) their gate.
  const UOp* mask_padded_lanes(const UOp* ast, const UOp* range, const UOp* clamped,
                               const UOp* valid) {
    auto uses = [&](const UOp* idx) {
      for (const UOp* x : idx->ranges())
        if (x == range) return true;
      return false;
    };
    auto gated = [&](const UOp* index) {
      const UOp* idx = index->src[1];
      const UOp* gate = valid;
      const UOp* lin = idx;
      if (idx->op == Op::WHERE && idx->src[2]->is_invalid()) {
        gate = idx->src[0]->logical_and(valid);
        lin = idx->src[1];
      }
      return ctx_->make(Op::INDEX, index->dtype,
                        {index->src[0], gate->where(lin, ctx_->invalid())});
    };
    auto in_bounds = [&](const UOp* index) {
      const UOp* idx = simplify(index->src[1]);
      if (idx->op == Op::WHERE && idx->src[2]->is_invalid()) idx = idx->src[1];
      int64_t size = index->src[0]->dtype.ptr_size;
      return size >= 0 && idx->vmin() >= 0 && idx->vmax() < size;
    };
    return rebuild(ast, [&](const UOp*, const UOp* u) {
      if (u->op == Op::LOAD && uses(u->src[0]->src[1])) {
        const UOp* index = u->src[0];
        if (clamped) {
          const UOp* idx = substitute(index->src[1], {{range, clamped}});
          return u->with_src({ctx_->make(Op::INDEX, index->dtype, {index->src[0], idx})});
        }
        if (!in_bounds(index)) return u->with_src({gated(index)});
      } else if (u->op == Op::STORE && uses(u->src[0]->src[1])) {
        return u->with_src({gated(u->src[0]), u->src[1]});
      }
      return u;
    });
  }

  // Rebuilds `ast` bottom-up: every node gets its rebuilt sources, then `post(original,
  // rebuilt)` gives what replaces it.
  template <typename Post>
  static const UOp* rebuild(const UOp* ast, Post post) {
    std::unordered_map<const UOp*, const UOp*> done;
    for (const UOp* n : ast->toposort()) {
      std::vector<const UOp*> src;
      bool changed = false;
      for (const UOp* s : n->src) {
        const UOp* m = done.at(s);
        changed |= m != s;
        src.push_back(m);
      }
      done[n] = post(n, changed ? n->with_src(std::move(src)) : n);
    }
    return done.at(ast);
  }

  // A simultaneous replacement of ranges (REDUCE range lists included).
  static const UOp* replace_all(const UOp* ast,
                                const std::unordered_map<const UOp*, const UOp*>& map) {
    return rebuild(ast, [&](const UOp* n, const UOp* u) {
      auto it = map.find(n);
      return it != map.end() ? it->second : u;
    });
  }

  const UOp* ast_;
  Context* ctx_;
  std::vector<const UOp*> loop_order_;
  std::map<int64_t, const UOp*> renamed_;
  int64_t next_id_ = 0;
  int64_t ntasks_ = 1;
  int64_t lanes_ = 1;
};

}  // namespace

OptimizedKernel apply_opts(const UOp* ast, const std::vector<Opt>& opts) {
  Applier a(ast);
  size_t lane = opts.size();  // the last upcast is the lane axis (the expander's fastest)
  for (size_t i = 0; i < opts.size(); ++i)
    if (opts[i].kind == OptKind::Upcast) lane = i;
  for (size_t i = 0; i < opts.size(); ++i) {
    try {
      a.apply(opts[i], i == lane);
    } catch (const OptRefused&) {
      throw;
    } catch (const Error& e) {
      throw OptRefused(i, e.what());
    }
  }
  return a.finish(opts);
}

}  // namespace kiln
