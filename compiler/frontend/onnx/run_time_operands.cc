// Shape operands fed at run time (docs/symbolic-shapes.md, "Shape operands at run time"): a
// Reshape's shape, Unsqueeze's axes, TopK's k given as a model input, as the ONNX node tests do.
// The node is compiled for the output shape the model declares; each element of the input becomes
// a symbol read from its value when the package runs, and the package carries checks that refuse
// (KILN_INVALID_ARGUMENT, naming the node and the input) values that would give another output.
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <functional>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/run_time_operands.h"
#include "compiler/ir/symbolic.h"
#include "compiler/support/error.h"
#include "schema/kiln_abi.h"

namespace kiln::onnxfe {

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Every k-element subset of `from` (sorted), in order.
void subsets(const std::vector<int64_t>& from, size_t k, size_t at, std::vector<int64_t>& cur,
             const std::function<void(const std::vector<int64_t>&)>& f) {
  if (cur.size() == k) {
    f(cur);
    return;
  }
  for (size_t i = at; i + (k - cur.size()) <= from.size(); ++i) {
    cur.push_back(from[i]);
    subsets(from, k, i + 1, cur, f);
    cur.pop_back();
  }
}

}  // namespace

size_t program_words(const UOp* u) {
  if (u->op == Op::CONST || u->op == Op::DEFINE_VAR) return 2;
  if (u->op == Op::CAST) return program_words(u->src[0]);
  size_t n = 1 + (u->op == Op::CMPNE || u->op == Op::XOR ? 3 : 0);
  for (const UOp* s : u->src) n += program_words(s);
  return n;
}

void require_values(NodeContext& n, size_t operand, const std::vector<const UOp*>& v,
                    const std::vector<std::vector<int64_t>>& allowed, const std::string& what) {
  KILN_CHECK(v.size() == allowed.size(), "require_values: ", v.size(), " values, ", allowed.size(),
             " sets");
  for (size_t j = 0; j < v.size(); ++j) {
    const UOp* holds = nullptr;
    for (int64_t a : allowed[j]) {
      const UOp* eq = v[j]->eq(v[j]->const_like(a));
      holds = holds ? holds->logical_or(eq) : eq;
    }
    KILN_CHECK(holds, "require_values: no allowed value for element ", j);
    n.require(holds, operand, what);
  }
}

const UOp* float_between(const UOp* bits, float lo, float hi) {
  KILN_CHECK(lo > 0 && lo <= hi, "float_between: [", lo, ", ", hi, "] is not a positive range");
  // Positive floats order as their bit patterns (as int32); NaN, infinity and every negative
  // float lie outside any such range.
  const UOp* a = bits->const_like(int64_t{std::bit_cast<int32_t>(lo)});
  const UOp* b = bits->const_like(int64_t{std::bit_cast<int32_t>(hi)});
  return a->lt(bits->add(bits->const_like(int64_t{1})))
      ->logical_and(bits->lt(b->add(b->const_like(int64_t{1}))));
}

std::vector<int64_t> ints_or_declared(
    NodeContext& n, size_t operand, size_t out,
    const std::function<std::vector<int64_t>(const Shape&)>& from_declared,
    const std::string& what) {
  bool is_float = !n.input_is_const(operand) && n.input(operand).dtype().is_float();
  std::vector<const UOp*> v = is_float ? n.run_time_float_bits(operand) : n.run_time_ints(operand);
  if (v.empty()) return n.const_ints(operand);
  std::vector<int64_t> want = from_declared(n.declared_shape(out, operand));
  if (want.size() != v.size())
    n.invalid("input " + std::to_string(operand) + " has " + std::to_string(v.size()) +
              " elements; the declared output gives " + std::to_string(want.size()));
  if (is_float) {  // a float cast to an integer (OneHot's depth): truncated to the value
    for (size_t j = 0; j < v.size(); ++j) {
      if (want[j] < 1 || want[j] >= (int64_t{1} << 24))
        n.invalid("the declared output gives " + std::to_string(want[j]) +
                  ", which a float operand read at run time cannot be checked for (1 to 2^24)");
      float lo = static_cast<float>(want[j]);
      float hi = std::nextafter(static_cast<float>(want[j] + 1), 0.0f);
      n.require(float_between(v[j], lo, hi), operand,
                "must give " + list_str(want) + " (" + what +
                    " the package was compiled for, from the model's declared output shape)");
    }
    return want;
  }
  std::vector<std::vector<int64_t>> allowed;
  for (int64_t w : want) allowed.push_back({w});
  require_values(n, operand, v, allowed,
                 "must give " + list_str(want) + " (" + what +
                     " the package was compiled for, from the model's declared output shape)");
  return want;
}

