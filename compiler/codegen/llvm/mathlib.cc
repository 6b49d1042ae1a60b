#include "compiler/codegen/llvm/mathlib.h"

#include <llvm/IR/Module.h>

#include <cmath>
#include <vector>

#include "compiler/codegen/llvm/math_builder.h"
#include "compiler/codegen/llvm/mathlib_coeffs.h"
#include "compiler/support/error.h"

namespace kiln::mathlib {

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLog2e = 1.44269504088896340736;
// ln 2 split for float Cody-Waite: kLn2HiF has 16 significant bits, so k * kLn2HiF is exact
// for |k| < 256.
constexpr double kLn2HiF = 0.693145751953125;
constexpr double kLn2LoF = kLn2 - kLn2HiF;

std::vector<double> taylor_exp(int degree, double scale) {
  std::vector<double> c;
  double v = 1.0;
  for (int n = 0; n <= degree; ++n) {
    c.push_back(v);
    v *= scale / (n + 1);
  }
  return c;
}

// Polynomial coefficients rounded to float, so that evaluation in float uses exactly them.
std::vector<double> as_float(std::span<const double> c) {
  std::vector<double> r;
  for (double v : c) r.push_back(static_cast<double>(static_cast<float>(v)));
  return r;
}

llvm::Value* exp2_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  llvm::Value* xc = m.sel(b.CreateFCmpOGT(x, m.f(129)), m.f(129),
                          m.sel(b.CreateFCmpOLT(x, m.f(-151)), m.f(-151), x));
  llvm::Value* kf = m.round_small(xc);
  llvm::Value* r = m.sub(xc, kf);
  static const std::vector<double> c = as_float(taylor_exp(7, kLn2));
  llvm::Value* p = m.poly(r, c);
  llvm::Value* res = m.ldexp(p, m.to_int(kf));
  res = m.sel(b.CreateFCmpOGE(x, m.f(128)), m.inf(), res);
  return m.sel(b.CreateFCmpOLT(x, m.f(-151)), m.f(0), res);
}

// log(x) = e*ln2 + log1p(f) with x = 2^e (1 + f), 1+f in [sqrt(1/2), sqrt(2)).
// Returns {e, log1p(f)}; special values are handled by the callers.
std::pair<llvm::Value*, llvm::Value*> log_parts(MathBuilder& m, llvm::Value* x) {
  llvm::IRBuilder<>& b = m.b;
  llvm::Value* sub = b.CreateFCmpOLT(x, m.f(1.17549435082228750797e-38));  // subnormal (or 0)
  llvm::Value* xs = m.sel(sub, m.mul(x, m.f(8388608.0)), x);               // * 2^23
  llvm::Value* bits = m.to_int_bits(xs);
  llvm::Value* e = b.CreateSub(b.CreateLShr(bits, m.i(23)), m.i(127));
  e = b.CreateSub(e, m.sel(sub, m.i(23), m.i(0)));
  llvm::Value* mant =
      m.from_int_bits(b.CreateOr(b.CreateAnd(bits, m.i(0x7fffff)), m.i(0x3f800000)));
  llvm::Value* big = b.CreateFCmpOGT(mant, m.f(1.41421356237309504880));
  mant = m.sel(big, m.mul(mant, m.f(0.5)), mant);
  e = m.sel(big, b.CreateAdd(e, m.i(1)), e);
  llvm::Value* f = m.sub(mant, m.f(1.0));
  llvm::Value* s = m.div(f, m.add(m.f(2.0), f));
  llvm::Value* z = m.mul(s, s);
  static const std::vector<double> series =
      as_float(std::vector<double>{2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11});
  llvm::Value* R = m.mul(z, m.poly(z, series));
  llvm::Value* l = m.sub(f, m.mul(s, m.sub(f, R)));  // f - s*(f - R) = 2s + 2s^3/3 + ...
  return {b.CreateSIToFP(e, m.fty), l};
}

