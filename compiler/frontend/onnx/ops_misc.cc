// Constants, shape queries and generators, and the ops that build index tables at compile time:
// Constant, Shape, Size, ConstantOfShape, Range, EyeLike, Trilu, OneHot, TopK, Compress, NonZero.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/run_time_operands.h"
#include "compiler/tensor/indexing.h"
#include "schema/kiln_abi.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// TopK along the last axis of `x` by ranks: element i's rank is the number of elements that come
// before it (larger, or equal with a smaller index, for the largest-first order); output slot r
// takes the element whose rank is r. O(n^2) along the axis.
std::pair<Tensor, Tensor> top_k(NodeContext& n, const Tensor& x, int64_t k, bool largest) {
  int64_t len = x.dim(-1);
  Tensor a = x.unsqueeze(-1),
         b = x.unsqueeze(-2);  // a: element i (axis -2), b: element j (axis -1)
  Tensor idx = iota(n, len);
  Tensor ii = idx.reshape({len, 1}), jj = idx.reshape({1, len});
  Tensor before = (largest ? b.gt(a) : b.lt(a)).logical_or(b.eq(a).logical_and(jj.lt(ii)));
  Tensor rank = before.cast(dtypes::int64).sum({-1});  // (..., len): the rank of element i
  Tensor slots = iota(n, k).reshape({1, k});           // output slots r
  Tensor hit = rank.unsqueeze(-1).eq(slots);           // (..., i, r)
  Tensor values = hit.where(x.unsqueeze(-1), x.like(0.0)).sum({-2});
  Tensor indices = hit.where(ii.expand({len, k}), idx.like(0.0)).sum({-2});
  return {values, indices};
}

// Operand i of a floating-point Range read at run time, as an integer symbol: the length of a
// float Range has no integer check in general, but a float cast of a scalar integer model input
// (the expanded window functions' Range to their size) is that integer exactly, within 2^24. A
// constant operand gives {} (its value, which must be integral, joins the check); any other
// operand must be known at compile time (const_input names it, suggesting --freeze).
std::vector<const UOp*> float_range_operand(NodeContext& n, size_t i, std::string& source) {
  if (n.input_is_const(i)) {
    double c = n.const_floats(i).at(0);
    if (c != std::floor(c) || std::fabs(c) > 16777216.0) {
      size_t at = !n.input_is_const(0) ? 0 : !n.input_is_const(1) ? 1 : 2;
      n.needs_freeze(at, "a float Range whose constant input " + std::to_string(i) +
                             " is not an integer has no integer check of its length");
    }
    return {};
  }
  const UOp* u = n.input(i).uop();
  while (u->op == Op::RESHAPE || u->op == Op::EXPAND) u = u->src[0];
  if (u->op != Op::CAST || !u->src[0]->dtype.is_int() || u->src[0]->op != Op::BUFFER ||
      u->src[0]->buffer().kind != BufferKind::Input) {
    n.const_input(i);  // throws, suggesting --freeze
    return {};
  }
  const std::vector<int>& syms = n.graph().value_symbols(u->src[0]->buffer().name);
  if (syms.size() != 1) n.invalid("input " + std::to_string(i) + " must be a scalar");
  const UOp* x = n.graph().symbol_var(syms[0]);
  source = "(the model input '" + u->src[0]->buffer().name + "' cast to float) ";
  const int64_t bound = int64_t{1} << 24;
  n.require(x->lt(x->const_like(bound + 1))->logical_and(x->const_like(-bound - 1)->lt(x)), i,
            source + "must lie in [-2^24, 2^24], where a float holds every integer");
  return {x};
}