std::vector<std::vector<int64_t>> run_time_axes(
    NodeContext& n, size_t operand, const std::vector<const UOp*>& v, int64_t rank,
    const std::function<bool(const std::vector<int64_t>&)>& gives_declared,
    const std::string& what) {
  const size_t k = v.size();
  if (rank > 16 || static_cast<int64_t>(k) > rank)
    n.unsupported("input " + std::to_string(operand) + " holds " + std::to_string(k) +
                  " axes of a rank-" + std::to_string(rank) +
                  " tensor read at run time (kiln reads at most 16, each axis once)");
  std::vector<int64_t> all(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) all[static_cast<size_t>(i)] = i;
  std::vector<std::vector<int64_t>> candidates;
  std::vector<int64_t> cur;
  subsets(all, k, 0, cur, [&](const std::vector<int64_t>& s) {
    if (gives_declared(s)) candidates.push_back(s);
  });
  if (candidates.empty())
    n.invalid("no " + std::to_string(k) + " axes give the declared output shape");
  // The run-time axes are checked to be k distinct members of the candidates' union: that is
  // exact only when every k-subset of the union is a candidate.
  std::vector<int64_t> uni;
  for (const auto& c : candidates) uni.insert(uni.end(), c.begin(), c.end());
  std::sort(uni.begin(), uni.end());
  uni.erase(std::unique(uni.begin(), uni.end()), uni.end());
  size_t closed = 0;
  subsets(uni, k, 0, cur, [&](const std::vector<int64_t>& s) {
    closed += std::find(candidates.begin(), candidates.end(), s) != candidates.end();
  });
  size_t total = 0;
  subsets(uni, k, 0, cur, [&](const std::vector<int64_t>&) { ++total; });
  if (closed != total)
    n.needs_freeze(operand,
                   "several choices of axes give the declared output shape, and not every mix "
                   "of them does");
  for (size_t j = 0; j < k; ++j) {
    const UOp* holds = nullptr;
    for (int64_t p : uni) {
      const UOp* is =
          v[j]->eq(v[j]->const_like(p))->logical_or(v[j]->eq(v[j]->const_like(p - rank)));
      holds = holds ? holds->logical_or(is) : is;
    }
    if (program_words(holds) > KILN_ABI_MAX_CHECK_PROGRAM)
      n.unsupported("input " + std::to_string(operand) +
                    ": the check of axes read at run time is longer than a package allows");
    n.require(holds, operand, what + " (axes " + list_str(uni) + ", each once)");
  }
  // Two of them name the same axis when they differ by 0 or by the rank (both in [-rank, rank)).
  for (size_t i = 0; i < k; ++i)
    for (size_t j = i + 1; j < k; ++j)
      n.require(v[i]->sub(v[j])->mod(rank)->ne(v[i]->const_like(int64_t{0})), operand,
                what + " (each axis once)");
  return candidates;
}

std::vector<const UOp*> NodeContext::run_time_ints(size_t i) {
  if (!input_is_const(i) && input(i).dtype().is_float())
    needs_freeze(i, "a floating-point shape operand read at run time has no integer check here");
  return run_time_values(i);
}

