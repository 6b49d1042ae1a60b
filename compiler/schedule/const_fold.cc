#include "compiler/schedule/const_fold.h"

#include <array>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/const_eval.h"
#include "compiler/ir/rewrite.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

namespace {

class Folder {
 public:
  explicit Folder(Graph& g) : g_(g), eval_(g) {}

  ConstFoldStats run() {
    const UOp* sink = g_.sink();
    const auto& topo = sink->toposort();
    // Which nodes depend only on weights and constants, and how many weight elements they read.
    for (const UOp* n : topo) {
      if (n == sink) continue;
      bool c;
      if (n->op == Op::CONST)
        c = true;
      else if (n->op == Op::BUFFER)
        c = g_.is_weight(n);
      else {
        c = !n->src.empty();
        for (const UOp* s : n->src) c = c && const_only_.count(s);
      }
      if (c) const_only_.insert(n);
    }
    // Roots: constant nodes with a non-constant user, or that are outputs.
    std::unordered_set<const UOp*> roots;
    for (const UOp* n : topo) {
      if (const_only_.count(n)) continue;
      for (const UOp* s : n->src)
        if (const_only_.count(s)) roots.insert(s);
    }
    std::vector<const UOp*> ordered;
    for (const UOp* n : topo)
      if (roots.count(n)) ordered.push_back(n);  // deterministic order
    for (const UOp* r : ordered) consider(r);
    if (!replace_.empty()) {
      std::unordered_map<const UOp*, const UOp*> rebuilt;
      const UOp* new_sink = substitute(sink, replace_, &rebuilt);
      g_.carry_origins(rebuilt);
      auto& outs = g_.mutable_outputs();
      for (size_t i = 0; i < outs.size(); ++i) outs[i].node = new_sink->src[i];
    }
    return stats_;
  }

 private:
  bool is_leaf(const UOp* n) const { return n->op == Op::CONST || n->op == Op::BUFFER; }

  int64_t weight_elements(const UOp* n) {
    if (auto it = weight_elems_.find(n); it != weight_elems_.end()) return it->second;
    int64_t total = 0;
    std::unordered_set<const UOp*> seen;
    for (const UOp* x : n->toposort())
      if (g_.is_weight(x) && seen.insert(x).second) total += shape_numel(x->shape());
    weight_elems_[n] = total;
    return total;
  }

  // The elements the eager evaluator would compute to fold `n` (it materializes every node),
  // not counting nodes an earlier fold computed.
  int64_t eval_cost(const UOp* n) const {
    int64_t cost = 0;
    for (const UOp* x : n->toposort())
      if (!is_leaf(x) && !evaluated_.count(x)) cost += shape_numel(x->shape());
    return cost;
  }

  // The value of a weight-free constant subgraph that is one value broadcast, if it is.
  std::optional<ConstValue> splat(const UOp* n) {
    if (auto it = splat_.find(n); it != splat_.end()) return it->second;
    std::optional<ConstValue> v;
    if (n->op == Op::CONST)
      v = n->cval();
    else if (n->op == Op::RESHAPE || n->op == Op::EXPAND || n->op == Op::PERMUTE ||
             n->op == Op::SHRINK || n->op == Op::FLIP || n->op == Op::CONTIGUOUS ||
             n->op == Op::WINDOW)
      v = splat(n->src[0]);
    else if (n->op == Op::CAST) {
      if (auto s = splat(n->src[0])) v = eval_cast(n->src[0]->dtype, n->dtype, *s);
    } else if (alu_arity(n->op)) {
      std::array<ConstValue, 3> args;
      bool all = true;
      for (size_t i = 0; i < n->src.size() && all; ++i) {
        auto s = splat(n->src[i]);
        if (s) args[i] = *s;
        all = s.has_value();
      }
      if (all) {
        DType d = n->op == Op::WHERE ? n->src[1]->dtype : n->src[0]->dtype;
        v = normalize_const(
            n->dtype, eval_alu(n->op, d, std::span<const ConstValue>(args.data(), n->src.size())));
      }
    }
    splat_[n] = v;
    return v;
  }

  void consider(const UOp* n) {
    if (is_leaf(n) || decided_.count(n)) return;
    decided_.insert(n);
    if (auto v = splat(n)) {
      const UOp* r = Tensor::scalar(g_, *v, n->dtype).expand(n->shape()).uop();
      if (r != n) {
        replace_[n] = r;
        ++stats_.splats;
      }
      return;
    }
    // A view of a CONTIGUOUS constant (a weight packed into the layout a kernel reads, then
    // viewed in its logical layout) folds at the CONTIGUOUS: folding the view would store the
    // logical layout again and undo the packing.
    const UOp* v = n;
    while ((v->op == Op::RESHAPE || v->op == Op::PERMUTE || v->op == Op::EXPAND ||
            v->op == Op::SHRINK || v->op == Op::FLIP) &&
           const_only_.count(v->src[0]))
      v = v->src[0];
    if (v != n && v->op == Op::CONTIGUOUS) {
      consider(v);
      return;
    }
    int64_t numel = shape_numel(n->shape());
    int64_t limit = std::max<int64_t>(4096, 2 * weight_elements(n));
    if (numel <= limit) {
      int64_t cost = eval_cost(n);
      if (cost > std::max<int64_t>(kMinWorkBudget, kWorkPerWeightElement * weight_elements(n)) ||
          cost > work_left_) {
        ++stats_.too_costly;  // stays a kernel: it runs at every inference, but compiles
      } else {
        work_left_ -= cost;
        for (const UOp* x : n->toposort()) evaluated_.insert(x);
        NDArray value = eval_.eval(n);
        stats_.folded_bytes += value.nbytes();
        ++stats_.folded;
        replace_[n] =
            g_.add_weight(g_.fresh_name("folded_" + std::to_string(n->id())), std::move(value));
        return;
      }
    }
    for (const UOp* s : n->src)
      if (const_only_.count(s)) consider(s);
  }

  // Folding work is bounded: a subgraph whose evaluation computes more than this many elements
  // per weight element it reads (a product of two weight matrices: n^3 for 2n^2) stays a kernel,
  // and so does everything once the whole graph's folding has computed that many per weight
  // element of the graph. Packing, batch-norm and dequantization folds compute a few per element.
  static constexpr int64_t kWorkPerWeightElement = 16;
  static constexpr int64_t kMinWorkBudget = int64_t{1} << 16;

  int64_t graph_weight_elements() const {
    int64_t total = 0;
    for (const UOp* x : g_.sink()->toposort())
      if (g_.is_weight(x)) total += shape_numel(x->shape());
    return total;
  }

  Graph& g_;
  int64_t work_left_ =
      std::max<int64_t>(kMinWorkBudget, kWorkPerWeightElement* graph_weight_elements());
  EagerEvaluator eval_;  // shared, so that subgraphs common to several roots are evaluated once
  ConstFoldStats stats_;
  std::unordered_set<const UOp*> const_only_;
  std::unordered_set<const UOp*> decided_;
  std::unordered_set<const UOp*> evaluated_;
  std::unordered_map<const UOp*, int64_t> weight_elems_;
  std::unordered_map<const UOp*, std::optional<ConstValue>> splat_;
  std::unordered_map<const UOp*, const UOp*> replace_;
};

}  // namespace

ConstFoldStats fold_constants(Graph& g) {
  return Folder(g).run();
}

}  // namespace kiln
