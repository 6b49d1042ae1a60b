// Control flow: If and Scan, with their subgraphs built inline.
//
// If: a condition known at compile time (a constant, or folded from one) builds only the branch
// it takes. A run-time condition builds both branches; where a branch computes much (a
// reduction) or divides integers, each is a conditional group (ARCHITECTURE §8: only the taken
// branch runs), else both run and each output is selected elementwise (`where`: exact, since
// branches have no side effects, and cheaper than the groups' copies for a few elementwise ops).
// Either way outputs must have one dtype and shape per branch.
//
// Scan: the iteration count is the length of the scanned axis, static in a package: the body is
// unrolled (each iteration's states feed the next, scan outputs are stacked) while it builds at
// most kMaxUnrolledLoopNodes nodes, and is a loop group past that.
//
// Loop: unrolled the same way when the trip count and every iteration's condition are known at
// compile time and the unrolled body is small (kMaxUnrolledLoopNodes); otherwise a loop group
// (ARCHITECTURE §8, Graph::begin_loop): the body built once, the schedule repeating it.
#include <algorithm>
#include <functional>
#include <optional>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/indexing.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// Integer division or modulo anywhere in a graph (nested subgraphs included).
bool divides_integers(const onnx::GraphProto& g,
                      const std::function<int(const std::string&)>& type) {
  for (const auto& node : g.node()) {
    if ((node.op_type() == "Div" || node.op_type() == "Mod") && node.output_size()) {
      int t = type(node.output(0));
      if (t != onnx::TensorProto::FLOAT && t != onnx::TensorProto::DOUBLE &&
          t != onnx::TensorProto::FLOAT16 && t != onnx::TensorProto::BFLOAT16)
        return true;
    }
    for (const auto& a : node.attribute()) {
      if (a.has_g() && divides_integers(a.g(), type)) return true;
      for (const auto& sg : a.graphs())
        if (divides_integers(sg, type)) return true;
    }
  }
  return false;
}

// An If on a run-time condition as two conditional groups (loop groups of at most one
// iteration, docs/control-flow.md): `then` runs when c holds, `else` when it does not. Each
// output is a state of both: `then`'s starts at zero and becomes the then-branch's value if it
// runs; `else`'s starts there and becomes the else-branch's value if it runs. Only the taken
// branch's kernels run (besides a copy of each output).
V conditional_groups(NodeContext& n, const Tensor& c, const V& a, const V& b) {
  Graph& g = n.graph();
  V out;
  for (const V* br : {&a, &b}) {
    bool then = br == &a;
    Tensor trips = (then ? c : c.logical_not()).cast(dtypes::int64);
    int loop = g.begin_loop(n.where() + (then ? " then_branch" : " else_branch"), trips.uop(), 1,
                            -1, true);
    std::vector<const UOp*> next;
    for (size_t i = 0; i < br->size(); ++i) {
      const Tensor& v = (*br)[i];
      g.add_loop_state(loop, then ? Tensor::full(g, v.shape(), 0, v.dtype()).uop() : out[i].uop());
      next.push_back(v.uop());
    }
    std::vector<const UOp*> finals = g.end_loop(loop, next, {});
    out.clear();
    for (const UOp* f : finals) out.emplace_back(&g, f);
  }
  return out;
}

V if_op(NodeContext& n) {
  Tensor cond = n.input(0);
  if (cond.numel() != 1) n.invalid("cond must hold one element, got " + shape_str(cond.shape()));
  if (n.input_is_const(0)) {
    bool taken = n.const_input(0).get(0).as_double() != 0;
    return n.subgraph(taken ? "then_branch" : "else_branch", {});
  }
  V a = n.subgraph("then_branch", {}), b = n.subgraph("else_branch", {});
  if (a.size() != b.size())
    n.invalid("then_branch has " + std::to_string(a.size()) + " outputs, else_branch " +
              std::to_string(b.size()));
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != b[i].dtype())
      n.invalid("output " + std::to_string(i) + " is " + a[i].dtype().str() +
                " in then_branch and " + b[i].dtype().str() + " in else_branch");
    if (a[i].shape() != b[i].shape())
      n.unsupported("a run-time condition whose branches give output " + std::to_string(i) +
                    " different shapes (" + shape_str(a[i].shape()) + " and " +
                    shape_str(b[i].shape()) + ")");
  }
  auto type = [&n](const std::string& name) { return n.value_type(name); };
  bool divides = false;
  for (const char* br : {"then_branch", "else_branch"})
    divides |= divides_integers(*n.attr_graph(br), type);
  Tensor c = cond.reshape({}).cast(dtypes::bool_);
  Graph& g = n.graph();
  // Conditional groups where a branch computes much (a reduction: a convolution, a matmul) or
  // must not run untaken (an integer division); cheap branches are both computed and selected.
  bool heavy = divides;
  for (const V* br : {&a, &b})
    for (const Tensor& t : *br)
      for (const UOp* u : t.uop()->toposort()) heavy |= u->op == Op::REDUCE_AXIS;
  if (heavy && !g.in_loop_body()) return conditional_groups(n, c, a, b);
  if (divides)
    n.unsupported(std::string("a run-time condition with integer division in a branch, inside a "
                              "loop group's body") +
                  " (both branches run there, and the untaken one could divide by zero)");
  V out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back(c.where(a[i], b[i]));
  return out;
}

