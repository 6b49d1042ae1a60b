#include "compiler/ir/rewrite.h"

#include <unordered_set>
#include <vector>

#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

class Engine {
 public:
  Engine(const PatternMatcher& pm, size_t max) : pm_(pm), max_(max) {}

  const UOp* bottom_up(const UOp* root);
  const UOp* top_down(const UOp* root);

 private:
  struct Frame {
    const UOp* n;
    int stage;
    const UOp* cur;      // top-down: n after rewriting to a fixpoint
    const UOp* pending;  // the node whose result becomes n's result
  };

  void bump(const UOp* at) {
    if (++count_ > max_)
      throw Error(str_cat("pass ", pm_.name(), ": rewriting did not reach a fixpoint after ", max_,
                          " rewrites (last at ", op_name(at->op), " ", render(at, 3), ")"));
  }
  [[noreturn]] void cycle(const UOp* at) {
    throw Error(str_cat("pass ", pm_.name(), ": rewrite cycle at ", op_name(at->op), " ",
                        render(at, 3), " (a rule's result leads back to a node being rewritten)"));
  }
  const UOp* rebuilt(const UOp* n) {
    std::vector<const UOp*> src;
    src.reserve(n->src.size());
    bool changed = false;
    for (const UOp* s : n->src) {
      const UOp* r = memo_.at(s);
      changed |= r != s;
      src.push_back(r);
    }
    return changed ? n->with_src(std::move(src)) : n;
  }
  void push(std::vector<Frame>& st, const UOp* n) {
    if (memo_.count(n)) return;
    if (active_.count(n)) cycle(n);
    st.push_back({n, 0, nullptr, nullptr});
  }
  void push_sources(std::vector<Frame>& st, const UOp* n) {
    for (auto it = n->src.rbegin(); it != n->src.rend(); ++it)
      if (!memo_.count(*it)) {
        if (active_.count(*it)) cycle(*it);
        st.push_back({*it, 0, nullptr, nullptr});
      }
  }

  const PatternMatcher& pm_;
  size_t max_;
  size_t count_ = 0;
  std::unordered_map<const UOp*, const UOp*> memo_;
  std::unordered_set<const UOp*> active_;  // nodes on the current path (being rewritten)
};

const UOp* Engine::bottom_up(const UOp* root) {
  std::vector<Frame> st{{root, 0, nullptr, nullptr}};
  while (!st.empty()) {
    Frame& f = st.back();
    const UOp* n = f.n;
    if (f.stage == 0) {
      if (memo_.count(n)) {
        st.pop_back();
        continue;
      }
      active_.insert(n);
      f.stage = 1;
      push_sources(st, n);  // invalidates f
      continue;
    }
    if (f.stage == 1) {
      const UOp* n2 = rebuilt(n);
      const UOp* r = pm_.rewrite(n2);
      if (!r || r == n2) {
        memo_[n] = n2;
        memo_.emplace(n2, n2);  // its sources are final and no rule applies: a fixpoint
        active_.erase(n);
        st.pop_back();
        continue;
      }
      bump(n2);
      f.stage = 2;
      f.pending = r;
      push(st, r);
      continue;
    }
    memo_[n] = memo_.at(f.pending);
    active_.erase(n);
    st.pop_back();
  }
  return memo_.at(root);
}

const UOp* Engine::top_down(const UOp* root) {
  std::vector<Frame> st{{root, 0, nullptr, nullptr}};
  while (!st.empty()) {
    Frame& f = st.back();
    const UOp* n = f.n;
    if (f.stage == 0) {
      if (memo_.count(n)) {
        st.pop_back();
        continue;
      }
      // Rewrite this node to a fixpoint before looking at its sources.
      const UOp* cur = n;
      std::vector<const UOp*> chain{n};
      while (const UOp* r = pm_.rewrite(cur)) {
        if (r == cur) break;
        bump(cur);
        for (const UOp* c : chain)
          if (c == r) cycle(r);
        if (active_.count(r)) cycle(r);
        chain.push_back(r);
        cur = r;
        if (memo_.count(cur)) break;
      }
      if (memo_.count(cur)) {
        memo_[n] = memo_.at(cur);
        st.pop_back();
        continue;
      }
      f.cur = cur;
      f.stage = 1;
      active_.insert(n);
      active_.insert(cur);
      push_sources(st, cur);  // invalidates f
      continue;
    }
    if (f.stage == 1) {
      const UOp* n2 = rebuilt(f.cur);
      if (n2 == f.cur) {
        memo_[n] = n2;
        memo_[n2] = n2;
        active_.erase(n);
        active_.erase(n2);
        st.pop_back();
        continue;
      }
      f.stage = 2;
      f.pending = n2;
      push(st, n2);
      continue;
    }
    const UOp* result = memo_.at(f.pending);
    memo_[n] = result;
    memo_[f.cur] = result;
    active_.erase(n);
    active_.erase(f.cur);
    st.pop_back();
  }
  return memo_.at(root);
}

}  // namespace

const UOp* graph_rewrite(const UOp* root, const PatternMatcher& pm, RewriteOptions opts) {
  size_t max = opts.max_rewrites ? opts.max_rewrites : 100000 + 64 * root->toposort().size();
  Engine e(pm, max);
  return opts.mode == RewriteMode::BottomUp ? e.bottom_up(root) : e.top_down(root);
}

const UOp* substitute(const UOp* root, const std::unordered_map<const UOp*, const UOp*>& map,
                      std::unordered_map<const UOp*, const UOp*>* rebuilt) {
  if (map.empty()) return root;
  std::unordered_map<const UOp*, const UOp*> done;
  for (const UOp* n : root->toposort()) {
    if (auto it = map.find(n); it != map.end()) {
      done[n] = it->second;
      continue;
    }
    std::vector<const UOp*> src;
    src.reserve(n->src.size());
    bool changed = false;
    for (const UOp* s : n->src) {
      const UOp* r = done.at(s);
      changed |= r != s;
      src.push_back(r);
    }
    done[n] = changed ? n->with_src(std::move(src)) : n;
  }
  const UOp* r = done.at(root);
  if (rebuilt) *rebuilt = std::move(done);
  return r;
}

}  // namespace kiln