// Range over integers read at run time: the declared length, the values start + i * delta
// computed by the kernel from the inputs; the run fails unless start, limit and delta give that
// length (max(0, ceil((limit - start) / delta)), delta nonzero).
Tensor run_time_range(NodeContext& n) {
  Tensor start = n.input(0), delta = n.input(2);
  bool is_float = !start.dtype().is_int();
  std::string source[3];  // a float operand's model input, for the messages
  std::vector<const UOp*> v[3];
  for (size_t i = 0; i < 3; ++i) {
    v[i] = is_float ? float_range_operand(n, i, source[i]) : n.run_time_ints(i);
    if (v[i].empty()) {  // a constant operand: its value as a constant of the check
      std::vector<int64_t> c;
      if (is_float)
        for (double f : n.const_floats(i)) c.push_back(static_cast<int64_t>(f));
      else
        c = n.const_ints(i);
      if (c.size() != 1) n.invalid("input " + std::to_string(i) + " must be a scalar");
      v[i] = {n.graph().ctx().const_index(c[0])};
    }
    if (v[i].size() != 1) n.invalid("input " + std::to_string(i) + " must be a scalar");
  }
  size_t operand = n.input_is_const(1) ? (n.input_is_const(0) ? 2 : 0) : 1;  // one read at run
  Shape d = n.declared_shape(0, operand);
  if (d.size() != 1) n.invalid("the declared output is not 1-D");
  const UOp *s = v[0][0], *l = v[1][0], *dl = v[2][0];
  const UOp* zero = s->const_like(int64_t{0});
  const UOp *a = l->sub(s), *q = a->idiv(dl), *r = a->mod(dl);
  // ceil of a / delta from the truncating quotient: one more when the remainder has delta's sign
  const UOp* up = r->ne(zero)->logical_and(zero->lt(r)->eq(zero->lt(dl)))->cast(dtypes::index);
  const UOp* count = q->add(up)->maximum(zero);
  if (dl->op == Op::CONST && dl->cval().i == 0) n.invalid("delta is 0");
  if (dl->op != Op::CONST) n.require(dl->ne(zero), 2, "must not be 0");
  n.require(count->eq(count->const_like(d[0])), operand,
            source[operand] + "must give, with the other operands, the length " +
                std::to_string(d[0]) +
                " the package was compiled for (the model's declared output shape)");
  Tensor i = iota(n, d[0]).cast(start.dtype());
  return i.mul(delta.reshape({})).add(start.reshape({}));
}

// A floating-point Range over values read at run time (ARCHITECTURE §8: a size computed from
// data): its length max(0, ceil((limit - start) / delta)), computed in the operands' dtype as the
// spec says, is a count the runtime reads; the output is planned at what bounds it (the declared
// length, or a --dim range on its dim parameter) and reports its actual length. nullopt when
// every operand read at run time is an integer cast to float (run_time_range checks those
// exactly, as integers).
std::optional<Tensor> counted_float_range(NodeContext& n) {
  Tensor start = n.input(0);
  if (!start.dtype().is_float()) return std::nullopt;
  bool integers = true;
  for (size_t i = 0; i < 3; ++i) {
    if (n.input_is_const(i)) continue;
    const UOp* u = n.input(i).uop();
    while (u->op == Op::RESHAPE || u->op == Op::EXPAND) u = u->src[0];
    integers &= u->op == Op::CAST && u->src[0]->dtype.is_int();
  }
  if (integers) return std::nullopt;
  std::optional<NodeContext::Rows> rows = n.declared_rows(0);
  if (!rows)
    n.unsupported(
        "a floating-point Range over values read at run time needs a bound on its "
        "length: declare its output's dim (a number, or a dim parameter given a range "
        "with --dim NAME=LO..HI)");
  Tensor s = start.reshape({}), l = n.input(1).reshape({}), d = n.input(2).reshape({});
  // (A zero delta, or a length past int64, gives -1: a size outside every bound.)
  Tensor len = l.sub(s).div(d).ceil().maximum(0.0);
  Tensor ok = d.ne(d.like(0.0)).logical_and(len.lt(len.like(9.0e18)));
  Tensor count = ok.where(len, len.like(-1.0)).cast(dtypes::int64);
  Tensor values = iota(n, rows->bound).cast(start.dtype()).mul(d).add(s);
  Graph& g = n.graph();
  return Tensor(
      &g, g.counted(n.where(), n.name() + ".length", values.uop(), count.uop(), rows->symbol));
}

