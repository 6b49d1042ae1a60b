#include "compiler/codegen/linearizer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

struct Scope {
  const UOp* range = nullptr;   // a loop, or nullptr for the kernel body / a reduction block
  const UOp* reduce = nullptr;  // for a reduction block: its REDUCE
  Scope* parent = nullptr;
  int depth = 0;
  std::vector<Scope*> children;
  std::vector<const UOp*> nodes;
};

class Linearizer {
 public:
  explicit Linearizer(const UOp* sink) : sink_(sink) {
    const auto& topo = sink->toposort();
    for (size_t i = 0; i < topo.size(); ++i) order_[topo[i]] = i;
    root_ = make_scope(nullptr, nullptr, nullptr);
    // Output loops, nested in id order.
    std::vector<const UOp*> loops;
    for (const UOp* u : topo) {
      if (u->op == Op::RANGE &&
          (u->range().kind == AxisKind::Loop || u->range().kind == AxisKind::Parallel))
        loops.push_back(u);
      if (u->op == Op::REDUCE) {
        reduce_of_acc_[u->src[1]] = u;
        for (size_t i = 2; i < u->src.size(); ++i) reduce_of_range_[u->src[i]] = u;
      }
    }
    std::sort(loops.begin(), loops.end(),
              [](const UOp* a, const UOp* b) { return a->range().id < b->range().id; });
    Scope* s = root_;
    for (const UOp* r : loops) {
      s = make_scope(r, nullptr, s);
      scope_of_item_[r] = s;
    }
  }

  std::vector<LinearOp> run() {
    for (const UOp* u : sink_->toposort()) {
      if (u == sink_) continue;
      place(u)->nodes.push_back(u);
    }
    std::vector<LinearOp> out;
    emit(root_, out);
    return out;
  }

 private:
  Scope* make_scope(const UOp* range, const UOp* reduce, Scope* parent) {
    scopes_.push_back(std::make_unique<Scope>());
    Scope* s = scopes_.back().get();
    s->range = range;
    s->reduce = reduce;
    s->parent = parent;
    s->depth = parent ? parent->depth + 1 : 0;
    if (parent) parent->children.push_back(s);
    return s;
  }

  // The open dependencies of a node: loop/reduce RANGEs and ACCs not closed below it.
  const std::vector<const UOp*>& open(const UOp* u) {
    if (auto it = open_.find(u); it != open_.end()) return it->second;
    std::vector<const UOp*> out;
    if (u->op == Op::RANGE || u->op == Op::ACC) out.push_back(u);
    for (size_t i = 0; i < u->src.size(); ++i) {
      if (u->op == Op::REDUCE && i > 0) continue;  // its ACC and ranges are closed here
      for (const UOp* x : open(u->src[i]))
        if (!(u->op == Op::REDUCE &&
              (x == u->src[1] || std::find(u->src.begin() + 2, u->src.end(), x) != u->src.end())) &&
            std::find(out.begin(), out.end(), x) == out.end())
          out.push_back(x);
    }
    return open_[u] = std::move(out);
  }

  // The scope an open dependency stands for (creating a reduction's scopes on first use).
  Scope* scope_of_item(const UOp* item) {
    if (auto it = scope_of_item_.find(item); it != scope_of_item_.end()) return it->second;
    const UOp* red = item->op == Op::ACC ? reduce_of_acc_.at(item) : reduce_of_range_.at(item);
    Scope* block = make_scope(nullptr, red, place(red));
    Scope* s = block;
    for (size_t i = 2; i < red->src.size(); ++i) {
      s = make_scope(red->src[i], nullptr, s);
      scope_of_item_[red->src[i]] = s;
    }
    scope_of_item_[red->src[1]] = s;  // the ACC lives in the innermost loop of its reduction
    innermost_of_[red] = s;
    return scope_of_item_.at(item);
  }

  Scope* place(const UOp* u) {
    if (auto it = placed_.find(u); it != placed_.end()) return it->second;
    Scope* best = root_;
    for (const UOp* x : open(u)) {
      Scope* s = scope_of_item(x);
      if (s->depth > best->depth) best = s;
    }
    // Every dependency must lie on the chain from the chosen scope up to the root.
    for (const UOp* x : open(u)) {
      Scope* s = scope_of_item(x);
      Scope* c = best;
      while (c && c != s) c = c->parent;
      KILN_CHECK(c == s, "linearizer: dependencies of ", op_name(u->op),
                 " are not nested in one another");
    }
    return placed_[u] = best;
  }

  // The direct child of `s` on the path to `t` (or nullptr if t == s or t is not below s).
  static Scope* child_toward(Scope* s, Scope* t) {
    while (t && t->parent != s) t = t->parent;
    return t;
  }

