#include "compiler/tensor/graph.h"

#include <algorithm>
#include <cstdint>

#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

bool Graph::name_taken(const std::string& name) const {
  if (buffer_names_.count(name)) return true;
  for (const auto& o : outputs_)
    if (o.name == name) return true;
  return false;
}

std::string Graph::fresh_name(const std::string& base) const {
  if (!name_taken(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (!name_taken(n)) return n;
  }
}

const UOp* Graph::add_input(const std::string& name, DType dtype, const Shape& shape) {
  if (buffer_names_.count(name)) throw Error("input '" + name + "': the name is already used");
  for (int64_t d : shape)
    if (d < 0) throw Error("input '" + name + "': negative dimension");
  try {
    shape_numel(shape);
  } catch (const Error& e) {
    throw Error("input '" + name + "': " + e.what());
  }
  const UOp* b =
      ctx_->make(Op::BUFFER, dtype, {}, BufferArg{name, next_buffer_id_, BufferKind::Input, shape});
  buffer_names_[name] = next_buffer_id_++;
  inputs_.push_back({name, b, {}, {}});
  return b;
}

int Graph::add_symbol(const std::string& name, int64_t min, int64_t max) {
  for (const Symbol& s : symbols_)
    if (s.name == name) throw Error("symbol '" + name + "' is defined twice");
  if (min < 0 || min > max)
    throw Error(str_cat("symbol '", name, "': the range ", min, "..", max,
                        " is empty or negative (min must be at most max, both >= 0)"));
  symbols_.push_back({name, min, max});
  return static_cast<int>(symbols_.size() - 1);
}

void Graph::set_axis_symbol(const std::string& input, size_t axis, int symbol) {
  KILN_CHECK(symbol >= 0 && static_cast<size_t>(symbol) < symbols_.size(), "no symbol ", symbol);
  for (GraphInput& in : inputs_) {
    if (in.name != input) continue;
    const Shape& shape = in.buffer->buffer().shape;
    if (axis >= shape.size()) throw Error(str_cat("input '", input, "' has no axis ", axis));
    const Symbol& s = symbols_[static_cast<size_t>(symbol)];
    if (shape[axis] != s.max)
      throw Error(str_cat("input '", input, "' axis ", axis, " is ", shape[axis],
                          ": a symbolic axis is laid out at its bound (", s.name, " <= ", s.max,
                          ")"));
    in.axis_symbols.resize(shape.size(), -1);
    in.axis_symbols[axis] = symbol;
    return;
  }
  throw Error("the graph has no input named '" + input + "'");
}

const std::vector<int>& Graph::value_symbols(const std::string& input) {
  for (GraphInput& in : inputs_) {
    if (in.name != input) continue;
    if (!in.value_symbols.empty()) return in.value_symbols;
    const BufferArg& b = in.buffer->buffer();
    if (!in.axis_symbols.empty())
      throw Error("input '" + input + "' has a symbolic axis: its values cannot be read as sizes");
    DType d = in.buffer->dtype;
    if (d != dtypes::int64 && d != dtypes::int32 && d != dtypes::float32 && d != dtypes::bool_)
      throw Error("input '" + input + "' is " + d.str() +
                  ": a size read at run time must be int32, int64, float32 or bool");
    int64_t n = 1;
    for (int64_t d : b.shape) n *= d;
    for (int64_t i = 0; i < n; ++i) {
      std::string name = str_cat(input, "[", i, "]");
      for (const Symbol& s : symbols_)
        if (s.name == name) throw Error("symbol '" + name + "' is defined twice");
      symbols_.push_back({name, INT64_MIN, INT64_MAX, true});
      in.value_symbols.push_back(static_cast<int>(symbols_.size() - 1));
    }
    return in.value_symbols;
  }
  throw Error("the graph has no input named '" + input + "'");
}

bool Graph::has_symbolic_axis_from(size_t axis) const {
  for (const GraphInput& in : inputs_)
    for (size_t i = axis; i < in.axis_symbols.size(); ++i)
      if (in.axis_symbols[i] >= 0) return true;
  return false;
}

const UOp* Graph::symbol_var(int i) {
  const Symbol& s = symbols_.at(static_cast<size_t>(i));
  return ctx_->variable(s.name, s.min, s.max, i);
}

void Graph::label_origin(const std::vector<const UOp*>& results, const std::string& origin) {
  int64_t index = -1;
  std::vector<const UOp*> stack(results.begin(), results.end());
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op == Op::BUFFER || origin_.count(u) || !reads_buffer(u)) continue;
    if (index < 0) {
      index = static_cast<int64_t>(origin_names_.size());
      origin_names_.push_back(origin);
    }
    origin_[u] = index;
    stack.insert(stack.end(), u->src.begin(), u->src.end());
  }
}