// Data-dependent sizes read at run time (Compress's condition, NonZero's input): compiled for
// the count of true (nonzero) elements the declared output gives; the run fails unless the
// input holds exactly that many. Output j takes the position whose inclusive count of trues is
// j + 1 (O(elements * count) compares: for the small conditions this is compiled for).
Tensor true_positions(NodeContext& n, size_t operand, const Tensor& c, int64_t count) {
  std::vector<const UOp*> v = n.run_time_ints(operand);
  if (v.empty()) n.const_input(operand);  // computed from model inputs: needs --freeze
  const UOp* trues = nullptr;
  for (const UOp* e : v) {
    const UOp* t = e->ne(e->const_like(int64_t{0}))->cast(dtypes::index);
    trues = trues ? trues->add(t) : t;
  }
  const UOp* holds = trues->eq(trues->const_like(count));
  if (program_words(holds) > KILN_ABI_MAX_CHECK_PROGRAM)
    n.needs_freeze(operand, "its " + std::to_string(v.size()) +
                                " elements are more than a check of the count of trues reads");
  n.require(holds, operand,
            "must hold " + std::to_string(count) +
                " true (nonzero) elements, the count the package was compiled for (the model's "
                "declared output shape)");
  int64_t m = c.numel();
  Tensor t = c.reshape({m}).ne(c.reshape({m}).like(0.0)).cast(dtypes::int64);  // [m]
  Tensor i = iota(n, m), j = iota(n, count).reshape({count, 1});
  Tensor upto = i.reshape({1, m}).le(i.reshape({m, 1}));                // [i, k]: k <= i
  Tensor prefix = upto.where(t.reshape({1, m}), t.like(0.0)).sum({1});  // [m]
  Tensor hit = t.eq(t.like(1.0)).logical_and(prefix.eq(j.add(1.0)));    // [count, m]
  return hit.where(i.reshape({1, m}), i.like(0.0)).sum({1});            // [count]
}

Tensor run_time_compress(NodeContext& n) {
  Tensor x = n.input(0), c = n.input(1);
  bool has_axis = n.has_attr("axis");
  int64_t axis = has_axis ? norm_axis(n.attr_int("axis"), x.ndim(), n) : 0;
  Tensor data = has_axis ? x : x.reshape({x.numel()});
  if (c.ndim() != 1) n.invalid("condition must be 1-D");
  if (c.numel() > data.dim(axis))
    n.invalid("condition has " + std::to_string(c.numel()) + " elements for an axis of " +
              std::to_string(data.dim(axis)));
  Shape d = n.declared_shape(0, 1);
  if (static_cast<int64_t>(d.size()) != data.ndim())
    n.invalid("the declared output's rank is not " + std::to_string(data.ndim()));
  return data.gather(true_positions(n, 1, c, d[static_cast<size_t>(axis)]), axis);
}

Tensor run_time_non_zero(NodeContext& n) {
  Tensor x = n.input(0);
  Shape d = n.declared_shape(0, 0);
  int64_t rank = x.ndim();
  if (d.size() != 2 || d[0] != rank)
    n.invalid("the declared output is not [" + std::to_string(rank) + ", count]");
  Tensor flat = true_positions(n, 0, x, d[1]).reshape({1, d[1]});
  std::vector<double> strides, dims;
  int64_t stride = 1;
  for (int64_t a = rank - 1; a >= 0; --a) {
    strides.insert(strides.begin(), static_cast<double>(stride));
    dims.insert(dims.begin(), static_cast<double>(x.dim(a)));
    stride *= x.dim(a);
  }
  Tensor s = n.constant(make_array(dtypes::int64, {rank, 1}, strides));
  Tensor e = n.constant(make_array(dtypes::int64, {rank, 1}, dims));
  return flat.div(s).mod(e);  // [rank, count]: each position's coordinates
}

}  // namespace

