// Quantization ops (opsets 10-17), built as the spec defines them, exactly:
// QuantizeLinear, DequantizeLinear (per tensor or per axis), DynamicQuantizeLinear, and the
// integer ops MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
//
// Integer contractions run in int32, so their results are exact; requantization is float32
// (accumulator × combined scale), rounded half to even and saturated to the output type.
// A uint8 × constant int8 matmul (a quantized layer's weights) is a dot-product contraction:
// the raw bytes multiplied (vpdpbusd where the CPU has it), the zero points applied after by
// the sums (A - za)(B - zb) = AB - za·ΣB - zb·ΣA + K·za·zb. Other operand types and convolutions
// widen the operands and subtract the zero points first (plain int32 code).
#include <algorithm>
#include <cmath>
#include <optional>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/integer_conv.h"
#include "compiler/tensor/integral_values.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/weight_layout.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

std::pair<double, double> type_range(DType d) {
  if (d == dtypes::uint8) return {0, 255};
  if (d == dtypes::int8) return {-128, 127};
  if (d == dtypes::int32) return {-2147483648.0, 2147483647.0};
  if (d == dtypes::uint16) return {0, 65535};
  if (d == dtypes::int16) return {-32768, 32767};
  return {0, 0};
}

// A per-tensor scale/zero point (a scalar or one value), or a per-axis one (1-D, along `axis` of
// x), reshaped to broadcast against x. The axis is checked only when it is used.
Tensor along(NodeContext& n, const Tensor& p, const Tensor& x, int64_t axis, const char* what) {
  if (p.ndim() == 0 || (p.ndim() == 1 && p.dim(0) == 1)) return p.reshape({});
  int64_t a = norm_axis(axis, x.ndim(), n);
  if (p.ndim() != 1 || p.dim(0) != x.dim(a))
    n.invalid(std::string(what) + " is " + shape_str(p.shape()) + ": a scalar or one value per " +
              "element of axis " + std::to_string(a) + " (" + std::to_string(x.dim(a)) + ")");
  Shape s(static_cast<size_t>(x.ndim()), 1);
  s[static_cast<size_t>(a)] = x.dim(a);
  return p.reshape(s);
}

// round half to even, saturate to `to`'s range, convert.
Tensor saturate(const Tensor& x, DType to) {
  auto [lo, hi] = type_range(to);
  return x.round().maximum(lo).minimum(hi).cast(to);
}

// x already integral (rounded, plus an integer zero point): saturated and converted.
Tensor clamp_to(const Tensor& x, DType to) {
  auto [lo, hi] = type_range(to);
  return x.maximum(lo).minimum(hi).cast(to);
}

// The value of a broadcast constant (EXPAND/RESHAPE of a CONST), if u is one.
std::optional<double> splat_value(const UOp* u) {
  while (u->op == Op::EXPAND || u->op == Op::RESHAPE) u = u->src[0];
  if (u->op != Op::CONST) return std::nullopt;
  return u->cval().as_double();
}

// For q = QuantizeLinear's output as built above, CAST(t, MIN(MAX(v, lo), hi)) with v integral
// and [lo, hi] t's range: the float32 v clamped (the same number as q), else invalid.
Tensor quantized_float(const Tensor& q) {
  const UOp* u = q.uop();
  if (u->op != Op::CAST || (u->dtype != dtypes::uint8 && u->dtype != dtypes::int8)) return Tensor();
  const UOp* mn = u->src[0];
  if (mn->op != Op::MIN || mn->dtype != dtypes::float32 || mn->src[0]->op != Op::MAX)
    return Tensor();
  const UOp* mx = mn->src[0];
  auto [lo, hi] = type_range(u->dtype);
  if (splat_value(mx->src[1]) != lo || splat_value(mn->src[1]) != hi ||
      !integral_values(mx->src[0]))
    return Tensor();
  return Tensor(q.graph(), mn);
}