llvm::Value* log_specials(MathBuilder& m, llvm::Value* x, llvm::Value* res) {
  llvm::IRBuilder<>& b = m.b;
  res = m.sel(b.CreateFCmpOEQ(x, m.f(0)), m.f(-INFINITY), res);
  res = m.sel(b.CreateFCmpOEQ(x, m.inf()), m.inf(), res);
  return m.sel(b.CreateFCmpULT(x, m.f(0)), m.nan(), res);  // negative or NaN
}

llvm::Value* log_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  auto [e, l] = log_parts(m, x);
  llvm::Value* res = m.add(m.fma(e, m.f(kLn2HiF), l), m.mul(e, m.f(static_cast<float>(kLn2LoF))));
  return log_specials(m, x, res);
}

llvm::Value* log2_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  auto [e, l] = log_parts(m, x);
  // e + l*log2(e) in double: the sum may cancel (x near 2^k * sqrt(1/2)).
  MathBuilder d(b, m.with_elem(b.getDoubleTy()));
  llvm::Value* r = d.fma(b.CreateFPExt(l, d.fty), d.f(kLog2e), b.CreateFPExt(e, d.fty));
  return log_specials(m, x, b.CreateFPTrunc(r, m.fty));
}

llvm::Value* tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  llvm::Value* a = m.fabs(x);
  static const std::vector<double> c = as_float(kTanhOdd);
  llvm::Value* small = m.mul(x, m.poly(m.mul(x, x), c));
  llvm::Value* e = exp_f32(b, m.mul(a, m.f(2.0)));
  llvm::Value* big = m.sub(m.f(1.0), m.div(m.f(2.0), m.add(e, m.f(1.0))));
  big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  return m.sel(b.CreateFCmpOLT(a, m.f(0.625)), small, big);
}

llvm::Value* erf_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  llvm::Value* a = m.fabs(x);
  static const std::vector<double> odd = as_float(kErfOdd);
  static const std::vector<double> scaled = as_float(kErfcScaled);
  llvm::Value* small = m.mul(x, m.poly(m.mul(x, x), odd));
  llvm::Value* erfc =
      m.mul(exp_f32(b, m.mul(m.mul(a, a), m.f(-1.0))), m.poly(m.sub(a, m.f(2.5)), scaled));
  llvm::Value* big = m.sel(b.CreateFCmpOGE(a, m.f(3.92)), m.f(1.0), m.sub(m.f(1.0), erfc));
  big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  return m.sel(b.CreateFCmpOLT(a, m.f(1.0)), small, big);
}

llvm::Value* sigmoid_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  llvm::Value* e = exp_f32(b, m.mul(m.fabs(x), m.f(-1.0)));
  llvm::Value* d = m.add(m.f(1.0), e);
  return m.sel(b.CreateFCmpOGE(x, m.f(0)), m.div(m.f(1.0), d), m.div(e, d));
}

// ---- double-precision helpers for pow