std::vector<const UOp*> NodeContext::run_time_float_bits(size_t i) {
  if (!input_is_const(i) && input(i).dtype() != dtypes::float32)
    invalid("input " + std::to_string(i) + " must be float32, it is " + input(i).dtype().str());
  return run_time_values(i);
}

namespace {

// The elements of tensor node `u` as index expressions, when it is computed from a loop's
// iteration number and constants by integer arithmetic and reshapes (a Slice at [i, i + 1) in a
// Loop body); empty otherwise. At most 64 elements.
std::vector<const UOp*> iteration_values(const Graph& g, const UOp* u) {
  if (!u->has_shape() || shape_numel(u->shape()) > 64 || !u->dtype.is_int()) return {};
  Context& c = *u->ctx();
  int64_t n = shape_numel(u->shape());
  switch (u->op) {
    case Op::CONST:
      return std::vector<const UOp*>(static_cast<size_t>(n), c.const_index(u->cval().i));
    case Op::BUFFER: {
      if (!g.is_weight(u)) return {};
      const NDArray& a = g.weight(u->buffer().id);
      std::vector<const UOp*> v;
      for (int64_t k = 0; k < n; ++k) v.push_back(c.const_index(a.get(k).as_int()));
      return v;
    }
    case Op::CAST:
      if (u->src[0]->op == Op::DEFINE_VAR) return {u->src[0]};
      [[fallthrough]];
    case Op::RESHAPE:
    case Op::CONTIGUOUS:
      return iteration_values(g, u->src[0]);
    case Op::EXPAND: {
      std::vector<const UOp*> v = iteration_values(g, u->src[0]);
      if (v.size() != 1) return {};
      return std::vector<const UOp*>(static_cast<size_t>(n), v[0]);
    }
    case Op::ADD:
    case Op::MUL: {
      std::vector<const UOp*> a = iteration_values(g, u->src[0]),
                              b = iteration_values(g, u->src[1]);
      if (a.size() != static_cast<size_t>(n) || b.size() != a.size()) return {};
      for (size_t k = 0; k < a.size(); ++k)
        a[k] = u->op == Op::ADD ? a[k]->add(b[k]) : a[k]->mul(b[k]);
      return a;
    }
    default:
      return {};
  }
}

}  // namespace

std::vector<const UOp*> NodeContext::run_time_values(size_t i) {
  if (input_is_const(i)) return {};
  const UOp* u = input(i).uop();
  if (std::vector<const UOp*> v = iteration_values(graph(), u); !v.empty()) {
    for (const UOp* e : v)
      for (const UOp* x : e->toposort())
        if (x->op == Op::DEFINE_VAR) return v;
    return {};
  }
  if (u->op != Op::BUFFER || u->buffer().kind != BufferKind::Input) {
    const_input(i);  // throws: computed from model inputs, it must be known at compile time
    return {};
  }
  const std::vector<int>& syms = graph().value_symbols(u->buffer().name);
  std::vector<const UOp*> vars;
  for (int s : syms) vars.push_back(graph().symbol_var(s));
  return vars;
}

bool NodeContext::loop_values(const std::vector<const UOp*>& v) {
  bool any = false;
  for (const UOp* e : v)
    for (const UOp* x : e->toposort())
      if (x->op == Op::DEFINE_VAR) {
        if (graph().symbols().at(static_cast<size_t>(x->var().slot)).loop < 0) return false;
        any = true;
      }
  return any;
}

void NodeContext::require(const UOp* holds, size_t operand, const std::string& what) {
  // Over a loop's iteration number: decided here, for every iteration the loop can run (the
  // checks run before the loop sets it).
  if (loop_values({holds})) {
    const UOp* h = simplify(holds);
    if (h->is_const(1)) return;
    unsupported("input " + std::to_string(operand) + " ('" +
                node_.input(static_cast<int>(operand)) +
                "') varies with the loop's iteration number, and its values need not " + what);
  }
  graph().add_check(holds, node_where(node_, opset_) + ": input '" +
                               node_.input(static_cast<int>(operand)) + "' " + what);
}

}  // namespace kiln::onnxfe