V quantize_linear(NodeContext& n) {
  Tensor x = n.input(0), scale = n.input(1);
  if (!x.dtype().is_float()) n.invalid("x must be a float tensor");
  DType out = dtypes::uint8;
  Tensor zp;
  if (n.has_input(2)) {
    zp = n.input(2);
    out = zp.dtype();
  }
  if (out != dtypes::uint8 && out != dtypes::int8)
    n.unsupported("a quantized type other than uint8 and int8 (" + out.str() + ")");
  int64_t axis = n.attr_int("axis", 1);
  Tensor s = along(n, scale, x, axis, "y_scale").cast(dtypes::float32);
  Tensor q = x.cast(dtypes::float32).div(s).round();
  if (zp.valid()) q = q.add(along(n, zp, x, axis, "y_zero_point").cast(dtypes::float32));
  return V{clamp_to(q, out)};
}

V dequantize_linear(NodeContext& n) {
  Tensor x = n.input(0), scale = n.input(1);
  if (!x.dtype().is_int()) n.invalid("x must be an integer tensor");
  int64_t axis = n.attr_int("axis", 1);
  Tensor s = along(n, scale, x, axis, "x_scale");
  // A QuantizeLinear's output (a QDQ model's fake-quantized activation): the same numbers from
  // the clamped float32 it was converted from, without the round trip through the integer type
  // (three conversions per element in every quantized layer's epilogue).
  if (Tensor f = quantized_float(x); f.valid() && s.dtype() == dtypes::float32) {
    if (n.has_input(2)) {
      Tensor zp = n.input(2);
      if (zp.dtype() != x.dtype()) n.invalid("x_zero_point must have x's type");
      f = f.sub(along(n, zp, x, axis, "x_zero_point").cast(dtypes::float32));
    }
    return V{f.mul(s)};
  }
  Tensor v = x.cast(dtypes::int32);
  if (n.has_input(2)) {
    Tensor zp = n.input(2);
    if (zp.dtype() != x.dtype()) n.invalid("x_zero_point must have x's type");
    v = v.sub(along(n, zp, x, axis, "x_zero_point").cast(dtypes::int32));
  }
  return V{v.cast(s.dtype()).mul(s)};
}

V dynamic_quantize_linear(NodeContext& n) {
  Tensor x = n.input(0).cast(dtypes::float32);
  // The range always holds 0, so 0 is exact; scale maps it onto [0, 255].
  Tensor lo = x.min().minimum(0.0), hi = x.max().maximum(0.0);
  Tensor scale = hi.sub(lo).div(255.0);
  Tensor zp = saturate(lo.neg().div(scale), dtypes::uint8);
  Tensor y = clamp_to(x.div(scale).round().add(zp.cast(dtypes::float32)), dtypes::uint8);
  return V{y, scale, zp};
}

// x widened to int32 with its zero point (scalar, or per row/channel along `axis`) taken off.
Tensor centered(NodeContext& n, const Tensor& x, size_t zp_input, int64_t axis, const char* what) {
  if (x.dtype() != dtypes::uint8 && x.dtype() != dtypes::int8)
    n.unsupported(std::string(what) + " of type " + x.dtype().str() + " (uint8 and int8 are)");
  Tensor v = x.cast(dtypes::int32);
  if (!n.has_input(zp_input)) return v;
  Tensor zp = n.input(zp_input);
  if (zp.dtype() != x.dtype()) n.invalid(std::string(what) + "'s zero point must have its type");
  return v.sub(along(n, zp, x, axis, what).cast(dtypes::int32));
}

// True if input i is absent or a constant of zeros.
bool zero_or_absent(NodeContext& n, size_t i) {
  if (!n.has_input(i)) return true;
  if (!n.input_is_const(i)) return false;
  for (double v : n.const_floats(i))
    if (v != 0) return false;
  return true;
}