// log2(a) for a >= 0 (0 -> -inf, inf -> inf, NaN -> NaN), to about 1e-16 relative.
llvm::Value* log2_f64(MathBuilder& d, llvm::Value* a) {
  llvm::IRBuilder<>& b = d.b;
  llvm::Value* sub = b.CreateFCmpOLT(a, d.f(2.2250738585072014e-308));
  llvm::Value* as = d.sel(sub, d.mul(a, d.f(4503599627370496.0)), a);  // * 2^52
  llvm::Value* bits = d.to_int_bits(as);
  llvm::Value* e = b.CreateSub(b.CreateLShr(bits, d.i(52)), d.i(1023));
  e = b.CreateSub(e, d.sel(sub, d.i(52), d.i(0)));
  llvm::Value* mant = d.from_int_bits(
      b.CreateOr(b.CreateAnd(bits, d.i(0xfffffffffffffLL)), d.i(0x3ff0000000000000LL)));
  llvm::Value* big = b.CreateFCmpOGT(mant, d.f(1.41421356237309504880));
  mant = d.sel(big, d.mul(mant, d.f(0.5)), mant);
  e = d.sel(big, b.CreateAdd(e, d.i(1)), e);
  llvm::Value* f = d.sub(mant, d.f(1.0));
  llvm::Value* s = d.div(f, d.add(d.f(2.0), f));
  llvm::Value* z = d.mul(s, s);
  std::vector<double> series;
  for (int k = 1; k <= 11; ++k) series.push_back(2.0 / (2 * k + 1));
  llvm::Value* R = d.mul(z, d.poly(z, series));
  llvm::Value* l = d.sub(f, d.mul(s, d.sub(f, R)));
  llvm::Value* res = d.fma(l, d.f(kLog2e), b.CreateSIToFP(e, d.fty));
  res = d.sel(b.CreateFCmpOEQ(a, d.f(0)), d.f(-INFINITY), res);
  res = d.sel(b.CreateFCmpOEQ(a, d.inf()), d.inf(), res);
  return d.sel(d.isnan(a), a, res);
}

// 2^t in double precision (overflow to inf and underflow to 0 beyond +-1100).
llvm::Value* exp2_f64(MathBuilder& d, llvm::Value* t) {
  llvm::IRBuilder<>& b = d.b;
  llvm::Value* tc = d.sel(b.CreateFCmpOGT(t, d.f(1100)), d.f(1100),
                          d.sel(b.CreateFCmpOLT(t, d.f(-1100)), d.f(-1100), t));
  llvm::Value* kf = d.round_small(tc);
  llvm::Value* r = d.sub(tc, kf);
  llvm::Value* p = d.poly(r, taylor_exp(14, kLn2));
  llvm::Value* res = d.ldexp(p, d.to_int(kf));
  res = d.sel(b.CreateFCmpOGT(t, d.f(1100)), d.inf(), res);
  return d.sel(b.CreateFCmpOLT(t, d.f(-1100)), d.f(0), res);
}

llvm::Value* pow_f32(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  MathBuilder m(b, x->getType());
  MathBuilder d(b, m.with_elem(b.getDoubleTy()));
  llvm::Value* xd = b.CreateFPExt(x, d.fty);
  llvm::Value* yd = b.CreateFPExt(y, d.fty);
  llvm::Value* ax = d.fabs(xd);
  llvm::Value* r = exp2_f64(d, d.mul(yd, log2_f64(d, ax)));
  llvm::Value* yt = d.trunc(yd);
  llvm::Value* is_int = b.CreateFCmpOEQ(yt, yd);
  llvm::Value* half = d.mul(yd, d.f(0.5));
  llvm::Value* odd = b.CreateAnd(is_int, b.CreateFCmpUNE(d.trunc(half), half));
  llvm::Value* neg = b.CreateICmpSLT(d.to_int_bits(xd), d.i(0));  // sign bit (also -0, -inf)
  llvm::Value* finite_x = b.CreateFCmpOLT(ax, d.inf());
  llvm::Value* finite_y = b.CreateFCmpOLT(d.fabs(yd), d.inf());
  r = d.sel(b.CreateAnd(neg, odd), d.mul(r, d.f(-1.0)), r);
  r = d.sel(b.CreateAnd(b.CreateAnd(b.CreateFCmpOLT(xd, d.f(0)), finite_x),
                        b.CreateAnd(b.CreateNot(is_int), finite_y)),
            d.nan(), r);
  // |x| == 1 with y = +-inf gives 1 (the product inf * 0 would be NaN).
  r = d.sel(b.CreateAnd(b.CreateFCmpOEQ(ax, d.f(1.0)), b.CreateNot(finite_y)), d.f(1.0), r);
  r = d.sel(d.isnan(yd), yd, r);
  r = d.sel(b.CreateFCmpOEQ(yd, d.f(0)), d.f(1.0), r);
  r = d.sel(b.CreateFCmpOEQ(xd, d.f(1.0)), d.f(1.0), r);
  return b.CreateFPTrunc(r, m.fty);
}