// x without axis `axis` at index i.
Tensor take(const Tensor& x, int64_t axis, int64_t i) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d = 0; d < x.ndim(); ++d)
    b.push_back(d == axis ? std::make_pair(i, i + 1)
                          : std::make_pair<int64_t, int64_t>(0, x.dim(d)));
  return x.shrink(b).squeeze({axis});
}

// Where the line is between unrolling a Loop (or a Scan) and a loop group. A Loop whose trip
// count and conditions are compile-time values, and every Scan, is unrolled while it builds at
// most kMaxUnrolledLoopNodes body nodes (trips x the body's nodes): unrolled, the iterations fuse
// into each other's kernels and their index math folds (a 16-step body of a few nodes becomes
// one kernel), where a loop group pays a barrier and a copy of its states per iteration. Past
// that, and for run-time trip counts and conditions, the body is built once, as a loop group.
constexpr int64_t kMaxUnrolledLoopNodes = 4096;

// The scan outputs' axes and directions (attributes), one per output.
std::pair<std::vector<int64_t>, std::vector<int64_t>> scan_outputs(NodeContext& n, size_t k_out) {
  std::vector<int64_t> axes = n.attr_ints("scan_output_axes", std::vector<int64_t>(k_out, 0));
  std::vector<int64_t> dirs = n.attr_ints("scan_output_directions", std::vector<int64_t>(k_out, 0));
  if (axes.size() != k_out || dirs.size() != k_out)
    n.invalid("scan_output_axes and scan_output_directions need one value per scan output");
  return {axes, dirs};
}

// A long Scan as a loop group: the body built once, its iteration k reading element k of each
// scan input along its axis (from the end for a reverse direction); scan outputs are stacked in
// iteration order, then reversed and moved to their axes.
V scan_group(NodeContext& n, const V& states, const V& inputs, const std::vector<int64_t>& in_axes,
             const std::vector<int64_t>& in_dirs, int64_t trips) {
  Graph& g = n.graph();
  Tensor count = Tensor::full(g, {}, static_cast<double>(trips), dtypes::int64);
  int loop = g.begin_loop(n.where(), count.uop(), trips);
  V result;
  try {
    Tensor k(&g, g.loop_iteration(loop));
    Tensor back = count.sub(k.like(1.0)).sub(k);
    V args;
    for (const Tensor& st : states) args.emplace_back(&g, g.add_loop_state(loop, st.uop()));
    for (size_t i = 0; i < inputs.size(); ++i)
      args.push_back(inputs[i].gather(in_dirs[i] ? back : k, in_axes[i]));
    V out = n.subgraph("body", args);
    if (out.size() < states.size())
      n.invalid("the body gives " + std::to_string(out.size()) + " outputs for " +
                std::to_string(states.size()) + " states");
    std::vector<const UOp*> next, stacked;
    for (size_t i = 0; i < states.size(); ++i) next.push_back(out[i].uop());
    for (size_t j = states.size(); j < out.size(); ++j) stacked.push_back(out[j].uop());
    std::vector<const UOp*> finals = g.end_loop(loop, next, stacked);
    for (size_t i = 0; i < states.size(); ++i) result.emplace_back(&g, finals[i]);
    auto [axes, dirs] = scan_outputs(n, stacked.size());
    for (size_t j = 0; j < stacked.size(); ++j) {
      Tensor y(&g, finals[states.size() + j]);
      if (dirs[j]) y = y.flip({0});
      int64_t axis = norm_axis(axes[j], y.ndim(), n);
      std::vector<int64_t> order;
      for (int64_t d = 1; d < y.ndim(); ++d) order.push_back(d);
      order.insert(order.begin() + axis, 0);
      result.push_back(y.permute(order));
    }
  } catch (...) {
    g.abandon_loop(loop);
    throw;
  }
  return result;
}