// a (uint8, ..., M, K) times a constant int8 b (K, N) on the dot-product kernels, zero points
// (inputs a_zp and b_zp, if present) applied after the product; nullopt if the operands are not
// of that kind.
std::optional<Tensor> dot_matmul(NodeContext& n, const Tensor& a, const Tensor& b, size_t a_zp,
                                 size_t b_zp) {
  if (a.dtype() != dtypes::uint8 || b.dtype() != dtypes::int8 || a.ndim() < 2 || b.ndim() != 2 ||
      b.dim(0) % kDotGroup != 0 || a.dim(-1) != b.dim(0) || !n.is_const(b))
    return std::nullopt;
  if (n.has_input(a_zp) && n.input(a_zp).dtype() != a.dtype())
    n.invalid("A's zero point must have its type");
  if (n.has_input(b_zp) && n.input(b_zp).dtype() != b.dtype())
    n.invalid("B's zero point must have its type");
  Tensor acc = matmul_u8s8(a, b);
  const Tensor i32_b = b.cast(dtypes::int32);
  std::optional<Tensor> za, zb;
  if (!zero_or_absent(n, a_zp)) {
    za = along(n, n.input(a_zp), a, -2, "a_zero_point").cast(dtypes::int32);
    acc = acc.sub(za->mul(i32_b.sum({0})));  // za · Σ_k B, per column (folded) and row of za
  }
  if (!zero_or_absent(n, b_zp)) {
    zb = along(n, n.input(b_zp), b, -1, "b_zero_point").cast(dtypes::int32);
    acc = acc.sub(a.cast(dtypes::int32).sum({-1}, true).mul(*zb));  // zb · Σ_k A, per row
    if (za) acc = acc.add(za->mul(*zb).mul(static_cast<double>(b.dim(0))));
  }
  return acc;
}

V matmul_integer(NodeContext& n) {
  Tensor a = n.input(0), b = n.input(1);
  if (auto dot = dot_matmul(n, a, b, 2, 3)) return V{*dot};
  // a's zero point: scalar or per row (axis -2); b's: scalar or per column (axis -1).
  Tensor ac = centered(n, a, 2, a.ndim() >= 2 ? -2 : -1, "A");
  Tensor bc = centered(n, b, 3, -1, "B");
  return V{matmul(ac, bc)};
}

// uint8 x and a constant int8 w (zero point 0), groups 1, 2-D, x's zero point one constant:
// the integer convolution on the dot-product kernels; nullopt otherwise.
std::optional<Tensor> dot_conv(NodeContext& n, const Tensor& x, const Tensor& w, size_t x_zp,
                               size_t w_zp, const ConvParams& p) {
  if (x.dtype() != dtypes::uint8 || w.dtype() != dtypes::int8 || x.ndim() != 4 || w.ndim() != 4 ||
      p.groups != 1 || x.dim(1) != w.dim(1) || !n.is_const(w) || !zero_or_absent(n, w_zp))
    return std::nullopt;
  int64_t zx = 0;
  if (n.has_input(x_zp)) {
    if (!n.input_is_const(x_zp) || n.input(x_zp).dtype() != x.dtype()) return std::nullopt;
    std::vector<int64_t> z = n.const_ints(x_zp);
    if (z.empty() || std::any_of(z.begin(), z.end(), [&](int64_t v) { return v != z[0]; }))
      return std::nullopt;
    zx = z[0];
  }
  return conv_u8s8(x, zx, w, p);
}

V conv_integer(NodeContext& n) {
  Tensor x = n.input(0), w = n.input(1);
  ConvParams p = conv_params(n, x, w);
  if (auto dot = dot_conv(n, x, w, 2, 3, p)) return V{*dot};
  return V{conv(centered(n, x, 2, 1, "x"), centered(n, w, 3, 0, "w"), nullptr, p)};
}

// acc (int32) × (a_scale × b_scale / y_scale), + y_zero_point, saturated to y's type.
Tensor requantize(NodeContext& n, const Tensor& acc, const Tensor& in_scale, const Tensor& w_scale,
                  size_t y_scale, size_t y_zp) {
  Tensor ys = n.input(y_scale).reshape({});
  Tensor zp = n.input(y_zp);
  Tensor r = acc.cast(dtypes::float32).mul(in_scale.mul(w_scale).div(ys)).round();
  r = r.add(zp.reshape({}).cast(dtypes::float32));
  return clamp_to(r, zp.dtype());
}

