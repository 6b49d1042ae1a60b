#include "compiler/codegen/llvm/mathlib.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <vector>

#include "compiler/codegen/llvm/math_builder.h"
#include "compiler/codegen/llvm/mathlib_coeffs.h"
#include "compiler/codegen/llvm/mathlib_f64.h"
#include "compiler/support/error.h"

namespace kiln::mathlib {

llvm::Value* exp_f32_of(llvm::IRBuilder<>& b, llvm::Value* x, bool nonpositive);

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLog2e = 1.44269504088896340736;
// ln 2 split for float Cody-Waite: kLn2HiF has 16 significant bits, so k * kLn2HiF is exact
// for |k| < 256.
constexpr double kLn2HiF = 0.693145751953125;
constexpr double kLn2LoF = kLn2 - kLn2HiF;

// c[k] * s^k: a polynomial in r turned into one in r / s (exp's fit, evaluated at r ln 2).
std::vector<double> in_units_of(std::span<const double> c, double s) {
  std::vector<double> r;
  double p = 1.0;
  for (double v : c) {
    r.push_back(v * p);
    p *= s;
  }
  return r;
}

// Polynomial coefficients rounded to float, so that evaluation in float uses exactly them.
std::vector<double> as_float(std::span<const double> c) {
  std::vector<double> r;
  for (double v : c) r.push_back(static_cast<double>(static_cast<float>(v)));
  return r;
}

// AVX-512's vscalefps: p * 2^floor(kf) in one instruction, rounded once (a subnormal result
// too, as ldexp's two products round it), in place of ldexp's eight (a split exponent, two
// powers of two built from integer lanes, two products). For float vectors of 16 lanes, or of 8
// and 4 with AVX512VL, and wider ones in such pieces (48 lanes: three), where build_module allows
// it (the module flag kMathlibScalefFlag: 1 = 512-bit, 2 = also 256- and 128-bit); nullptr
// elsewhere.
// The lanes of one vscalefps for values of type t (16, 8 or 4), or 0 where scalef is not used.
unsigned scalef_piece(llvm::IRBuilder<>& b, llvm::Type* t) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
  if (!vt || !vt->getElementType()->isFloatTy()) return 0;
  llvm::Module* mod = b.GetInsertBlock()->getModule();
  auto* flag =
      llvm::mdconst::extract_or_null<llvm::ConstantInt>(mod->getModuleFlag(kMathlibScalefFlag));
  if (!flag) return 0;
  unsigned n = vt->getNumElements();
  if (n % 16 == 0) return 16;
  if (flag->getZExtValue() >= 2 && n % 4 == 0) return n % 8 == 0 ? 8 : 4;
  return 0;
}

// True where build_module turns divisions that allow a reciprocal into AVX-512's 14-bit
// estimate and a Newton step: the modules of AVX-512F targets, which carry the scalef flag.
bool divides_by_estimate(llvm::IRBuilder<>& b) {
  return b.GetInsertBlock()->getModule()->getModuleFlag(kMathlibScalefFlag) != nullptr;
}

llvm::Value* scalef(llvm::IRBuilder<>& b, llvm::Value* p, llvm::Value* kf) {
  unsigned piece = scalef_piece(b, p->getType());
  if (piece == 0) return nullptr;
  auto* vt = llvm::cast<llvm::FixedVectorType>(p->getType());
  unsigned n = vt->getNumElements();
  llvm::Module* mod = b.GetInsertBlock()->getModule();
  llvm::Intrinsic::ID id = piece == 16  ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_512
                           : piece == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256
                                        : llvm::Intrinsic::x86_avx512_mask_scalef_ps_128;
  llvm::Function* fn = llvm::Intrinsic::getDeclaration(mod, id);
  auto* pty = llvm::FixedVectorType::get(vt->getElementType(), piece);
  std::vector<llvm::Value*> parts;
  for (unsigned at = 0; at < n; at += piece) {
    auto lanes = [&](llvm::Value* v) {
      if (piece == n) return v;
      std::vector<int> idx(piece);
      for (unsigned i = 0; i < piece; ++i) idx[i] = static_cast<int>(at + i);
      return b.CreateShuffleVector(v, idx);
    };
    // (x, k, pass-through, all lanes, and for 512 bits the current rounding mode: 4)
    std::vector<llvm::Value*> args = {lanes(p), lanes(kf), llvm::PoisonValue::get(pty),
                                      b.getIntN(piece == 16 ? 16 : 8, ~uint64_t{0})};
    if (piece == 16) args.push_back(b.getInt32(4));
    parts.push_back(b.CreateCall(fn, args));
  }
  // In lane order (any number of pieces: 48 lanes are three).
  return llvm::concatenateVectors(b, parts);
}