bool Graph::reads_buffer(const UOp* root) {
  // Iterative and memoized across calls: every node is decided once.
  std::vector<const UOp*> stack{root};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    if (reads_buffer_.count(u)) {
      stack.pop_back();
      continue;
    }
    bool ready = true, reads = u->op == Op::BUFFER;
    for (const UOp* s : u->src)
      if (auto it = reads_buffer_.find(s); it == reads_buffer_.end()) {
        stack.push_back(s);
        ready = false;
      } else {
        reads = reads || it->second;
      }
    if (ready) {
      reads_buffer_[u] = reads;
      stack.pop_back();
    }
  }
  return reads_buffer_.at(root);
}

void Graph::carry_origins(const std::unordered_map<const UOp*, const UOp*>& rebuilt) {
  // Hash-consing can rebuild several old nodes as one new node. It takes the earliest origin in
  // model order: the map's iteration order follows the nodes' addresses, and a label picked by it
  // would differ between two builds of kilnc (a package must not).
  std::unordered_map<const UOp*, int64_t> earliest;
  for (const auto& [from, to] : rebuilt) {
    if (from == to || origin_.count(to)) continue;
    if (int64_t i = origin_index(from); i >= 0) {
      auto [it, fresh] = earliest.emplace(to, i);
      if (!fresh) it->second = std::min(it->second, i);
    }
  }
  for (const auto& [to, i] : earliest) origin_[to] = i;
}

const std::string* Graph::origin(const UOp* u) const {
  int64_t i = origin_index(u);
  return i < 0 ? nullptr : &origin_names_[static_cast<size_t>(i)];
}

int64_t Graph::origin_index(const UOp* u) const {
  auto it = origin_.find(u);
  return it == origin_.end() ? -1 : it->second;
}

const UOp* Graph::add_weight(const std::string& name, NDArray data) {
  if (buffer_names_.count(name)) throw Error("weight '" + name + "': the name is already used");
  const UOp* b = ctx_->make(Op::BUFFER, data.dtype(), {},
                            BufferArg{name, next_buffer_id_, BufferKind::Weight, data.shape()});
  buffer_names_[name] = next_buffer_id_;
  weight_nodes_[next_buffer_id_] = b;
  weights_.emplace(next_buffer_id_++, std::move(data));
  return b;
}

void Graph::add_output(const std::string& name, const UOp* node) {
  for (const auto& o : outputs_)
    if (o.name == name) throw Error("output '" + name + "': the name is already used");
  if (!node->has_shape()) throw Error("output '" + name + "': not a tensor");
  outputs_.push_back({name, node});
}

const NDArray& Graph::weight(int64_t id) const {
  auto it = weights_.find(id);
  if (it == weights_.end()) throw InternalError("no weight with buffer id " + std::to_string(id));
  return it->second;
}

std::vector<const UOp*> Graph::weight_nodes() const {
  std::vector<const UOp*> out;
  for (const auto& [id, u] : weight_nodes_) out.push_back(u);
  return out;
}

namespace {

// Every root of a loop, in one order: sink() lists them, set_roots() takes them back.
template <typename Loop, typename F>
void for_each_loop_root(Loop& l, F&& f) {
  if (l.trips) f(l.trips);
  for (auto& s : l.states) {
    f(s.init);
    if (s.next) f(s.next);
  }
  for (auto& sc : l.scans)
    if (sc.value) f(sc.value);
}

}  // namespace