V qlinear_matmul(NodeContext& n) {
  Tensor a = n.input(0), b = n.input(3);
  std::optional<Tensor> dot = dot_matmul(n, a, b, 2, 5);
  Tensor acc =
      dot ? *dot
          : matmul(centered(n, a, 2, a.ndim() >= 2 ? -2 : -1, "a"), centered(n, b, 5, -1, "b"));
  // a_scale per row of the result (axis -2), b_scale per column (axis -1).
  Tensor as = along(n, n.input(1), acc, -2, "a_scale");
  Tensor bs = along(n, n.input(4), acc, -1, "b_scale");
  return V{requantize(n, acc, as, bs, 6, 7)};
}

V qlinear_conv(NodeContext& n) {
  Tensor x = n.input(0), w = n.input(3);
  ConvParams p = conv_params(n, x, w);
  std::optional<Tensor> dot = dot_conv(n, x, w, 2, 5, p);
  Tensor acc = dot ? *dot : conv(centered(n, x, 2, 1, "x"), centered(n, w, 5, 0, "w"), nullptr, p);
  if (n.has_input(8)) {
    Tensor bias = n.input(8);
    if (bias.dtype() != dtypes::int32) n.invalid("B must be int32");
    Shape bs(static_cast<size_t>(acc.ndim()), 1);
    bs[1] = acc.dim(1);
    acc = acc.add(bias.reshape(bs));
  }
  Tensor xs = n.input(1).reshape({});
  // w_scale: per tensor or per output channel (axis 1 of the accumulator).
  Tensor ws = along(n, n.input(4), acc, 1, "w_scale");
  return V{requantize(n, acc, xs, ws, 6, 7)};
}

// A float tensor built as DequantizeLinear builds it: float(int32(q) [+ z]) × s, z the negated
// zero point. Operands as they are in the graph (broadcast), not checked for constness.
struct Dequantized {
  Tensor q, neg_zp, scale;  // neg_zp invalid when there is none
};

std::optional<Dequantized> as_dequantized(const Tensor& t) {
  const UOp* u = t.uop();
  Graph* g = t.graph();
  if (u->op != Op::MUL || u->dtype != dtypes::float32) return std::nullopt;
  // The folded form of DequantizeLinear(QuantizeLinear(..)): (v [+ z]) × s, v the clamped float.
  for (size_t i = 0; i < 2; ++i) {
    const UOp *a = u->src[i], *s = u->src[1 - i];
    const UOp* v = a->op == Op::ADD ? a->src[0] : a;
    const UOp* z = a->op == Op::ADD ? a->src[1] : nullptr;
    for (int swap = 0; swap < (z ? 2 : 1); ++swap) {
      if (swap) std::swap(v, z);
      if (v->op != Op::MIN || v->dtype != dtypes::float32) continue;
      for (DType t : {dtypes::uint8, dtypes::int8}) {
        Tensor q = Tensor(g, v).cast(t);
        if (quantized_float(q).valid())
          return Dequantized{q, z ? Tensor(g, z) : Tensor(), Tensor(g, s)};
      }
    }
  }
  auto widened = [](const UOp* x) {
    return x->op == Op::CAST && x->dtype == dtypes::int32 &&
           (x->src[0]->dtype == dtypes::uint8 || x->src[0]->dtype == dtypes::int8);
  };
  for (size_t i = 0; i < 2; ++i) {
    const UOp *a = u->src[i], *s = u->src[1 - i];
    if (a->op != Op::CAST || a->src[0]->dtype != dtypes::int32) continue;
    const UOp* b = a->src[0];
    if (widened(b)) return Dequantized{Tensor(g, b->src[0]), Tensor(), Tensor(g, s)};
    if (b->op != Op::ADD) continue;
    for (size_t j = 0; j < 2; ++j)
      if (widened(b->src[j]))
        return Dequantized{Tensor(g, b->src[j]->src[0]), Tensor(g, b->src[1 - j]), Tensor(g, s)};
  }
  return std::nullopt;
}