llvm::Value* exp2_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  llvm::Value* xc = m.sel(b.CreateFCmpOGT(x, m.f(129)), m.f(129),
                          m.sel(b.CreateFCmpOLT(x, m.f(-151)), m.f(-151), x));
  llvm::Value* kf = m.round_small(xc);
  llvm::Value* r = m.sub(xc, kf);
  static const std::vector<double> c = as_float(in_units_of(kExpReduced, kLn2));
  llvm::Value* p = m.poly(r, c);
  llvm::Value* res = scalef(b, p, kf);
  if (!res) res = m.ldexp(p, m.to_int(kf));
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
      m.mul(exp_f32_of(b, m.mul(m.mul(a, a), m.f(-1.0)), true), m.poly(m.sub(a, m.f(2.5)), scaled));
  llvm::Value* big = m.sel(b.CreateFCmpOGE(a, m.f(3.92)), m.f(1.0), m.sub(m.f(1.0), erfc));
  big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  return m.sel(b.CreateFCmpOLT(a, m.f(1.0)), small, big);
}

llvm::Value* sigmoid_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  MathBuilder m(b, x->getType());
  llvm::Value* e = exp_f32_of(b, m.mul(m.fabs(x), m.f(-1.0)), true);
  // 1/(1+e) for x >= 0, e/(1+e) below, picked by x's sign bit (which x86's blendv reads itself,
  // where x >= 0 took a compare; a -0 takes e = 1 and the same 1/2).
  llvm::Value* negative = b.CreateICmpSLT(m.to_int_bits(x), m.i(0));
  llvm::Value* one_plus_e = m.add(m.f(1.0), e);
  // Where the division is exact (AVX2, NEON), the numerator is picked first: one rounded
  // division (2.30 ulp measured, the test bound is 4).
  if (!divides_by_estimate(b)) return m.div(m.sel(negative, e, m.f(1.0)), one_plus_e);
  // One division, not two: e/(1+e) = e * (1/(1+e)), and the division a reciprocal estimate
  // refined by a Newton step (build_module: AVX-512's 14-bit vrcp14ps, the step in two FMAs:
  // 2.31 ulp, as with the division): a zmm division occupies an FMA port for ~10 cycles of a
  // SiLU's ~20.
  llvm::Value* r = m.div(m.f(1.0), one_plus_e);
  // (1 + e lies in [1, 2] or is NaN: never infinite, which the estimate could not divide; the
  // step is two fused multiply-adds, four instructions without `contract`, which made the
  // SiLU kernels 12% slower than the division.)
  if (auto* div = llvm::dyn_cast<llvm::Instruction>(r)) {
    div->setHasAllowReciprocal(true);
    div->setHasNoInfs(true);
    div->setHasAllowContract(true);
  }
  return m.sel(negative, m.mul(e, r), r);
}

llvm::Value* pow_f32(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  MathBuilder m(b, x->getType());
  MathBuilder d(b, m.with_elem(b.getDoubleTy()));
  llvm::Value* r = pow_f64(d, b.CreateFPExt(x, d.fty), b.CreateFPExt(y, d.fty));
  return b.CreateFPTrunc(r, m.fty);
}

std::string type_suffix(llvm::Type* t) {
  std::string elem = t->getScalarType()->isDoubleTy() ? "f64" : "f32";
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t))
    return "v" + std::to_string(v->getNumElements()) + elem;
  return elem;
}

llvm::Value* body_f64(llvm::IRBuilder<>& b, Op op, llvm::Value* x, llvm::Value* y) {
  MathBuilder d(b, x->getType());
  switch (op) {
    case Op::EXP:
      return exp_f64(d, x);
    case Op::EXP2:
      return exp2_f64(d, x);
    case Op::LOG:
      return log_f64(d, x);
    case Op::LOG2:
      return log2_f64(d, x);
    case Op::TANH:
      return tanh_f64(d, x);
    case Op::SIGMOID:
      return sigmoid_f64(d, x);
    case Op::POW:
      return pow_f64(d, x, y);
    default:
      throw InternalError(str_cat("mathlib: no float64 implementation of ", op_name(op)));
  }
}

}  // namespace