  void emit(Scope* s, std::vector<LinearOp>& out) {
    if (s->range) out.push_back({LinearOp::Kind::LoopBegin, s->range});
    if (s->reduce) out.push_back({LinearOp::Kind::AccInit, s->reduce});
    // Items: this scope's nodes and its child scopes, ordered topologically.
    struct Item {
      const UOp* node = nullptr;
      Scope* child = nullptr;
      size_t key = 0;  // earliest AST position inside
    };
    std::vector<Item> items;
    std::unordered_map<const void*, size_t> index;
    for (const UOp* n : s->nodes) {
      index[n] = items.size();
      items.push_back({n, nullptr, order_.at(n)});
    }
    std::function<size_t(Scope*)> min_key = [&](Scope* c) {
      size_t k = SIZE_MAX;
      for (const UOp* n : c->nodes) k = std::min(k, order_.at(n));
      for (Scope* g : c->children) k = std::min(k, min_key(g));
      return k;
    };
    for (Scope* c : s->children) {
      index[c] = items.size();
      items.push_back({nullptr, c, min_key(c)});
    }
    // Edges: an item needs the items holding the sources of every node inside it.
    std::vector<std::vector<size_t>> users(items.size());
    std::vector<int> indeg(items.size(), 0);
    std::function<void(Scope*, size_t)> add_edges = [&](Scope* c, size_t item) {
      for (const UOp* n : c->nodes)
        for (const UOp* src : n->src) {
          Scope* ss = placed_.at(src);
          size_t from;
          if (ss == s)
            from = index.at(src);
          else if (Scope* ch = child_toward(s, ss))
            from = index.at(ch);
          else
            continue;  // defined outside this scope: already emitted
          if (from == item) continue;
          users[from].push_back(item);
          ++indeg[item];
        }
      for (Scope* g : c->children) add_edges(g, item);
    };
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].node) {
        for (const UOp* src : items[i].node->src) {
          Scope* ss = placed_.at(src);
          size_t from;
          if (ss == s)
            from = index.at(src);
          else if (Scope* ch = child_toward(s, ss))
            from = index.at(ch);
          else
            continue;
          users[from].push_back(i);
          ++indeg[i];
        }
      } else {
        add_edges(items[i].child, i);
      }
    }
    // Kahn's algorithm, always taking the ready item that comes first in the AST.
    std::map<size_t, size_t> ready;  // key -> item
    for (size_t i = 0; i < items.size(); ++i)
      if (indeg[i] == 0) ready.emplace(items[i].key * 2 + (items[i].child ? 1 : 0), i);
    size_t emitted = 0;
    while (!ready.empty()) {
      size_t i = ready.begin()->second;
      ready.erase(ready.begin());
      ++emitted;
      if (items[i].node)
        out.push_back({LinearOp::Kind::Node, items[i].node});
      else
        emit(items[i].child, out);
      for (size_t u : users[i])
        if (--indeg[u] == 0) ready.emplace(items[u].key * 2 + (items[u].child ? 1 : 0), u);
    }
    KILN_CHECK(emitted == items.size(), "linearizer: a cycle between the items of a scope");
    for (auto& [red, inner] : innermost_of_)
      if (inner == s) out.push_back({LinearOp::Kind::AccUpdate, red});
    if (s->range) out.push_back({LinearOp::Kind::LoopEnd, s->range});
  }

  const UOp* sink_;
  Scope* root_;
  std::vector<std::unique_ptr<Scope>> scopes_;
  std::unordered_map<const UOp*, size_t> order_;
  std::unordered_map<const UOp*, std::vector<const UOp*>> open_;
  std::unordered_map<const UOp*, Scope*> scope_of_item_, placed_;
  std::unordered_map<const UOp*, const UOp*> reduce_of_acc_, reduce_of_range_;
  std::map<const UOp*, Scope*> innermost_of_;
};

}  // namespace

std::vector<LinearOp> linearize(const UOp* lowered_ast) {
  return Linearizer(lowered_ast).run();
}

std::string print_linear(const std::vector<LinearOp>& ops) {
  std::unordered_map<const UOp*, size_t> num;
  std::string out, indent;
  auto ref = [&](const UOp* u) {
    auto it = num.find(u);
    return it == num.end() ? std::string("?") : "%" + std::to_string(it->second);
  };
  for (const LinearOp& o : ops) {
    switch (o.kind) {
      case LinearOp::Kind::LoopBegin:
        out += indent + "loop r" + std::to_string(o.u->range().id) + " in [0, " +
               std::to_string(o.u->src[0]->cval().i) + ")" +
               (o.u->range().kind == AxisKind::Parallel ? " (split across tasks)" : "") + " {\n";
        indent += "  ";
        break;
      case LinearOp::Kind::LoopEnd:
        indent.resize(indent.size() - 2);
        out += indent + "}\n";
        break;
      case LinearOp::Kind::AccInit:
        out += indent + "acc" + std::to_string(o.u->src[1]->iarg()) + " = identity(" +
               op_name(o.u->op_arg()) + ")\n";
        break;
      case LinearOp::Kind::AccUpdate:
        out +=
            indent + "acc" + std::to_string(o.u->src[1]->iarg()) + " = " + ref(o.u->src[0]) + "\n";
        break;
      case LinearOp::Kind::Node: {
        size_t k = num.size();
        num[o.u] = k;
        out += indent + "%" + std::to_string(k) + " = " + op_name(o.u->op) + " " + o.u->dtype.str();
        for (size_t i = 0; i < o.u->src.size(); ++i) out += (i ? ", " : " ") + ref(o.u->src[i]);
        std::string a = arg_str(o.u->arg);
        if (!a.empty() && a.size() < 80) out += "  [" + a + "]";
        out += "\n";
        break;
      }
    }
  }
  return out;
}

}  // namespace kiln