const UOp* Graph::sink() const {
  std::vector<const UOp*> src;
  for (const auto& o : outputs_) src.push_back(o.node);
  for (const GraphLoop& l : loops_) for_each_loop_root(l, [&](const UOp* u) { src.push_back(u); });
  for (const GraphCount& c : counts_) src.push_back(c.count);
  for (const GraphCounted& c : counted_) src.push_back(c.value);
  return ctx_->make(Op::SINK, dtypes::void_, src);
}

void Graph::set_roots(const std::vector<const UOp*>& roots) {
  size_t i = 0;
  auto next = [&]() {
    KILN_CHECK(i < roots.size(), "set_roots: ", roots.size(), " roots for a graph with more");
    return roots[i++];
  };
  for (auto& o : outputs_) o.node = next();
  for (GraphLoop& l : loops_) {
    if (l.trips) l.trips = next();
    for (auto& s : l.states) {
      s.init = next();
      if (s.next) s.next = next();
    }
    for (auto& sc : l.scans)
      if (sc.value) sc.value = next();
  }
  for (GraphCount& c : counts_) c.count = next();
  for (GraphCounted& c : counted_) c.value = next();
  KILN_CHECK(i == roots.size(), "set_roots: ", roots.size(), " roots for a graph of ", i);
}

const UOp* Graph::counted(const std::string& name, const std::string& size_name, const UOp* value,
                          const UOp* count, int symbol, size_t axis) {
  KILN_CHECK(value->has_shape() && axis < value->shape().size() && count->dtype == dtypes::int64 &&
                 count->has_shape() && count->shape().empty(),
             name, ": a counted value needs axis ", axis, " and an int64 scalar count");
  int64_t bound = value->shape()[axis];
  int index = -1;
  for (size_t k = 0; k < counts_.size(); ++k)
    if (counts_[k].count == count) index = static_cast<int>(k);
  if (index < 0) {
    index = static_cast<int>(counts_.size());
    if (symbol < 0) {
      symbols_.push_back({fresh_symbol_name(size_name), 0, bound});
      symbol = static_cast<int>(symbols_.size() - 1);
    }
    Symbol& s = symbols_.at(static_cast<size_t>(symbol));
    if (s.loop >= 0 || s.value || s.count >= 0)
      throw Error(name + ": the symbol '" + s.name + "' is already set by another node or input");
    s.count = index;
    counts_.push_back({name, count, symbol});
  }
  const Symbol& s = symbols_.at(static_cast<size_t>(counts_[static_cast<size_t>(index)].symbol));
  if (s.max != bound)
    throw InternalError(str_cat(name, ": a counted value of ", bound, " rows for '", s.name,
                                "' (at most ", s.max, ")"));
  const UOp* out = add_loop_buffer(size_name + ".rows", value->dtype, value->shape());
  counted_.push_back({value, out, index, axis});
  return out;
}