// The one value of a constant tensor, or nullopt if its elements differ.
std::optional<double> one_value(NodeContext& n, const Tensor& t) {
  const NDArray& a = n.eval_const(t);
  if (a.numel() == 0) return std::nullopt;
  double v = a.get(0).as_double();
  for (int64_t i = 1; i < a.numel(); ++i)
    if (a.get(i).as_double() != v) return std::nullopt;
  return v;
}

// Per output channel (axis 0) values of a constant tensor of w's shape, or nullopt if it varies
// along another axis.
std::optional<std::vector<double>> per_channel(NodeContext& n, const Tensor& t) {
  const NDArray& a = n.eval_const(t);
  int64_t co = t.dim(0), inner = a.numel() / co;
  std::vector<double> v(static_cast<size_t>(co));
  for (int64_t c = 0; c < co; ++c) {
    v[static_cast<size_t>(c)] = a.get(c * inner).as_double();
    for (int64_t i = 1; i < inner; ++i)
      if (a.get(c * inner + i).as_double() != v[static_cast<size_t>(c)]) return std::nullopt;
  }
  return v;
}

// int8 activations for the uint8 x int8 kernels: q + 128 (q's bits xor 0x80), its zero point
// moved by as much (the same differences q - zp).
void activation_as_uint8(Tensor& q, double& neg_zp) {
  if (q.dtype() != dtypes::int8) return;
  Tensor bits = q.bitcast(dtypes::uint8);
  q = bits.binary(Op::XOR, bits.like(128));
  neg_zp -= 128;
}

bool activation_type(DType d) {
  return d == dtypes::uint8 || d == dtypes::int8;
}

// A dequantized activation's one scale and (negated) zero point, if both are constants.
struct TensorQuant {
  double scale = 1, neg_zp = 0;
};
std::optional<TensorQuant> tensor_quant(NodeContext& n, const Dequantized& d) {
  if (!n.is_const(d.scale)) return std::nullopt;
  std::optional<double> s = one_value(n, d.scale);
  if (!s) return std::nullopt;
  TensorQuant q{*s, 0};
  if (d.neg_zp.valid()) {
    std::optional<double> z = n.is_const(d.neg_zp) ? one_value(n, d.neg_zp) : std::nullopt;
    if (!z) return std::nullopt;
    q.neg_zp = *z;
  }
  return q;
}

// The float32 product of the activation's scale and each output channel's weight scale (the
// factor that turns an integer accumulator into the float the QDQ graph computes).
std::vector<double> combined_scale(double activation, const std::vector<double>& weight) {
  std::vector<double> out;
  for (double w : weight) out.push_back(static_cast<float>(activation) * static_cast<float>(w));
  return out;
}

// A dequantized weight: constant int8 with zero point 0 (symmetric, as quantizers emit them).
bool symmetric_int8_weight(NodeContext& n, const Dequantized& d) {
  if (d.q.dtype() != dtypes::int8 || !n.is_const(d.q) || !n.is_const(d.scale)) return false;
  if (!d.neg_zp.valid()) return true;
  std::optional<double> z = n.is_const(d.neg_zp) ? one_value(n, d.neg_zp) : std::nullopt;
  return z && *z == 0;
}

}  // namespace

