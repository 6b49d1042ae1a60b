// Rangeify's questions for the fusion policy: how many computing nodes read a node, whether
// a walk reaches a reduction, which loops an index uses (rangeify_lowerer.h).
#include "compiler/schedule/rangeify_lowerer.h"

#include <algorithm>

namespace kiln::rangeify_internal {

FusionQuery Lowerer::query(const UOp* n, const Idx& idx, const UOp* valid) {
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
  if ((n->op == Op::REDUCE_AXIS || q.above_reduction) && root_ && root_->has_shape() &&
      shape_numel(root_->shape()) >= 8 * values)
    q.broadcast_apart = reads_apart(n);
  if (auto it = consumers_.find(n); it != consumers_.end()) q.consumers = it->second;
  return q;
}

// The tensors an expression reads (buffers, weights, values already kept or about to be as
// several nodes' operand, reductions), looking through its first reductions but not the ones
// below them: a squeeze-excitation's scale reads its weights and the reduction below (the
// hidden layer), not the feature map pooled before that; a softmax's row sum reads the rows'
// matmul, as its consumer does. `skip` is not entered; `reduces` tells whether the walk met a
// reduction of its own.
std::unordered_set<const UOp*> Lowerer::tensors_read(const UOp* from, const UOp* skip,
                                                     bool* reduces) {
  std::unordered_set<const UOp*> out;
  std::unordered_set<const UOp*> seen;
  std::vector<std::pair<const UOp*, bool>> stack{{from, false}};
  while (!stack.empty()) {
    auto [u, crossed] = stack.back();
    stack.pop_back();
    if (u == skip || !seen.insert(u).second) continue;
    bool kept = u->op == Op::BUFFER || u->op == Op::CONTIGUOUS || realized_.count(u) ||
                (consumers_[u] > 1 && reaches_reduction(u));
    if (u != from && kept) {
      out.insert(u);
      continue;
    }
    if (u->op == Op::REDUCE_AXIS) {
      out.insert(u);  // read wherever it is computed
      if (reduces) *reduces = true;
      if (crossed) continue;
      crossed = true;
    }
    for (const UOp* s : u->src) stack.push_back({s, crossed});
  }
  return out;
}

// True when n computes a reduction (not only reads kept values) and the kernel's root, apart
// from n, is elementwise work that reads none of the tensors n reads.
bool Lowerer::reads_apart(const UOp* n) {
  bool computes_reduction = false, reduces = false;
  std::unordered_set<const UOp*> mine = tensors_read(n, nullptr, &computes_reduction);
  std::unordered_set<const UOp*> theirs = tensors_read(root_, n, &reduces);
  if (!computes_reduction || reduces) return false;
  for (const UOp* t : theirs)
    if (mine.count(t)) return false;
  return true;
}

bool Lowerer::walks_reduce(const Idx& idx) {
  for (const UOp* e : idx)
    for (const UOp* r : e->ranges())
      if (r->range().kind == AxisKind::Reduce) return true;
  return false;
}

// A GATHER whose looked-up positions depend on the consumer's output loops only while its
// other axes walk a reduce loop: rows chosen once, read along the reduction (an embedding
// feeding a matmul). Not a resize written as a contraction, whose taps (reduce loops) choose
// the positions themselves.
bool Lowerer::gathers_rows_walked_by_reduce(const UOp* n, const Idx& idx) {
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
void Lowerer::count_consumers() {
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
bool Lowerer::merged_uses(const UOp* s,
                          const std::unordered_map<const UOp*, std::vector<const UOp*>>& users,
                          const std::unordered_set<const UOp*>& outputs) {
  // One movement node that every use goes through (a reduction's reshape to its output
  // shape) is one index: the uses are looked at after it.
  for (int hops = 0; hops < 8 && !outputs.count(s); ++hops) {
    auto it = users.find(s);
    if (it == users.end() || it->second.size() != 1 || !is_movement_like(it->second[0]->op)) break;
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

bool Lowerer::is_movement_like(Op op) {
  return ops::movement().has(op) || op == Op::WINDOW || op == Op::GATHER;
}

// True if computing `n` inline would compute a reduction (one not already in a buffer).
// Iterative: an unrolled loop makes chains tens of thousands of nodes deep.
bool Lowerer::reaches_reduction(const UOp* root) {
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

}  // namespace kiln::rangeify_internal
