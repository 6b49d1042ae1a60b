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
      if (c) {
        const_only_.insert(n);
        // The elements the eager evaluator computes to fold n (it materializes every node), an
        // upper bound (a shared node counts once per use), bottom-up so chains cost O(n).
        int64_t cost = is_leaf(n) ? 0 : shape_numel(n->shape());
        for (const UOp* s : n->src)
          if (auto it = cost_.find(s); it != cost_.end())
            cost = std::min(kCostCap, cost + it->second);
        cost_[n] = cost;
      }
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
    for (const UOp* r : ordered) consider_all(r);
    if (!replace_.empty()) {
      std::unordered_map<const UOp*, const UOp*> rebuilt;
      const UOp* new_sink = substitute(sink, replace_, &rebuilt);
      g_.carry_origins(rebuilt);
      g_.set_roots(new_sink->src);
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

  // The value of a constant subgraph that is one value broadcast, if it is: constants, and
  // weights of one element (an ONNX Constant scalar: attention's divisor sqrt(64)), through
  // views, casts and arithmetic. A kernel's code then sees the value (LLVM turns x / 8 into
  // x * 0.125) where it loaded it and divided by it in the reduction's inner loop.
  // Bottom-up over the toposort: an unrolled loop's constant chain can be thousands deep.
  std::optional<ConstValue> splat(const UOp* root) {
    for (const UOp* n : root->toposort())
      if (!splat_.count(n)) splat_[n] = splat_of(n);
    return splat_.at(root);
  }
  // One node's splat value from its sources' (already known).
  std::optional<ConstValue> splat_of(const UOp* n) {
    if (n->op == Op::CONST) return n->cval();
    if (g_.is_weight(n) && shape_numel(n->shape()) == 1) return g_.weight(n->buffer().id).get(0);
    if (n->op == Op::RESHAPE || n->op == Op::EXPAND || n->op == Op::PERMUTE ||
        n->op == Op::SHRINK || n->op == Op::FLIP || n->op == Op::CONTIGUOUS || n->op == Op::WINDOW)
      return splat_.at(n->src[0]);
    if (n->op == Op::CAST) {
      if (auto s = splat_.at(n->src[0])) return eval_cast(n->src[0]->dtype, n->dtype, *s);
      return std::nullopt;
    }
    if (!alu_arity(n->op)) return std::nullopt;
    std::array<ConstValue, 3> args;
    for (size_t i = 0; i < n->src.size(); ++i) {
      auto s = splat_.at(n->src[i]);
      if (!s) return std::nullopt;
      args[i] = *s;
    }
    DType d = n->op == Op::WHERE ? n->src[1]->dtype : n->src[0]->dtype;
    return normalize_const(
        n->dtype, eval_alu(n->op, d, std::span<const ConstValue>(args.data(), n->src.size())));
  }

  // consider() for `root` and, where it asks, the sources below: a worklist, since constant
  // chains can be tens of thousands of nodes deep.
  void consider_all(const UOp* root) {
    std::vector<const UOp*> work{root};
    while (!work.empty()) {
      const UOp* n = work.back();
      work.pop_back();
      consider(n, work);
    }
  }

  // Folds `n`, or pushes the constant sources to consider instead onto `work`.
  void consider(const UOp* n, std::vector<const UOp*>& work) {
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
      work.push_back(v);
      return;
    }
    // An 8-bit integer weight widened to int32 (the operand of an integer dot-product kernel),
    // or a view of one, folds below the widening: the kernel reads the bytes (vpdpbusd
    // multiplies them), and an int32 copy would be four times the package and the memory traffic.
    if (v->op == Op::CAST && v->dtype == dtypes::int32 &&
        (v->src[0]->dtype == dtypes::int8 || v->src[0]->dtype == dtypes::uint8)) {
      work.push_back(v->src[0]);
      return;
    }
    int64_t numel = shape_numel(n->shape());
    int64_t limit = std::max<int64_t>(4096, 2 * weight_elements(n));
    if (numel <= limit) {
      int64_t cost = cost_.at(n);
      if (cost > std::max<int64_t>(kMinWorkBudget, kWorkPerWeightElement * weight_elements(n)) ||
          cost > work_left_) {
        // Stays a kernel: it runs at every inference, but compiles. Its sources are not looked
        // at either (in a chain each is nearly as costly; pieces of a weight product are views).
        ++stats_.too_costly;
        return;
      }
      {
        work_left_ -= cost;
        NDArray value = eval_.take(n);
        stats_.folded_bytes += value.nbytes();
        ++stats_.folded;
        replace_[n] =
            g_.add_weight(g_.fresh_name("folded_" + std::to_string(n->id())), std::move(value));
        return;
      }
    }
    for (const UOp* s : n->src)
      if (const_only_.count(s)) work.push_back(s);
  }

  // Folding work is bounded: a subgraph whose evaluation computes more than this many elements
  // per weight element it reads (a product of two weight matrices: n^3 for 2n^2) stays a kernel,
  // and so does everything once the whole graph's folding has computed that many per weight
  // element of the graph. Packing, batch-norm and dequantization folds compute a few per element.
  static constexpr int64_t kWorkPerWeightElement = 16;
  static constexpr int64_t kMinWorkBudget = int64_t{1} << 22;
  static constexpr int64_t kCostCap = int64_t{1} << 60;

  int64_t graph_weight_elements() const {
    int64_t total = 0;
    for (const UOp* x : g_.sink()->toposort())
      if (g_.is_weight(x)) total += shape_numel(x->shape());
    return total;
  }

  Graph& g_;
  int64_t work_left_ =
      std::max<int64_t>(kMinWorkBudget, kWorkPerWeightElement* graph_weight_elements());
  EagerEvaluator eval_;  // its cache emptied after each fold (EagerEvaluator::take)
  ConstFoldStats stats_;
  std::unordered_set<const UOp*> const_only_;
  std::unordered_set<const UOp*> decided_;
  std::unordered_map<const UOp*, int64_t> cost_;  // per constant node, see run()
  std::unordered_map<const UOp*, int64_t> weight_elems_;
  std::unordered_map<const UOp*, std::optional<ConstValue>> splat_;
  std::unordered_map<const UOp*, const UOp*> replace_;
};

}  // namespace

ConstFoldStats fold_constants(Graph& g) {
  return Folder(g).run();
}

}  // namespace kiln