std::optional<Tensor> quantized_conv(NodeContext& n, const Tensor& x, const Tensor& w,
                                     const Tensor* bias, const ConvParams& p) {
  if (p.groups != 1 || x.ndim() != 4 || w.ndim() != 4) return std::nullopt;
  auto dx = as_dequantized(x), dw = as_dequantized(w);
  if (!dx || !dw || !activation_type(dx->q.dtype()) || n.is_const(dx->q) ||
      !symmetric_int8_weight(n, *dw))
    return std::nullopt;
  std::optional<TensorQuant> qx = tensor_quant(n, *dx);
  std::optional<std::vector<double>> sw = per_channel(n, dw->scale);
  if (!qx || !sw) return std::nullopt;
  activation_as_uint8(dx->q, qx->neg_zp);
  Tensor acc = conv_u8s8(dx->q, static_cast<int64_t>(-qx->neg_zp), dw->q, p);
  int64_t co = w.dim(0);
  Tensor y = acc.cast(dtypes::float32)
                 .mul(n.constant(
                     make_array(dtypes::float32, {1, co, 1, 1}, combined_scale(qx->scale, *sw))));
  if (bias) y = y.add(bias->reshape({1, co, 1, 1}));
  return y;
}

std::optional<Tensor> quantized_matmul(NodeContext& n, const Tensor& a, const Tensor& b,
                                       bool trans_b) {
  if (a.ndim() < 2 || b.ndim() != 2) return std::nullopt;
  auto da = as_dequantized(a), db = as_dequantized(b);
  if (!da || !db || !activation_type(da->q.dtype()) || n.is_const(da->q) ||
      !symmetric_int8_weight(n, *db))
    return std::nullopt;
  Tensor wq = trans_b ? db->q.transpose() : db->q;  // (K, N)
  int64_t k = wq.dim(0), cols = wq.dim(1);
  if (k % kDotGroup != 0 || a.dim(-1) != k) return std::nullopt;
  std::optional<TensorQuant> qa = tensor_quant(n, *da);
  // The weight's scale per output column: constant along K.
  Tensor sw_kn = trans_b ? db->scale.transpose() : db->scale;
  std::optional<std::vector<double>> sw = per_channel(n, sw_kn.transpose());
  if (!qa || !sw) return std::nullopt;
  activation_as_uint8(da->q, qa->neg_zp);
  Tensor acc = matmul_u8s8(da->q, wq);
  if (qa->neg_zp != 0) acc = acc.add(wq.cast(dtypes::int32).sum({0}).mul(qa->neg_zp));
  return acc.cast(dtypes::float32)
      .mul(n.constant(make_array(dtypes::float32, {cols}, combined_scale(qa->scale, *sw))));
}

std::optional<Tensor> quantized_max_pool(NodeContext& n, const Tensor& x, const PoolParams& p) {
  // A ReLU between (a quantized convolution's output, then ReLU, then MaxPool) commutes too.
  const UOp* u = x.uop();
  bool relu = false;
  if (u->op == Op::MAX && u->dtype == dtypes::float32 && splat_value(u->src[1]) == 0.0) {
    relu = true;
    u = u->src[0];
  }
  auto dx = as_dequantized(Tensor(x.graph(), u));
  if (!dx || !activation_type(dx->q.dtype()) || n.is_const(dx->q)) return std::nullopt;
  std::optional<TensorQuant> q = tensor_quant(n, *dx);
  if (!q || !(q->scale > 0) || dx->scale.dtype() != dtypes::float32) return std::nullopt;
  // Dequantizing is increasing (scale > 0), so it commutes with max; every window holds an
  // input element, so padding with the type's lowest (0, -128) is padding with -inf.
  Tensor v = max_pool(dx->q, p).cast(dtypes::int32);
  if (q->neg_zp != 0) v = v.add(q->neg_zp);
  Tensor y = v.cast(dtypes::float32).mul(q->scale);
  return relu ? y.maximum(0.0) : y;
}

void register_quantize_ops(OpRegistry& r) {
  r["QuantizeLinear"] = quantize_linear;
  r["DequantizeLinear"] = dequantize_linear;
  r["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  r["MatMulInteger"] = matmul_integer;
  r["ConvInteger"] = conv_integer;
  r["QLinearMatMul"] = qlinear_matmul;
  r["QLinearConv"] = qlinear_conv;
}

}  // namespace kiln::onnxfe
