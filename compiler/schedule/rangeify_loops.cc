// Rangeify's loop and conditional groups (states, stacked outputs, carries, branches) and
// sizes computed from data (rangeify_lowerer.h).
#include "compiler/schedule/rangeify_lowerer.h"

#include <algorithm>

#include "compiler/support/error.h"

namespace kiln::rangeify_internal {

// The loop whose body `n` belongs to: the one whose state or iteration number it reads; -1
// for a node outside every body. Memoized, iteratively (unrolled chains are deep).
int Lowerer::varies_in(const UOp* root) {
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

void Lowerer::index_loops() {
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
void Lowerer::index_branches() {
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
void Lowerer::schedule_count(int ci) {
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
void Lowerer::schedule_loop(int li) {
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

}  // namespace kiln::rangeify_internal