std::string Graph::fresh_symbol_name(const std::string& base) const {
  auto taken = [&](const std::string& n) {
    for (const Symbol& s : symbols_)
      if (s.name == n) return true;
    return false;
  };
  if (!taken(base)) return base;
  for (int i = 1;; ++i)
    if (!taken(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

const UOp* Graph::add_loop_buffer(const std::string& base, DType dtype, const Shape& shape) {
  std::string name = fresh_name(base);
  const UOp* b = ctx_->make(Op::BUFFER, dtype, {},
                            BufferArg{name, next_buffer_id_, BufferKind::Intermediate, shape});
  buffer_names_[name] = next_buffer_id_++;
  return b;
}

int Graph::begin_loop(const std::string& name, const UOp* trips, int64_t max_trips, int count,
                      bool conditional) {
  if (in_loop_body())
    throw Error(name + ": a loop group inside another loop's body (" + loops_.back().name +
                "): nested loop groups are not supported yet");
  if (max_trips < 1) throw Error(str_cat(name, ": a loop group of ", max_trips, " iterations"));
  if (trips && (trips->dtype != dtypes::int64 || !trips->has_shape() || !trips->shape().empty()))
    throw InternalError(name + ": a loop's trip count must be an int64 scalar");
  int index = static_cast<int>(loops_.size());
  GraphLoop l;
  l.name = name;
  l.trips = trips;
  l.max_trips = max_trips;
  l.conditional = conditional;
  KILN_CHECK(!conditional || max_trips == 1, "a conditional group runs at most once");
  auto symbol = [&](const std::string& what, int64_t lo, int64_t hi) {
    std::string n = str_cat("loop", index, ".", what);
    symbols_.push_back({n, lo, hi, false, index});
    return static_cast<int>(symbols_.size() - 1);
  };
  l.iteration = symbol("iteration", 0, max_trips - 1);
  if (count >= 0) {
    Symbol& s = symbols_.at(static_cast<size_t>(count));
    if (s.loop >= 0 || s.value)
      throw Error(name + ": the symbol '" + s.name + "' is already set by another loop or input");
    if (s.max != max_trips)
      throw InternalError(str_cat(name, ": count symbol bound ", s.max, " for ", max_trips));
    s.loop = index;
    l.count = count;
  } else {
    l.count = symbol("count", 0, max_trips);
  }
  loops_.push_back(std::move(l));
  return index;
}

const UOp* Graph::loop_iteration(int loop) {
  const GraphLoop& l = loops_.at(static_cast<size_t>(loop));
  return symbol_var(l.iteration)->cast(dtypes::int64);
}

const UOp* Graph::add_loop_state(int loop, const UOp* init, bool is_cond) {
  GraphLoop& l = loops_.at(static_cast<size_t>(loop));
  KILN_CHECK(l.open, "add_loop_state after end_loop");
  KILN_CHECK(init->has_shape(), "a loop state's initial value must be a tensor");
  if (is_cond) {
    KILN_CHECK(l.cond < 0 && init->dtype.is_bool() && shape_numel(init->shape()) == 1,
               "a loop's condition is one bool");
    l.cond = static_cast<int>(l.states.size());
  }
  std::string base = str_cat("loop", loop, ".state", l.states.size());
  GraphLoop::State s;
  s.init = init;
  s.in = add_loop_buffer(base, init->dtype, init->shape());
  s.out = add_loop_buffer(base + ".final", init->dtype, init->shape());
  l.states.push_back(s);
  return s.in;
}

std::vector<const UOp*> Graph::end_loop(int loop, const std::vector<const UOp*>& next,
                                        const std::vector<const UOp*>& scans) {
  GraphLoop& l = loops_.at(static_cast<size_t>(loop));
  KILN_CHECK(l.open && next.size() == l.states.size(), "end_loop: ", next.size(),
             " next values for ", l.states.size(), " states");
  std::vector<const UOp*> out;
  for (size_t k = 0; k < next.size(); ++k) {
    GraphLoop::State& s = l.states[k];
    if (next[k]->dtype != s.init->dtype || !next[k]->has_shape() ||
        next[k]->shape() != s.init->shape())
      throw Error(str_cat(l.name, ": loop-carried value ", k, " is ", s.init->dtype.str(),
                          shape_str(s.init->shape()), " before the loop and ", next[k]->dtype.str(),
                          next[k]->has_shape() ? shape_str(next[k]->shape()) : "()",
                          " after an iteration: a loop group keeps each state's shape"));
    s.next = next[k];
    out.push_back(s.out);
  }
  for (size_t j = 0; j < scans.size(); ++j) {
    Shape shape = scans[j]->shape();
    shape.insert(shape.begin(), l.max_trips);
    GraphLoop::Scan sc;
    sc.value = scans[j];
    sc.out = add_loop_buffer(str_cat("loop", loop, ".scan", j), scans[j]->dtype, shape);
    l.scans.push_back(sc);
    out.push_back(sc.out);
  }
  l.fixed =
      l.cond < 0 && l.trips && l.trips->op == Op::CONST && l.trips->cval().as_int() == l.max_trips;
  l.open = false;
  return out;
}

}  // namespace kiln