// Scan-9+ over states and scan inputs (no batch axis); returns final states + scan outputs.
V scan(NodeContext& n, const V& states, const V& inputs) {
  size_t m = inputs.size();
  std::vector<int64_t> in_axes = n.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs = n.attr_ints(n.opset() < 9 ? "directions" : "scan_input_directions",
                                             std::vector<int64_t>(m, 0));
  if (in_axes.size() != m || in_dirs.size() != m)
    n.invalid("scan_input_axes and scan_input_directions need one value per scan input");
  int64_t trips = -1;
  for (size_t k = 0; k < m; ++k) {
    in_axes[k] = norm_axis(in_axes[k], inputs[k].ndim(), n);
    int64_t len = inputs[k].dim(in_axes[k]);
    if (trips >= 0 && len != trips)
      n.invalid("scan inputs have different lengths (" + std::to_string(trips) + " and " +
                std::to_string(len) + ")");
    trips = len;
  }
  if (trips < 0) n.invalid("Scan needs at least one scan input");
  const onnx::GraphProto* body = n.attr_graph("body");
  if (body && trips * std::max(1, body->node_size()) > kMaxUnrolledLoopNodes &&
      !n.graph().in_loop_body())
    return scan_group(n, states, inputs, in_axes, in_dirs, trips);
  V carried = states;
  std::vector<V> per_step;
  for (int64_t t = 0; t < trips; ++t) {
    V args = carried;
    for (size_t k = 0; k < m; ++k)
      args.push_back(take(inputs[k], in_axes[k], in_dirs[k] ? trips - 1 - t : t));
    V out = n.subgraph("body", args);
    if (out.size() < carried.size())
      n.invalid("the body gives " + std::to_string(out.size()) + " outputs for " +
                std::to_string(carried.size()) + " states");
    for (size_t s = 0; s < carried.size(); ++s) {
      if (out[s].shape() != carried[s].shape() || out[s].dtype() != carried[s].dtype())
        n.invalid("state " + std::to_string(s) + " changes from " + shape_str(carried[s].shape()) +
                  " to " + shape_str(out[s].shape()) + " in the body");
      carried[s] = out[s];
    }
    per_step.emplace_back(out.begin() + static_cast<std::ptrdiff_t>(carried.size()), out.end());
  }
  size_t k_out = per_step.empty() ? 0 : per_step[0].size();
  auto [out_axes, out_dirs] = scan_outputs(n, k_out);
  V result = carried;
  for (size_t j = 0; j < k_out; ++j) {
    int64_t axis = norm_axis(out_axes[j], per_step[0][j].ndim() + 1, n);
    V rows;
    for (int64_t t = 0; t < trips; ++t)
      rows.push_back(
          per_step[static_cast<size_t>(out_dirs[j] ? trips - 1 - t : t)][j].unsqueeze(axis));
    result.push_back(concat(rows, axis));
  }
  return result;
}

// A Loop with no trip count (or a run-time one) and no stacked output needs no bound on its
// iterations: the package plans nothing per iteration. Its iteration number stays in int32.
constexpr int64_t kUnboundedTrips = (int64_t{1} << 31) - 1;

// The Loop unrolled at compile time for at most `trips` iterations; nullopt when an iteration's
// condition turns out to be computed at run time, or, for a Loop without a trip count, when the
// condition still holds after `trips` (then it is a loop group).
std::optional<V> unrolled_loop(NodeContext& n, int64_t trips) {
  const onnx::GraphProto* body = n.attr_graph("body");
  n.will_unroll(trips * body->node_size());
  bool running = true;
  if (n.has_input(1)) {
    const NDArray& c = n.const_input(1);
    if (c.numel() != 1) n.invalid("cond must hold one value");
    running = c.get(0).as_double() != 0;
  }
  V carried;
  for (size_t i = 2; i < n.num_inputs(); ++i) carried.push_back(n.input(i));
  std::vector<V> per_step;
  int64_t t = 0;
  for (; running && t < trips; ++t) {
    V args = {n.scalar(static_cast<double>(t), dtypes::int64),
              Tensor::full(n.graph(), {}, 1, dtypes::bool_)};
    args.insert(args.end(), carried.begin(), carried.end());
    V out = n.subgraph("body", args);
    if (out.size() < 1 + carried.size())
      n.invalid("the body gives " + std::to_string(out.size()) + " outputs for the condition and " +
                std::to_string(carried.size()) + " loop-carried values");
    if (!n.is_const(out[0])) return std::nullopt;
    running = n.eval_const(out[0]).get(0).as_double() != 0;
    for (size_t s = 0; s < carried.size(); ++s) carried[s] = out[1 + s];
    per_step.emplace_back(out.begin() + static_cast<std::ptrdiff_t>(1 + carried.size()), out.end());
  }
  if (running && t == trips && !n.has_input(0)) return std::nullopt;
  V result = carried;
  size_t k_out =
      static_cast<size_t>(std::max(0, body->output_size() - 1 - static_cast<int>(carried.size())));
  if (k_out && per_step.empty())
    n.unsupported("a Loop that runs no iteration but has scan outputs (their shape is unknown)");
  for (size_t j = 0; j < k_out; ++j) {
    V rows;
    for (const V& step : per_step) {
      if (step[j].shape() != per_step[0][j].shape())
        n.invalid("scan output " + std::to_string(j) + " changes shape between iterations");
      rows.push_back(step[j].unsqueeze(0));
    }
    result.push_back(concat(rows, 0));
  }
  return result;
}

