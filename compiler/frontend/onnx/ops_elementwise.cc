// Elementwise ONNX ops: math, activations, comparisons, logic, casts. Broadcasting is numpy's
// (the Tensor API's).
#include <cmath>
#include <limits>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/nn.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

Tensor zeros_like(const Tensor& x) {
  return x.like(0.0).expand(x.shape());
}

// atan for |x| <= 1 by a minimax-style odd polynomial (max error ~1e-7), extended by symmetry.
Tensor atan_of(const Tensor& x) {
  Tensor a = x.abs();
  Tensor big = a.gt(1.0);
  Tensor t = big.where(a.recip(), a);
  Tensor t2 = t.mul(t);
  static const double c[] = {0.99999999999997,  -0.33333333325359, 0.19999999625186,
                             -0.14285672399413, 0.11109908237993,  -0.09085391853286,
                             0.07575536066467,  -0.06062766908219, 0.04291745298212,
                             -0.02338453007624, 0.00842929566537,  -0.00146993924551};
  Tensor p = t2.like(c[11]).expand(t2.shape());
  for (int k = 10; k >= 0; --k) p = p.mul(t2).add(c[k]);
  Tensor r = p.mul(t);
  r = big.where(r.neg().add(M_PI_2), r);
  return x.lt(0.0).where(r.neg(), r);
}

OpHandler unary(Tensor (*f)(const Tensor&)) {
  return [f](NodeContext& n) { return V{f(n.input(0))}; };
}

Tensor float_only(NodeContext& n, const Tensor& x) {
  if (!x.dtype().is_float()) n.unsupported("needs a float input, got " + x.dtype().str());
  return x;
}

OpHandler method(Tensor (Tensor::*m)() const) {
  return [m](NodeContext& n) { return V{(float_only(n, n.input(0)).*m)()}; };
}

OpHandler binary(Tensor (Tensor::*m)(const Tensor&) const) {
  return [m](NodeContext& n) { return V{(n.input(0).*m)(n.input(1))}; };
}

