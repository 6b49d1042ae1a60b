#include "compiler/ir/const_eval.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/support/error.h"
#include "compiler/support/half.h"

namespace kiln {

namespace {

// Wraps an integer to the width and signedness of `d`.
int64_t wrap_int(DType d, uint64_t v) {
  switch (d.scalar) {
    case ScalarKind::Bool:
      return v != 0;
    case ScalarKind::Int8:
      return static_cast<int8_t>(v);
    case ScalarKind::Int16:
      return static_cast<int16_t>(v);
    case ScalarKind::Int32:
      return static_cast<int32_t>(v);
    case ScalarKind::UInt8:
      return static_cast<uint8_t>(v);
    case ScalarKind::UInt16:
      return static_cast<uint16_t>(v);
    case ScalarKind::UInt32:
      return static_cast<uint32_t>(v);
    default:
      return static_cast<int64_t>(v);  // int64, uint64 (bit pattern), index
  }
}

double round_float(DType d, double v) {
  switch (d.scalar) {
    case ScalarKind::Float32:
      return static_cast<double>(static_cast<float>(v));
    case ScalarKind::Float16:
      return half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
    case ScalarKind::BFloat16:
      return bfloat16_bits_to_float(float_to_bfloat16_bits(static_cast<float>(v)));
    default:
      return v;
  }
}

bool is_single(DType d) {
  return d.scalar != ScalarKind::Float64;
}

double fmax_kiln(double a, double b) {
  return a < b ? b : a;
}
double fmin_kiln(double a, double b) {
  return b < a ? b : a;
}

double eval_float_unary(Op op, DType d, double x) {
  // float32 and narrower compute in float, as the generated code does.
  if (is_single(d)) {
    float f = static_cast<float>(x);
    switch (op) {
      case Op::NEG:
        return -f;
      case Op::RECIP:
        return 1.0f / f;
      case Op::SQRT:
        return std::sqrt(f);
      case Op::EXP:
        return std::exp(f);
      case Op::EXP2:
        return std::exp2(f);
      case Op::LOG:
        return std::log(f);
      case Op::LOG2:
        return std::log2(f);
      case Op::SIN:
        return std::sin(f);
      case Op::COS:
        return std::cos(f);
      case Op::TANH:
        return std::tanh(f);
      case Op::ERF:
        return std::erf(f);
      case Op::SIGMOID:
        return 1.0f / (1.0f + std::exp(-f));
      case Op::ABS:
        return std::fabs(f);
      case Op::TRUNC:
        return std::trunc(f);
      case Op::FLOOR:
        return std::floor(f);
      case Op::CEIL:
        return std::ceil(f);
      case Op::ROUND:
        return std::nearbyint(f);
      default:
        break;
    }
  } else {
    switch (op) {
      case Op::NEG:
        return -x;
      case Op::RECIP:
        return 1.0 / x;
      case Op::SQRT:
        return std::sqrt(x);
      case Op::EXP:
        return std::exp(x);
      case Op::EXP2:
        return std::exp2(x);
      case Op::LOG:
        return std::log(x);
      case Op::LOG2:
        return std::log2(x);
      case Op::SIN:
        return std::sin(x);
      case Op::COS:
        return std::cos(x);
      case Op::TANH:
        return std::tanh(x);
      case Op::ERF:
        return std::erf(x);
      case Op::SIGMOID:
        return 1.0 / (1.0 + std::exp(-x));
      case Op::ABS:
        return std::fabs(x);
      case Op::TRUNC:
        return std::trunc(x);
      case Op::FLOOR:
        return std::floor(x);
      case Op::CEIL:
        return std::ceil(x);
      case Op::ROUND:
        return std::nearbyint(x);
      default:
        break;
    }
  }
  throw InternalError(str_cat("eval_alu: ", op_name(op), " is not a float unary op"));
}

ConstValue eval_float(Op op, DType d, std::span<const ConstValue> a) {
  auto F = [&](double v) { return ConstValue::of_float(round_float(d, v)); };
  auto B = [](bool v) { return ConstValue::of_int(v ? 1 : 0); };
  if (alu_arity(op) == 1) return F(eval_float_unary(op, d, a[0].as_double()));
  double x = a[0].as_double(), y = a.size() > 1 ? a[1].as_double() : 0.0;
  bool single = is_single(d);
  float xf = static_cast<float>(x), yf = static_cast<float>(y);
  switch (op) {
    case Op::ADD:
      return F(single ? double(xf + yf) : x + y);
    case Op::MUL:
      return F(single ? double(xf * yf) : x * y);
    case Op::FDIV:
      return F(single ? double(xf / yf) : x / y);
    case Op::MOD:
      return F(single ? double(std::fmod(xf, yf)) : std::fmod(x, y));
    case Op::MAX:
      return F(fmax_kiln(x, y));
    case Op::MIN:
      return F(fmin_kiln(x, y));
    case Op::POW:
      return F(single ? double(std::pow(xf, yf)) : std::pow(x, y));
    case Op::CMPLT:
      return B(x < y);
    case Op::CMPEQ:
      return B(x == y);
    case Op::CMPNE:
      return B(x != y);
    case Op::MULACC: {
      double z = a[2].as_double();
      return F(single ? double(std::fma(xf, yf, static_cast<float>(z))) : std::fma(x, y, z));
    }
    default:
      break;
  }
  throw InternalError(str_cat("eval_alu: ", op_name(op), " is not defined on ", d.str()));
}

ConstValue eval_int(Op op, DType d, std::span<const ConstValue> a) {
  auto I = [&](uint64_t v) { return ConstValue::of_int(wrap_int(d, v)); };
  auto B = [](bool v) { return ConstValue::of_int(v ? 1 : 0); };
  const bool uns = d.is_unsigned();
  // Operands in their dtype's representation (a caller may pass e.g. -2 for a uint32).
  const int64_t x = wrap_int(d, static_cast<uint64_t>(a[0].i));
  const int64_t y = a.size() > 1 ? wrap_int(d, static_cast<uint64_t>(a[1].i)) : 0;
  const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  switch (op) {
    case Op::NEG:
      return I(0 - ux);
    case Op::ABS:
      return I(x < 0 && !uns ? 0 - ux : ux);
    case Op::ADD:
      return I(ux + uy);
    case Op::MUL:
      return I(ux * uy);
    case Op::IDIV:
      if (y == 0) return I(0);
      if (uns) return I(ux / uy);
      if (y == -1) return I(0 - ux);  // INT_MIN / -1 wraps
      return I(static_cast<uint64_t>(x / y));
    case Op::MOD:
      if (y == 0) return I(0);
      if (uns) return I(ux % uy);
      if (y == -1) return I(0);
      return I(static_cast<uint64_t>(x % y));
    case Op::MAX:
      return I(uns ? (ux < uy ? uy : ux) : static_cast<uint64_t>(x < y ? y : x));
    case Op::MIN:
      return I(uns ? (uy < ux ? uy : ux) : static_cast<uint64_t>(y < x ? y : x));
    case Op::CMPLT:
      return B(uns ? ux < uy : x < y);
    case Op::CMPEQ:
      return B(x == y);
    case Op::CMPNE:
      return B(x != y);
    case Op::AND:
      return I(ux & uy);
    case Op::OR:
      return I(ux | uy);
    case Op::XOR:
      return I(ux ^ uy);
    case Op::SHL: {
      if (y < 0 || y >= d.bits()) return I(0);
      return I(ux << y);
    }
    case Op::SHR: {
      int bits = d.bits();
      if (uns) {
        if (y < 0 || y >= bits) return I(0);
        uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
        return I((ux & mask) >> y);
      }
      if (y < 0 || y >= bits) return I(x < 0 ? ~0ull : 0);
      return I(static_cast<uint64_t>(x >> y));
    }
    case Op::MULACC:
      return I(ux * uy + static_cast<uint64_t>(a[2].i));
    case Op::POW: {
      // Integer power by squaring with wrap-around; negative exponents give 0 except for |x| == 1.
      if (y < 0) return I(x == 1 ? 1 : x == -1 ? ((y & 1) ? ~0ull : 1) : 0);
      uint64_t r = 1, b = ux;
      for (uint64_t e = uy; e; e >>= 1, b *= b)
        if (e & 1) r *= b;
      return I(r);
    }
    default:
      break;
  }
  throw InternalError(str_cat("eval_alu: ", op_name(op), " is not defined on ", d.str()));
}

ConstValue eval_bool(Op op, std::span<const ConstValue> a) {
  auto B = [](bool v) { return ConstValue::of_int(v ? 1 : 0); };
  bool x = a[0].i != 0, y = a.size() > 1 ? a[1].i != 0 : false;
  switch (op) {
    case Op::AND:
    case Op::MUL:
    case Op::MIN:
      return B(x && y);
    case Op::OR:
    case Op::ADD:
    case Op::MAX:
      return B(x || y);
    case Op::XOR:
    case Op::CMPNE:
      return B(x != y);
    case Op::CMPEQ:
      return B(x == y);
    case Op::CMPLT:
      return B(!x && y);
    default:
      break;
  }
  throw InternalError(str_cat("eval_alu: ", op_name(op), " is not defined on bool"));
}

}  // namespace

ConstValue normalize_const(DType d, ConstValue v) {
  if (v.is_invalid()) return v;
  if (d.is_float()) return ConstValue::of_float(round_float(d, v.as_double()));
  return ConstValue::of_int(wrap_int(d, static_cast<uint64_t>(v.as_int())));
}

ConstValue eval_alu(Op op, DType d, std::span<const ConstValue> args) {
  KILN_CHECK(static_cast<int>(args.size()) == alu_arity(op), op_name(op), " takes ", alu_arity(op),
             " operands, got ", args.size());
  if (op == Op::WHERE) return args[0].i != 0 ? args[1] : args[2];
  if (d.is_float()) return eval_float(op, d, args);
  if (d.scalar == ScalarKind::Bool) return eval_bool(op, args);
  return eval_int(op, d, args);
}

ConstValue eval_cast(DType from, DType to, ConstValue v) {
  if (to.is_bool()) return ConstValue::of_int(from.is_float() ? v.f != 0.0 : v.i != 0);
  if (to.is_float()) {
    double x;
    if (from.is_float())
      x = v.f;
    else if (from.scalar == ScalarKind::UInt64)
      x = static_cast<double>(static_cast<uint64_t>(v.i));
    else
      x = static_cast<double>(v.i);
    return ConstValue::of_float(round_float(to, x));
  }
  if (from.is_float()) {
    // Saturating float -> int, NaN -> 0 (llvm.fpto[su]i.sat).
    double x = std::trunc(v.f);
    if (std::isnan(x)) return ConstValue::of_int(0);
    if (to.scalar == ScalarKind::UInt64) {
      if (x <= 0) return ConstValue::of_int(0);
      if (x >= 18446744073709551616.0) return ConstValue::of_int(-1);
      return ConstValue::of_int(static_cast<int64_t>(static_cast<uint64_t>(x)));
    }
    double lo = static_cast<double>(dtype_min(to)), hi = static_cast<double>(dtype_max(to));
    if (x <= lo) return ConstValue::of_int(dtype_min(to));
    if (x >= hi) return ConstValue::of_int(dtype_max(to));
    return ConstValue::of_int(static_cast<int64_t>(x));
  }
  // int -> int: reinterpret the (sign- or zero-extended) source bits in the target width.
  return ConstValue::of_int(wrap_int(to, static_cast<uint64_t>(v.i)));
}

ConstValue reduce_identity(Op op, DType d) {
  bool f = d.is_float();
  switch (op) {
    case Op::ADD:
      return f ? ConstValue::of_float(0.0) : ConstValue::of_int(0);
    case Op::MUL:
      return f ? ConstValue::of_float(1.0) : ConstValue::of_int(1);
    case Op::MAX:
      return f ? ConstValue::of_float(-INFINITY) : ConstValue::of_int(dtype_min(d));
    case Op::MIN:
      if (f) return ConstValue::of_float(INFINITY);
      return ConstValue::of_int(d.scalar == ScalarKind::UInt64 ? -1 : dtype_max(d));
    default:
      break;
  }
  throw InternalError(str_cat("reduce_identity: ", op_name(op), " is not a reduction"));
}

ConstValue eval_bitcast(DType from, DType to, ConstValue v) {
  KILN_CHECK(from.itemsize() == to.itemsize(), "bitcast between sizes ", from.str(), " -> ",
             to.str());
  uint64_t bits = 0;
  switch (from.scalar) {
    case ScalarKind::Float32:
      bits = std::bit_cast<uint32_t>(static_cast<float>(v.f));
      break;
    case ScalarKind::Float64:
      bits = std::bit_cast<uint64_t>(v.f);
      break;
    case ScalarKind::Float16:
      bits = float_to_half_bits(static_cast<float>(v.f));
      break;
    case ScalarKind::BFloat16:
      bits = float_to_bfloat16_bits(static_cast<float>(v.f));
      break;
    default:
      bits = static_cast<uint64_t>(v.i);
      break;
  }
  int nbits = from.itemsize() * 8;
  if (nbits < 64) bits &= (1ull << nbits) - 1;
  switch (to.scalar) {
    case ScalarKind::Float32:
      return ConstValue::of_float(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    case ScalarKind::Float64:
      return ConstValue::of_float(std::bit_cast<double>(bits));
    case ScalarKind::Float16:
      return ConstValue::of_float(half_bits_to_float(static_cast<uint16_t>(bits)));
    case ScalarKind::BFloat16:
      return ConstValue::of_float(bfloat16_bits_to_float(static_cast<uint16_t>(bits)));
    default:
      return ConstValue::of_int(wrap_int(to, bits));
  }
}

}  // namespace kiln