// The iterations a loop group is planned for, from what bounds its stacked (scan) outputs: each
// one's first dim as the model declares it — a number, or a dim parameter given a range with
// --dim NAME=LO..HI (which then is the loop's count symbol) — or a trip count known at compile
// time. `count` is set to that dim parameter's symbol, or -1.
int64_t loop_bound(NodeContext& n, size_t states, size_t scans, std::optional<int64_t> const_trips,
                   int* count) {
  *count = -1;
  int64_t bound = const_trips ? std::max<int64_t>(1, *const_trips) : kUnboundedTrips;
  const std::vector<Symbol>& symbols = n.graph().symbols();
  for (size_t j = 0; j < scans; ++j) {
    size_t out = states + j;
    std::optional<NodeContext::Rows> rows = n.declared_rows(out);
    if (!rows) {
      if (const_trips) continue;
      std::string name = out < n.num_outputs() ? n.node().output(static_cast<int>(out)) : "";
      n.invalid("scan output " + std::to_string(j) + " ('" + name +
                "') needs a bound on the iterations (the trip count is known only at run time): "
                "declare its first dim as a number, or as a dim parameter given a range with "
                "--dim NAME=LO..HI");
    }
    if (rows->symbol < 0) {
      bound = std::min(bound, rows->bound);
      continue;
    }
    if (*count >= 0 && *count != rows->symbol)
      n.invalid("scan outputs name two dim parameters ('" + symbols[*count].name + "' and '" +
                symbols[rows->symbol].name + "') for the one iteration count");
    *count = rows->symbol;
  }
  // The count symbol's layout is its bound: the stacked outputs hold that many rows.
  return *count >= 0 ? symbols[static_cast<size_t>(*count)].max : bound;
}

// The Loop as a loop group: its body built once, over a run-time trip count and condition.
V loop_group(NodeContext& n) {
  Graph& g = n.graph();
  const onnx::GraphProto* body = n.attr_graph("body");
  size_t states = n.num_inputs() > 2 ? n.num_inputs() - 2 : 0;
  if (body->output_size() < 1 + static_cast<int>(states))
    n.invalid("the body gives " + std::to_string(body->output_size()) +
              " outputs for the condition and " + std::to_string(states) + " loop-carried values");
  size_t scans = static_cast<size_t>(body->output_size()) - 1 - states;
  const UOp* trips = nullptr;
  std::optional<int64_t> const_trips;
  if (n.has_input(0)) {
    Tensor m = n.input(0);
    if (m.numel() != 1) n.invalid("M must hold one value");
    if (!m.dtype().is_int()) n.invalid("M must be an integer, got " + m.dtype().str());
    trips = m.reshape({}).cast(dtypes::int64).uop();
    if (n.input_is_const(0)) const_trips = n.const_ints(0).at(0);
  }
  int count = -1;
  int64_t max_trips = loop_bound(n, states, scans, const_trips, &count);
  int loop = g.begin_loop(n.where(), trips, max_trips, count);
  try {
    // An iteration runs only while the condition holds, so the body always sees it true.
    V args = {Tensor(&g, g.loop_iteration(loop)), Tensor::full(g, {}, 1, dtypes::bool_)};
    for (size_t i = 0; i < states; ++i)
      args.emplace_back(&g, g.add_loop_state(loop, n.input(2 + i).uop()));
    V out = n.subgraph("body", args);
    if (out.size() != 1 + states + scans)
      n.invalid("the body gives " + std::to_string(out.size()) + " outputs, its graph lists " +
                std::to_string(1 + states + scans));
    std::vector<const UOp*> next, stacked;
    for (size_t i = 0; i < states; ++i) next.push_back(out[1 + i].uop());
    for (size_t j = 0; j < scans; ++j) stacked.push_back(out[1 + states + j].uop());
    // The condition is a state unless it is true before the loop and after every iteration.
    // The body's condition ends the loop also when the node has no `cond` input (as ONNX
    // Runtime and ONNX's reference do; the spec's pseudo-code calls it ignored there).
    Tensor c = n.has_input(1) ? n.input(1) : Tensor::full(g, {}, 1, dtypes::bool_), c_next = out[0];
    if (c.numel() != 1 || c_next.numel() != 1 || !c_next.dtype().is_bool())
      n.invalid("cond and the body's condition must each be one bool");
    bool always = n.is_const(c) && n.eval_const(c).get(0).as_int() && n.is_const(c_next) &&
                  n.eval_const(c_next).get(0).as_int();
    if (!always) {
      g.add_loop_state(loop, c.reshape({}).cast(dtypes::bool_).uop(), true);
      next.push_back(c_next.reshape({}).uop());
    } else if (!trips) {
      n.invalid("a Loop with no trip count whose condition is always true never ends");
    }
    std::vector<const UOp*> results = g.end_loop(loop, next, stacked);
    V result;
    for (size_t i = 0; i < states; ++i) result.emplace_back(&g, results[i]);
    for (size_t j = 0; j < scans; ++j) result.emplace_back(&g, results[next.size() + j]);
    return result;
  } catch (...) {
    g.abandon_loop(loop);
    throw;
  }
}