std::string type_suffix(llvm::Type* t) {
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t))
    return "v" + std::to_string(v->getNumElements()) + "f32";
  return "f32";
}

}  // namespace

llvm::Value* exp_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  llvm::Value* kf = m.round_small(m.mul(x, m.f(static_cast<float>(kLog2e))));
  llvm::Value* r = m.fma(b.CreateFNeg(kf), m.f(kLn2HiF), x);
  r = m.fma(b.CreateFNeg(kf), m.f(static_cast<float>(kLn2LoF)), r);
  static const std::vector<double> c = as_float(taylor_exp(7, 1.0));
  llvm::Value* p = m.poly(r, c);
  llvm::Value* res = m.ldexp(p, m.to_int(kf));
  res = m.sel(b.CreateFCmpOGT(x, m.f(88.72283172607421875)), m.inf(), res);
  return m.sel(b.CreateFCmpOLT(x, m.f(-103.97208404541015625)), m.f(0), res);
}

bool provides(Op op) {
  switch (op) {
    case Op::EXP:
    case Op::EXP2:
    case Op::LOG:
    case Op::LOG2:
    case Op::SIN:
    case Op::COS:
    case Op::TANH:
    case Op::ERF:
    case Op::SIGMOID:
    case Op::POW:
      return true;
    default:
      return false;
  }
}

llvm::Value* emit(llvm::IRBuilder<>& b, Op op, llvm::Value* x, llvm::Value* y) {
  llvm::Type* t = x->getType();
  KILN_CHECK(t->getScalarType()->isFloatTy(), "mathlib: ", op_name(op), " wants float32 operands");
  llvm::Module* mod = b.GetInsertBlock()->getModule();
  std::string name = std::string("kiln.") + op_name(op) + "." + type_suffix(t);
  llvm::Function* fn = mod->getFunction(name);
  if (!fn) {
    std::vector<llvm::Type*> params = {t};
    if (op == Op::POW) params.push_back(t);
    fn = llvm::Function::Create(llvm::FunctionType::get(t, params, false),
                                llvm::Function::InternalLinkage, name, mod);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    fn->addFnAttr(llvm::Attribute::InlineHint);
    // sin and cos read the constant table of 2/pi for huge arguments.
    fn->setMemoryEffects(op == Op::SIN || op == Op::COS ? llvm::MemoryEffects::readOnly()
                                                        : llvm::MemoryEffects::none());
    llvm::IRBuilder<> fb(llvm::BasicBlock::Create(mod->getContext(), "entry", fn));
    llvm::Value* a = fn->getArg(0);
    llvm::Value* r = nullptr;
    switch (op) {
      case Op::EXP:
        r = exp_f32(fb, a);
        break;
      case Op::EXP2:
        r = exp2_f32(fb, a);
        break;
      case Op::LOG:
        r = log_f32(fb, a);
        break;
      case Op::LOG2:
        r = log2_f32(fb, a);
        break;
      case Op::SIN:
        r = sincos_f32(fb, a, false);
        break;
      case Op::COS:
        r = sincos_f32(fb, a, true);
        break;
      case Op::TANH:
        r = tanh_f32(fb, a);
        break;
      case Op::ERF:
        r = erf_f32(fb, a);
        break;
      case Op::SIGMOID:
        r = sigmoid_f32(fb, a);
        break;
      case Op::POW:
        r = pow_f32(fb, a, fn->getArg(1));
        break;
      default:
        throw InternalError(str_cat("mathlib: no implementation of ", op_name(op)));
    }
    fb.CreateRet(r);
  }
  std::vector<llvm::Value*> args = {x};
  if (op == Op::POW) args.push_back(y);
  return b.CreateCall(fn, args);
}

}  // namespace kiln::mathlib
