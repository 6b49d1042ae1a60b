// The ops a .kg file can call: every Tensor API primitive (under the names the writer prints)
// and the composites. See docs/graph-file.md for the list with attributes.
#include <cmath>

#include "compiler/frontend/graph_file/call.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"

namespace kiln::kg {

namespace {

using V = std::vector<Tensor>;

OpFn unary(Tensor (Tensor::*f)() const) {
  return [f](Call& c) {
    Tensor x = c.tensor(0);
    c.done(1, 1);
    return V{(x.*f)()};
  };
}

OpFn binary(Tensor (Tensor::*f)(const Tensor&) const) {
  return [f](Call& c) {
    Tensor a = c.tensor(0);
    Tensor b = c.operand(1, a);
    c.done(2, 2);
    return V{(a.*f)(b)};
  };
}

OpFn reduction(Op op, bool mean = false) {
  return [op, mean](Call& c) {
    Tensor x = c.tensor(0);
    auto axes = c.get_ints("axes", std::vector<int64_t>{});
    bool keep = c.get_bool("keepdims", false);
    c.done(1, 1);
    return V{mean ? x.mean(axes, keep) : x.reduce(op, axes, keep)};
  };
}

OpFn activation(Tensor (*f)(const Tensor&)) {
  return [f](Call& c) {
    Tensor x = c.tensor(0);
    c.done(1, 1);
    return V{f(x)};
  };
}

std::map<std::string, OpFn> build() {
  std::map<std::string, OpFn> r;
  // ---- primitives
  r["const"] = [](Call& c) {
    DType d = c.get_dtype("dtype");
    double v = c.get_float("value");
    c.done(0, 0);
    ConstValue cv =
        d.is_float() ? ConstValue::of_float(v) : ConstValue::of_int(static_cast<int64_t>(v));
    return V{Tensor::scalar(c.graph(), cv, d)};
  };
  r["reshape"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto s = c.get_ints("shape");
    c.done(1, 1);
    return V{x.reshape(s)};
  };
  r["permute"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto o = c.get_ints("order");
    c.done(1, 1);
    return V{x.permute(o)};
  };
  r["expand"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto s = c.get_ints("shape");
    c.done(1, 1);
    return V{x.expand(s)};
  };
  r["pad"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto p = c.get_pairs("pads");
    double v = c.get_float("value", 0.0);
    c.done(1, 1);
    return V{x.pad(p, v)};
  };
  r["shrink"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto b = c.get_pairs("bounds");
    c.done(1, 1);
    return V{x.shrink(b)};
  };
  r["flip"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto a = c.get_ints("axes");
    c.done(1, 1);
    return V{x.flip(a)};
  };
  r["window"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto k = c.get_ints("kernel");
    auto s = c.get_ints("stride", std::vector<int64_t>(k.size(), 1));
    auto d = c.get_ints("dilation", std::vector<int64_t>(k.size(), 1));
    c.done(1, 1);
    return V{x.window(k, s, d)};
  };
  r["gather"] = [](Call& c) {
    Tensor x = c.tensor(0), i = c.tensor(1);
    int64_t axis = c.get_int("axis", 0);
    c.done(2, 2);
    return V{x.gather(i, axis)};
  };
  r["contiguous"] = unary(&Tensor::contiguous);
  r["reduce_sum"] = r["sum"] = reduction(Op::ADD);
  r["reduce_max"] = r["max"] = reduction(Op::MAX);
  r["reduce_min"] = r["min"] = reduction(Op::MIN);
  r["reduce_prod"] = r["prod"] = reduction(Op::MUL);
  r["mean"] = reduction(Op::ADD, true);
  r["cast"] = [](Call& c) {
    Tensor x = c.tensor(0);
    DType d = c.get_dtype("dtype");
    c.done(1, 1);
    return V{x.cast(d)};
  };
  r["bitcast"] = [](Call& c) {
    Tensor x = c.tensor(0);
    DType d = c.get_dtype("dtype");
    c.done(1, 1);
    return V{x.bitcast(d)};
  };
  r["neg"] = unary(&Tensor::neg);
  r["recip"] = unary(&Tensor::recip);
  r["sqrt"] = unary(&Tensor::sqrt);
  r["exp"] = unary(&Tensor::exp);
  r["exp2"] = unary(&Tensor::exp2);
  r["log"] = unary(&Tensor::log);
  r["log2"] = unary(&Tensor::log2);
  r["sin"] = unary(&Tensor::sin);
  r["cos"] = unary(&Tensor::cos);
  r["tanh"] = unary(&Tensor::tanh);
  r["erf"] = unary(&Tensor::erf);
  r["sigmoid"] = unary(&Tensor::sigmoid);
  r["abs"] = unary(&Tensor::abs);
  r["trunc"] = unary(&Tensor::trunc);
  r["floor"] = unary(&Tensor::floor);
  r["ceil"] = unary(&Tensor::ceil);
  r["round"] = unary(&Tensor::round);
  r["not"] = unary(&Tensor::logical_not);
  r["add"] = binary(&Tensor::add);
  r["sub"] = binary(&Tensor::sub);
  r["mul"] = binary(&Tensor::mul);
  r["div"] = binary(&Tensor::div);
  r["mod"] = binary(&Tensor::mod);
  r["maximum"] = binary(&Tensor::maximum);
  r["minimum"] = binary(&Tensor::minimum);
  r["pow"] = binary(&Tensor::pow);
  r["lt"] = binary(&Tensor::lt);
  r["gt"] = binary(&Tensor::gt);
  r["le"] = binary(&Tensor::le);
  r["ge"] = binary(&Tensor::ge);
  r["eq"] = binary(&Tensor::eq);
  r["ne"] = binary(&Tensor::ne);
  r["and"] = binary(&Tensor::logical_and);
  r["or"] = binary(&Tensor::logical_or);
  r["xor"] = binary(&Tensor::logical_xor);
  r["shl"] = [](Call& c) {
    Tensor a = c.tensor(0), b = c.operand(1, a);
    c.done(2, 2);
    return V{a.binary(Op::SHL, b)};
  };
  r["shr"] = [](Call& c) {
    Tensor a = c.tensor(0), b = c.operand(1, a);
    c.done(2, 2);
    return V{a.binary(Op::SHR, b)};
  };
  r["where"] = [](Call& c) {
    Tensor cond = c.tensor(0);
    Tensor a =
        c.args.size() > 1 && c.args[1].kind == Value::Kind::Tensor ? c.tensor(1) : c.tensor(2);
    Tensor x = c.operand(1, a), y = c.operand(2, a);
    c.done(3, 3);
    return V{cond.where(x, y)};
  };
  // ---- shape helpers
  r["transpose"] = [](Call& c) {
    Tensor x = c.tensor(0);
    int64_t a = c.get_int("a", -2), b = c.get_int("b", -1);
    c.done(1, 1);
    return V{x.transpose(a, b)};
  };
  r["unsqueeze"] = [](Call& c) {
    Tensor x = c.tensor(0);
    int64_t a = c.get_int("axis");
    c.done(1, 1);
    return V{x.unsqueeze(a)};
  };
  r["squeeze"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto a = c.get_ints("axes", std::vector<int64_t>{});
    c.done(1, 1);
    return V{x.squeeze(a)};
  };
  r["flatten"] = [](Call& c) {
    Tensor x = c.tensor(0);
    int64_t s = c.get_int("start", 0), e = c.get_int("end", -1);
    c.done(1, 1);
    return V{x.flatten(s, e)};
  };
  // ---- composites
  r["matmul"] = [](Call& c) {
    Tensor a = c.tensor(0), b = c.tensor(1);
    c.done(2, 2);
    return V{matmul(a, b)};
  };
  r["linear"] = [](Call& c) {
    Tensor a = c.tensor(0), w = c.tensor(1);
    auto bias = c.opt_tensor("bias");
    c.done(2, 2);
    return V{linear(a, w, bias ? &*bias : nullptr)};
  };
  r["conv"] = [](Call& c) {
    Tensor x = c.tensor(0), w = c.tensor(1);
    auto bias = c.opt_tensor("bias");
    ConvParams p;
    p.stride = c.get_ints("stride", std::vector<int64_t>{});
    p.padding = c.get_pairs("padding", std::vector<std::pair<int64_t, int64_t>>{});
    p.dilation = c.get_ints("dilation", std::vector<int64_t>{});
    p.groups = c.get_int("groups", 1);
    c.done(2, 2);
    return V{conv(x, w, bias ? &*bias : nullptr, p)};
  };
  auto pool = [](bool is_max) {
    return [is_max](Call& c) {
      Tensor x = c.tensor(0);
      PoolParams p;
      p.kernel = c.get_ints("kernel");
      p.stride = c.get_ints("stride", std::vector<int64_t>{});
      p.padding = c.get_pairs("padding", std::vector<std::pair<int64_t, int64_t>>{});
      p.dilation = c.get_ints("dilation", std::vector<int64_t>{});
      p.ceil_mode = c.get_bool("ceil_mode", false);
      if (!is_max) p.count_include_pad = c.get_bool("count_include_pad", false);
      c.done(1, 1);
      return V{is_max ? max_pool(x, p) : avg_pool(x, p)};
    };
  };
  r["max_pool"] = pool(true);
  r["avg_pool"] = pool(false);
  r["batch_norm"] = [](Call& c) {
    Tensor x = c.tensor(0), s = c.tensor(1), b = c.tensor(2), m = c.tensor(3), v = c.tensor(4);
    double eps = c.get_float("eps", 1e-5);
    c.done(5, 5);
    return V{batch_norm(x, s, b, m, v, eps)};
  };
  r["layer_norm"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto s = c.opt_tensor("scale");
    auto b = c.opt_tensor("bias");
    int64_t axis = c.get_int("axis", -1);
    double eps = c.get_float("eps", 1e-5);
    c.done(1, 1);
    return V{layer_norm(x, axis, s ? &*s : nullptr, b ? &*b : nullptr, eps)};
  };
  r["instance_norm"] = [](Call& c) {
    Tensor x = c.tensor(0), s = c.tensor(1), b = c.tensor(2);
    double eps = c.get_float("eps", 1e-5);
    c.done(3, 3);
    return V{instance_norm(x, s, b, eps)};
  };
  r["softmax"] = [](Call& c) {
    Tensor x = c.tensor(0);
    int64_t a = c.get_int("axis", -1);
    c.done(1, 1);
    return V{softmax(x, a)};
  };
  r["log_softmax"] = [](Call& c) {
    Tensor x = c.tensor(0);
    int64_t a = c.get_int("axis", -1);
    c.done(1, 1);
    return V{log_softmax(x, a)};
  };
  r["relu"] = activation(relu);
  r["silu"] = activation(silu);
  r["hard_swish"] = activation(hard_swish);
  r["softplus"] = activation(softplus);
  r["gelu"] = [](Call& c) {
    Tensor x = c.tensor(0);
    std::string a = c.get_str("approximate", "none");
    if (a != "none" && a != "tanh") c.fail("approximate must be \"none\" or \"tanh\"");
    c.done(1, 1);
    return V{gelu(x, a == "tanh")};
  };
  r["hard_sigmoid"] = [](Call& c) {
    Tensor x = c.tensor(0);
    double a = c.get_float("alpha", 0.2), b = c.get_float("beta", 0.5);
    c.done(1, 1);
    return V{hard_sigmoid(x, a, b)};
  };
  r["clip"] = [](Call& c) {
    Tensor x = c.tensor(0);
    std::optional<Tensor> lo, hi;
    if (c.kwargs.count("min")) lo = x.like(c.get_float("min"));
    if (c.kwargs.count("max")) hi = x.like(c.get_float("max"));
    c.done(1, 1);
    return V{clip(x, lo ? &*lo : nullptr, hi ? &*hi : nullptr)};
  };
  r["leaky_relu"] = [](Call& c) {
    Tensor x = c.tensor(0);
    double a = c.get_float("alpha", 0.01);
    c.done(1, 1);
    return V{leaky_relu(x, a)};
  };
  r["elu"] = [](Call& c) {
    Tensor x = c.tensor(0);
    double a = c.get_float("alpha", 1.0);
    c.done(1, 1);
    return V{elu(x, a)};
  };
  r["concat"] = [](Call& c) {
    auto xs = c.tensors(0);
    int64_t a = c.get_int("axis");
    c.done(1, 1);
    return V{concat(xs, a)};
  };
  r["split"] = [](Call& c) {
    Tensor x = c.tensor(0);
    int64_t a = c.get_int("axis");
    auto s = c.get_ints("sizes");
    c.done(1, 1);
    return split(x, a, s);
  };
  r["slice"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto st = c.get_ints("starts"), en = c.get_ints("ends");
    auto ax = c.get_ints("axes", std::vector<int64_t>{}),
         sp = c.get_ints("steps", std::vector<int64_t>{});
    c.done(1, 1);
    return V{slice(x, st, en, ax, sp)};
  };
  r["tile"] = [](Call& c) {
    Tensor x = c.tensor(0);
    auto rep = c.get_ints("repeats");
    c.done(1, 1);
    return V{tile(x, rep)};
  };
  r["arange"] = [](Call& c) {
    double start = c.get_float("start", 0.0), stop = c.get_float("stop"),
           step = c.get_float("step", 1.0);
    DType d = c.get_dtype("dtype", dtypes::float32);
    c.done(0, 0);
    return V{arange(c.graph(), start, stop, step, d)};
  };
  r["cumsum"] = [](Call& c) {
    Tensor x = c.tensor(0);
    int64_t a = c.get_int("axis");
    bool ex = c.get_bool("exclusive", false), rev = c.get_bool("reverse", false);
    c.done(1, 1);
    return V{cumsum(x, a, ex, rev)};
  };
  return r;
}

}  // namespace

const std::map<std::string, OpFn>& op_registry() {
  static const std::map<std::string, OpFn> r = build();
  return r;
}

}  // namespace kiln::kg