// exp(x); `nonpositive`: x <= 0 or NaN (a sigmoid's exp(-|x|)).
llvm::Value* exp_f32_of(llvm::IRBuilder<>& b, llvm::Value* x, bool nonpositive) {
  MathBuilder m(b, x->getType());
  // Below -104 exp underflows to zero, and an argument clamped there scales to zero too
  // (p * 2^-150), so a nonpositive x needs no select afterwards. (The clamp keeps a NaN: one
  // vmaxps with the NaN passed through.) 3 of a SiLU's ~25 instructions.
  if (nonpositive) x = m.sel(b.CreateFCmpOLT(x, m.f(-104.0f)), m.f(-104.0f), x);
  // k = round(x log2 e) by adding 1.5 * 2^23: the sum's low mantissa bits are k itself (two's
  // complement, |k| < 2^22), so k needs no conversion and no clamps (6 of a SiLU vector's ~45
  // instructions). Outside the range that matters k is garbage, and so is the scaled result:
  // the selects below replace it, and a NaN x keeps a NaN polynomial, which no scale changes.
  llvm::Value* magic = m.f(12582912.0);
  llvm::Value* t = m.add(m.mul(x, m.f(static_cast<float>(kLog2e))), magic);
  llvm::Value* kf = m.sub(t, magic);
  llvm::Value* r = m.fma(b.CreateFNeg(kf), m.f(kLn2HiF), x);
  r = m.fma(b.CreateFNeg(kf), m.f(static_cast<float>(kLn2LoF)), r);
  static const std::vector<double> c = as_float(kExpReduced);
  if (nonpositive && scalef_piece(b, x->getType()) == 0) {
    // k lies in [-150, 0], so 2^(k + 64) is a normal float, built from t's bits in two integer
    // instructions (t's bits are magic's plus k). The polynomial's coefficients carry the 2^-64
    // (exactly: every partial sum stays far above the subnormals), so its product with
    // 2^(k + 64) is p 2^k rounded once, into the subnormals where it must. ldexp's split exponent
    // takes nine instructions for any k, and a scale by 2^-64 would be one more (AVX2's SiLU had
    // ~40 instructions a vector).
    static const std::vector<double> scaled = [] {
      std::vector<double> v = c;
      for (double& e : v) e *= 0x1p-64;
      return v;
    }();
    llvm::Value* biased = b.CreateSub(m.i(127 + 64), m.to_int_bits(magic));
    llvm::Value* scale =
        m.from_int_bits(b.CreateShl(b.CreateAdd(m.to_int_bits(t), biased), m.i(23)));
    return m.mul(m.poly(r, scaled), scale);
  }
  llvm::Value* p = m.poly(r, c);
  // (Where kf is garbage, so is the scaled result, which the selects below replace.)
  llvm::Value* res = scalef(b, p, kf);
  if (!res) res = m.ldexp(p, b.CreateSub(m.to_int_bits(t), m.to_int_bits(magic)));
  if (nonpositive) return res;
  res = m.sel(b.CreateFCmpOGT(x, m.f(88.72283172607421875)), m.inf(), res);
  return m.sel(b.CreateFCmpOLT(x, m.f(-103.97208404541015625)), m.f(0), res);
}

llvm::Value* exp_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  return exp_f32_of(b, x, false);
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

bool provides_f64(Op op) {
  return op == Op::EXP || op == Op::EXP2 || op == Op::LOG || op == Op::LOG2 || op == Op::TANH ||
         op == Op::SIGMOID || op == Op::POW;
}

llvm::Value* emit(llvm::IRBuilder<>& b, Op op, llvm::Value* x, llvm::Value* y) {
  llvm::Type* t = x->getType();
  bool f64 = t->getScalarType()->isDoubleTy();
  KILN_CHECK(t->getScalarType()->isFloatTy() || (f64 && provides_f64(op)), "mathlib: ", op_name(op),
             " wants float32 operands");
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
    switch (f64 ? Op::NOOP : op) {
      case Op::NOOP:
        r = body_f64(fb, op, a, op == Op::POW ? fn->getArg(1) : nullptr);
        break;
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