void register_misc_ops(OpRegistry& r) {
  r["Constant"] = [](NodeContext& n) {
    if (const onnx::TensorProto* t = n.attr_tensor("value"))
      return V{n.constant(tensor_data(*t, "."))};
    if (n.has_attr("value_float"))
      return V{n.constant(make_array(dtypes::float32, {}, {n.attr_float("value_float")}))};
    if (n.has_attr("value_int"))
      return V{n.constant(
          make_array(dtypes::int64, {}, {static_cast<double>(n.attr_int("value_int"))}))};
    if (n.has_attr("value_floats")) {
      std::vector<double> v = n.attr_floats("value_floats");
      return V{n.constant(make_array(dtypes::float32, {static_cast<int64_t>(v.size())}, v))};
    }
    if (n.has_attr("value_ints")) {
      std::vector<int64_t> iv = n.attr_ints("value_ints");
      return V{n.constant(make_array(dtypes::int64, {static_cast<int64_t>(iv.size())},
                                     std::vector<double>(iv.begin(), iv.end())))};
    }
    n.unsupported("a Constant that is not a dense tensor, float(s) or int(s)");
  };
  r["Shape"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t rank = x.ndim();
    int64_t start = n.attr_int("start", 0), end = n.attr_int("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    std::vector<double> dims(x.shape().begin() + start, x.shape().begin() + end);
    return V{n.constant(make_array(dtypes::int64, {end - start}, dims))};
  };
  r["Size"] = [](NodeContext& n) {
    return V{n.constant(make_array(dtypes::int64, {}, {static_cast<double>(n.input(0).numel())}))};
  };
  r["ConstantOfShape"] = [](NodeContext& n) {
    std::vector<int64_t> s =
        ints_or_declared(n, 0, 0, [](const Shape& d) { return d; }, "the output shape");
    NDArray v(dtypes::float32, {1});
    if (const onnx::TensorProto* t = n.attr_tensor("value")) v = tensor_data(*t, ".");
    if (v.numel() != 1) n.invalid("value must hold one element");
    return V{Tensor::scalar(n.graph(), v.get(0), v.dtype()).expand(s)};
  };
  r["Range"] = [](NodeContext& n) {
    if (!n.input_is_const(0) || !n.input_is_const(1) || !n.input_is_const(2)) {
      if (std::optional<Tensor> r = counted_float_range(n)) return V{*r};
      return V{run_time_range(n)};
    }
    const NDArray& s = n.const_input(0);
    double start = s.get(0).as_double(), limit = n.const_input(1).get(0).as_double(),
           delta = n.const_input(2).get(0).as_double();
    if (delta == 0) n.invalid("delta is 0");
    return V{arange(n.graph(), start, limit, delta, s.dtype())};
  };
  r["EyeLike"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (x.ndim() != 2) n.invalid("input must be 2-D");
    DType d = n.has_attr("dtype") ? dtype_of(static_cast<int>(n.attr_int("dtype"))) : x.dtype();
    int64_t k = n.attr_int("k", 0);
    Tensor i = iota(n, x.dim(0)).reshape({x.dim(0), 1}),
           j = iota(n, x.dim(1)).reshape({1, x.dim(1)});
    Tensor eye = j.sub(i).eq(i.like(static_cast<double>(k)));
    return V{eye.where(Tensor::full(n.graph(), {}, 1, d), Tensor::full(n.graph(), {}, 0, d))};
  };
  // k only moves the diagonal, never the shape: a run-time k (a model input) is a scalar the
  // kernel compares against, like a constant one.
  r["Trilu"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (x.ndim() < 2) n.invalid("input must have at least 2 dimensions");
    bool upper = n.attr_int("upper", 1) != 0;
    int64_t rows = x.dim(-2), cols = x.dim(-1);
    Tensor i = iota(n, rows).reshape({rows, 1}), j = iota(n, cols).reshape({1, cols});
    Tensor d = j.sub(i);
    Tensor k = d.like(0.0).reshape({});
    if (n.has_input(1)) {
      k = n.input(1);
      if (k.dtype() != dtypes::int64) n.invalid("k must be int64");
      if (k.numel() != 1) n.invalid("k must hold one value, it has shape " + shape_str(k.shape()));
      k = k.reshape({}).cast(d.dtype());
    }
    Tensor keep = upper ? d.ge(k) : d.le(k);
    return V{keep.where(x, x.like(0.0))};
  };
  r["OneHot"] = [](NodeContext& n) {
    Tensor idx = n.input(0);
    int64_t out_rank = idx.ndim() + 1;
    int64_t axis = norm_axis(n.attr_int("axis", -1), out_rank, n);
    // depth may be a float (cast to int64); read at run time, the declared output's axis.
    std::vector<double> depth_v;
    if (n.input_is_const(1)) {
      depth_v = n.const_floats(1);
    } else {
      auto from = [&](const Shape& d) {
        if (static_cast<int64_t>(d.size()) != out_rank)
          n.invalid("the declared output's rank is not the indices' plus one");
        return std::vector<int64_t>{d[static_cast<size_t>(axis)]};
      };
      depth_v = {static_cast<double>(ints_or_declared(n, 1, 0, from, "the depth").at(0))};
    }
    if (depth_v.size() != 1) n.invalid("depth must be a scalar");
    int64_t depth = static_cast<int64_t>(depth_v[0]);
    Tensor values = n.input(2);
    Tensor i = idx.cast(dtypes::int64);
    i = i.lt(i.like(0.0)).where(i.add(i.like(static_cast<double>(depth))), i);
    Shape s(static_cast<size_t>(out_rank), 1);
    s[static_cast<size_t>(axis)] = depth;
    Tensor hit = i.unsqueeze(axis).eq(iota(n, depth).reshape(s));
    Tensor off = values.gather(Tensor::full(n.graph(), {}, 0, dtypes::int64), 0);
    Tensor on = values.gather(Tensor::full(n.graph(), {}, 1, dtypes::int64), 0);
    return V{hit.where(on, off)};
  };
  r["TopK"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t axis = norm_axis(n.attr_int("axis", -1), x.ndim(), n);
    auto k_of = [&](const Shape& d) {
      if (static_cast<int64_t>(d.size()) != x.ndim())
        n.invalid("the declared output's rank differs from the input's");
      return std::vector<int64_t>{d[static_cast<size_t>(axis)]};
    };
    int64_t k = n.opset() >= 10 ? ints_or_declared(n, 1, 0, k_of, "the k").at(0) : n.attr_int("k");
    bool largest = n.attr_int("largest", 1) != 0;
    if (k < 0 || k > x.dim(axis)) n.invalid("k is out of range");
    std::vector<int64_t> perm;
    for (int64_t a = 0; a < x.ndim(); ++a)
      if (a != axis) perm.push_back(a);
    perm.push_back(axis);
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    auto [values, indices] = top_k(n, x.permute(perm), k, largest);
    return V{values.permute(inv), indices.permute(inv)};
  };
  r["Compress"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (!n.input_is_const(1)) return V{run_time_compress(n)};
    const NDArray& c = n.const_input(1);
    std::vector<int64_t> cond;
    for (int64_t i = 0; i < c.numel(); ++i) cond.push_back(c.get(i).as_int());
    std::vector<double> keep;
    for (size_t i = 0; i < cond.size(); ++i)
      if (cond[i]) keep.push_back(static_cast<double>(i));
    Tensor data = x;
    int64_t axis = 0;
    if (n.has_attr("axis"))
      axis = norm_axis(n.attr_int("axis"), x.ndim(), n);
    else
      data = x.reshape({x.numel()});
    Tensor idx = n.constant(make_array(dtypes::int64, {static_cast<int64_t>(keep.size())}, keep));
    return V{data.gather(idx, axis)};
  };
  r["NonZero"] = [](NodeContext& n) {
    if (!n.input_is_const(0)) return V{run_time_non_zero(n)};
    const NDArray& x = n.const_input(0);
    std::vector<int64_t> strides = x.strides();
    std::vector<std::vector<double>> coords(x.shape().size());
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (x.get(i).as_double() == 0.0) continue;
      int64_t rem = i;
      for (size_t d = 0; d < strides.size(); ++d) {
        coords[d].push_back(static_cast<double>(rem / strides[d]));
        rem %= strides[d];
      }
    }
    int64_t count = coords.empty() ? 0 : static_cast<int64_t>(coords[0].size());
    std::vector<double> flat;
    for (const auto& c : coords) flat.insert(flat.end(), c.begin(), c.end());
    return V{
        n.constant(make_array(dtypes::int64, {static_cast<int64_t>(coords.size()), count}, flat))};
  };
}

}  // namespace kiln::onnxfe