// Max, Min, Sum, Mean: any number of inputs, broadcast.
OpHandler variadic(Op op, bool mean) {
  return [op, mean](NodeContext& n) {
    Tensor acc = n.input(0);
    for (size_t i = 1; i < n.num_inputs(); ++i) acc = acc.binary(op, n.input(i));
    if (mean) acc = acc.div(acc.like(static_cast<double>(n.num_inputs())));
    return V{acc};
  };
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  r["Abs"] = [](NodeContext& n) { return V{n.input(0).abs()}; };
  r["Neg"] = [](NodeContext& n) { return V{n.input(0).neg()}; };
  r["Reciprocal"] = method(&Tensor::recip);
  r["Sqrt"] = method(&Tensor::sqrt);
  r["Exp"] = method(&Tensor::exp);
  r["Log"] = method(&Tensor::log);
  r["Sin"] = method(&Tensor::sin);
  r["Cos"] = method(&Tensor::cos);
  r["Tanh"] = method(&Tensor::tanh);
  r["Sigmoid"] = method(&Tensor::sigmoid);
  r["Erf"] = method(&Tensor::erf);
  r["Floor"] = method(&Tensor::floor);
  r["Ceil"] = method(&Tensor::ceil);
  r["Round"] = method(&Tensor::round);
  r["Tan"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    return V{x.sin().div(x.cos())};
  };
  r["Atan"] = [](NodeContext& n) { return V{atan_of(float_only(n, n.input(0)))}; };
  r["Asin"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    return V{atan_of(x.div(x.like(1.0).sub(x.mul(x)).sqrt()))};
  };
  r["Acos"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    Tensor s = x.like(1.0).sub(x.mul(x)).sqrt();
    // acos(x) = 2 atan(sqrt(1-x^2) / (1+x)), exact at both ends.
    return V{atan_of(s.div(x.add(1.0))).mul(2.0)};
  };
  r["Sinh"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    return V{x.exp().sub(x.neg().exp()).mul(0.5)};
  };
  r["Cosh"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    return V{x.exp().add(x.neg().exp()).mul(0.5)};
  };
  r["Asinh"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    Tensor a = x.abs();
    Tensor v = a.add(a.mul(a).add(1.0).sqrt()).log();
    return V{x.lt(0.0).where(v.neg(), v)};
  };
  r["Acosh"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    return V{x.add(x.mul(x).sub(1.0).sqrt()).log()};
  };
  r["Atanh"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    return V{x.add(1.0).div(x.like(1.0).sub(x)).log().mul(0.5)};
  };
  r["Sign"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    Tensor one = x.like(1.0), zero = x.like(0.0);
    if (x.dtype().is_unsigned()) return V{x.gt(zero).where(one, zero)};
    return V{x.gt(zero).where(one, x.lt(zero).where(x.like(-1.0), zero))};
  };
  r["Not"] = [](NodeContext& n) { return V{n.input(0).logical_not()}; };
  r["IsNaN"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    return V{x.ne(x)};
  };
  r["IsInf"] = [](NodeContext& n) {
    Tensor x = float_only(n, n.input(0));
    bool pos = n.attr_int("detect_positive", 1) != 0, neg = n.attr_int("detect_negative", 1) != 0;
    Tensor inf = x.like(std::numeric_limits<double>::infinity());
    Tensor p = x.eq(inf), m = x.eq(inf.neg());
    Tensor none = Tensor::full(n.graph(), x.shape(), 0, dtypes::bool_);
    return V{(pos ? p : none).logical_or(neg ? m : none)};
  };
  r["Relu"] = unary(relu);
  r["Softsign"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    return V{x.div(x.abs().add(1.0))};
  };
  r["Softplus"] = unary(softplus);
  r["HardSwish"] = unary(hard_swish);
  r["LeakyRelu"] = [](NodeContext& n) {
    return V{leaky_relu(n.input(0), n.attr_float("alpha", 0.01))};
  };
  r["Elu"] = [](NodeContext& n) { return V{elu(n.input(0), n.attr_float("alpha", 1.0))}; };
  r["Selu"] = [](NodeContext& n) {
    double alpha = n.attr_float("alpha", 1.67326319217681884765625),
           gamma = n.attr_float("gamma", 1.05070102214813232421875);
    Tensor x = n.input(0);
    return V{x.gt(0.0).where(x, x.exp().sub(1.0).mul(alpha)).mul(gamma)};
  };
  r["Celu"] = [](NodeContext& n) {
    double alpha = n.attr_float("alpha", 1.0);
    Tensor x = n.input(0);
    return V{x.maximum(0.0).add(x.div(alpha).exp().sub(1.0).mul(alpha).minimum(0.0))};
  };
  r["ThresholdedRelu"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    return V{x.gt(n.attr_float("alpha", 1.0)).where(x, zeros_like(x))};
  };
  r["HardSigmoid"] = [](NodeContext& n) {
    return V{hard_sigmoid(n.input(0), n.attr_float("alpha", 0.2), n.attr_float("beta", 0.5))};
  };
  r["Shrink"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    double lambd = n.attr_float("lambd", 0.5), bias = n.attr_float("bias", 0.0);
    return V{x.lt(-lambd).where(x.add(bias), x.gt(lambd).where(x.sub(bias), zeros_like(x)))};
  };
  r["PRelu"] = [](NodeContext& n) {
    Tensor x = n.input(0), s = n.input(1);
    return V{x.lt(x.like(0.0)).where(x.mul(s), x)};
  };
  r["Add"] = binary(&Tensor::add);
  r["Sub"] = binary(&Tensor::sub);
  r["Mul"] = binary(&Tensor::mul);
  r["Div"] = binary(&Tensor::div);
  r["Pow"] = [](NodeContext& n) {
    Tensor x = n.input(0), y = n.input(1);
    // An integer base with a float exponent: the power in float64, truncated (onnxruntime's
    // behaviour); integer exponents use exact integer powers.
    if (!x.dtype().is_float() && y.dtype().is_float())
      return V{x.cast(dtypes::float64).pow(y.cast(dtypes::float64)).cast(x.dtype())};
    // A constant exponent of 2 (layer norm's variance) is x * x, which is what pow computes
    // exactly, without the exp/log pair per element. Only when broadcasting y keeps x's shape.
    if (x.dtype().is_float() && n.input_is_const(1) && y.numel() == 1 && y.ndim() <= x.ndim()) {
      double e = n.const_floats(1)[0];
      if (e == 2.0) return V{x.mul(x)};
      if (e == 1.0) return V{x};
    }
    return V{x.pow(y.cast(x.dtype()))};
  };
  r["Mod"] = [](NodeContext& n) {
    Tensor a = n.input(0), b = n.input(1);
    Tensor m = a.mod(b);
    if (n.attr_int("fmod", 0) || a.dtype().is_unsigned()) return V{m};
    if (a.dtype().is_float()) n.unsupported("fmod=0 on floats is not defined by ONNX");
    // Python's modulo: the result takes the divisor's sign.
    Tensor zero = a.like(0.0);
    Tensor fix = m.ne(zero).logical_and(m.lt(zero).ne(b.lt(zero)));
    return V{fix.where(m.add(b), m)};
  };
  r["And"] = binary(&Tensor::logical_and);
  r["Or"] = binary(&Tensor::logical_or);
  r["Xor"] = binary(&Tensor::logical_xor);
  r["Equal"] = binary(&Tensor::eq);
  r["Less"] = binary(&Tensor::lt);
  r["Greater"] = binary(&Tensor::gt);
  r["LessOrEqual"] = binary(&Tensor::le);
  r["GreaterOrEqual"] = binary(&Tensor::ge);
  r["BitShift"] = [](NodeContext& n) {
    std::string dir = n.attr_string("direction");
    Tensor x = n.input(0), y = n.input(1);
    if (dir == "LEFT") return V{x.binary(Op::SHL, y)};
    if (dir == "RIGHT") return V{x.binary(Op::SHR, y)};
    n.invalid("direction must be LEFT or RIGHT");
  };
  r["Max"] = variadic(Op::MAX, false);
  r["Min"] = variadic(Op::MIN, false);
  r["Sum"] = variadic(Op::ADD, false);
  r["Mean"] = variadic(Op::ADD, true);
  r["Where"] = [](NodeContext& n) { return V{n.input(0).where(n.input(1), n.input(2))}; };
  r["Clip"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    std::optional<Tensor> lo, hi;
    if (n.opset() < 11) {
      lo = x.like(n.attr_float("min", -std::numeric_limits<float>::max()));
      hi = x.like(n.attr_float("max", std::numeric_limits<float>::max()));
    } else {
      if (n.has_input(1)) lo = n.input(1);
      if (n.has_input(2)) hi = n.input(2);
    }
    return V{clip(x, lo ? &*lo : nullptr, hi ? &*hi : nullptr)};
  };
  r["Cast"] = [](NodeContext& n) {
    return V{n.input(0).cast(dtype_of(static_cast<int>(n.attr_int("to"))))};
  };
  r["CastLike"] = [](NodeContext& n) { return V{n.input(0).cast(n.input(1).dtype())}; };
}

}  // namespace kiln::onnxfe