V loop_op(NodeContext& n) {
  const onnx::GraphProto* body = n.attr_graph("body");
  if (!body) n.invalid("attribute 'body' (a graph) is missing");
  bool static_cond = !n.has_input(1) || n.input_is_const(1);
  int64_t most = kMaxUnrolledLoopNodes / std::max(1, body->node_size());
  if (n.has_input(0) && n.input_is_const(0) && static_cond) {
    std::vector<int64_t> m = n.const_ints(0);
    if (m.size() != 1) n.invalid("M must hold one value");
    int64_t trips = std::max<int64_t>(m[0], 0);
    if (trips <= most)
      if (std::optional<V> r = unrolled_loop(n, trips)) return *r;
  } else if (!n.has_input(0) && static_cond) {
    // Until the condition stops it, if it does so soon.
    if (std::optional<V> r = unrolled_loop(n, most)) return *r;
  }
  return loop_group(n);
}

V scan_op(NodeContext& n) {
  int64_t m = n.attr_int("num_scan_inputs");
  if (n.opset() >= 9) {
    int64_t states = static_cast<int64_t>(n.num_inputs()) - m;
    if (m < 1 || states < 0) n.invalid("num_scan_inputs is " + std::to_string(m));
    V s, x;
    for (int64_t i = 0; i < states; ++i) s.push_back(n.input(static_cast<size_t>(i)));
    for (int64_t i = states; i < states + m; ++i) x.push_back(n.input(static_cast<size_t>(i)));
    return scan(n, s, x);
  }
  // Scan-8: input 0 is the optional sequence_lens, every other input has a batch axis 0; the
  // body runs per batch row (directions is Scan-8's scan_input_directions).
  if (n.has_input(0)) n.unsupported("Scan-8 with sequence_lens");
  int64_t states = static_cast<int64_t>(n.num_inputs()) - 1 - m;
  if (m < 1 || states < 0) n.invalid("num_scan_inputs is " + std::to_string(m));
  int64_t batch = n.input(1).dim(0);
  std::vector<V> rows;
  for (int64_t b = 0; b < batch; ++b) {
    V s, x;
    for (int64_t i = 0; i < states; ++i)
      s.push_back(take(n.input(static_cast<size_t>(1 + i)), 0, b));
    for (int64_t i = 0; i < m; ++i)
      x.push_back(take(n.input(static_cast<size_t>(1 + states + i)), 0, b));
    rows.push_back(scan(n, s, x));
  }
  V out;
  for (size_t j = 0; j < rows[0].size(); ++j) {
    V parts;
    for (const V& r : rows) parts.push_back(r[j].unsqueeze(0));
    out.push_back(concat(parts, 0));
  }
  return out;
}

}  // namespace

void register_control_ops(OpRegistry& r) {
  r["If"] = if_op;
  r["Scan"] = scan_op;
  r["Loop"] = loop_op;
}

}  // namespace kiln::onnxfe
