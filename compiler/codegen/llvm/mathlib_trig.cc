// sin and cos: argument reduction by pi/2 in double precision, then double polynomials.
//
// |x| < 2^19: Cody-Waite, r = (x - k*kPio2Hi) - k*kPio2Lo with k = round(x * 2/pi); k*kPio2Hi is
// exact. |x| >= 2^19 (finite): Payne-Hanek, per lane in a scalar function, only when some lane
// needs it: x = m * 2^e (m a 24-bit integer) times 144 bits of 2/pi from a constant table, with
// 24-bit limbs in 64-bit integers; the bits around the binary point give the quadrant and the
// fraction.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Module.h>

#include "compiler/codegen/llvm/math_builder.h"
#include "compiler/codegen/llvm/mathlib.h"
#include "compiler/codegen/llvm/mathlib_coeffs.h"

namespace kiln::mathlib {

namespace {

constexpr double kLargeArgument = 524288.0;  // 2^19

llvm::GlobalVariable* two_over_pi_table(llvm::Module& m) {
  const char* name = "kiln.two_over_pi24";
  if (auto* g = m.getGlobalVariable(name, true)) return g;
  std::vector<uint32_t> words(std::begin(kTwoOverPi24), std::end(kTwoOverPi24));
  auto* init = llvm::ConstantDataArray::get(m.getContext(), words);
  return new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::InternalLinkage,
                                  init, name);
}

// {r (double), q (i32)}: |x| = (q + r/(pi/2)) * pi/2 mod 2pi for |x| >= 2^19, x finite.
llvm::Function* rem_pio2_large(llvm::Module& m) {
  const char* name = "kiln.rem_pio2_large";
  if (auto* f = m.getFunction(name)) return f;
  llvm::LLVMContext& c = m.getContext();
  auto* ret = llvm::StructType::get(c, {llvm::Type::getDoubleTy(c), llvm::Type::getInt32Ty(c)});
  auto* fn =
      llvm::Function::Create(llvm::FunctionType::get(ret, {llvm::Type::getFloatTy(c)}, false),
                             llvm::Function::InternalLinkage, name, m);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr(llvm::Attribute::NoInline);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", fn));
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* i128 = b.getInt128Ty();
  auto k64 = [&](int64_t v) { return llvm::ConstantInt::get(i64, static_cast<uint64_t>(v), true); };
  llvm::Value* bits = b.CreateZExt(
      b.CreateAnd(b.CreateBitCast(fn->getArg(0), b.getInt32Ty()), b.getInt32(0x7fffffff)), i64);
  llvm::Value* E = b.CreateLShr(bits, k64(23));
  llvm::Value* mant = b.CreateOr(b.CreateAnd(bits, k64(0x7fffff)), k64(0x800000));
  llvm::Value* e = b.CreateSub(E, k64(150));
  // Skip the words of 2/pi whose products are multiples of 4: i0 = (e - 26)/24 + 1 when e >= 26.
  llvm::Value* i0 =
      b.CreateSelect(b.CreateICmpSGE(e, k64(26)),
                     b.CreateAdd(b.CreateSDiv(b.CreateSub(e, k64(26)), k64(24)), k64(1)), k64(0));
  llvm::GlobalVariable* table = two_over_pi_table(m);
  llvm::Value* limb[6];
  llvm::Value* carry = k64(0);
  for (int j = 5; j >= 0; --j) {
    llvm::Value* p =
        b.CreateInBoundsGEP(table->getValueType(), table, {b.getInt64(0), b.CreateAdd(i0, k64(j))});
    llvm::Value* w = b.CreateZExt(b.CreateLoad(b.getInt32Ty(), p), i64);
    llvm::Value* v = b.CreateAdd(b.CreateMul(mant, w), carry);
    limb[j] = b.CreateAnd(v, k64(0xffffff));
    carry = b.CreateLShr(v, k64(24));
  }
  // V = bits 48..167 of the product P (limb 5 and 4 hold bits 0..47).
  llvm::Value* V = b.CreateZExt(carry, i128);
  for (int j = 0; j <= 3; ++j)
    V = b.CreateOr(b.CreateShl(V, llvm::ConstantInt::get(i128, 24)), b.CreateZExt(limb[j], i128));
  // P has s = 144 + 24*i0 - e fraction bits; take bits [s-62, s+2): 2 integer bits, 62 fraction
  // bits.
  llvm::Value* s = b.CreateSub(b.CreateAdd(k64(144), b.CreateMul(i0, k64(24))), e);
  llvm::Value* window =
      b.CreateTrunc(b.CreateLShr(V, b.CreateZExt(b.CreateSub(s, k64(110)), i128)), i64);
  llvm::Value* q = b.CreateLShr(window, k64(62));
  llvm::Value* frac = b.CreateAnd(window, k64((int64_t{1} << 62) - 1));
  llvm::Value* up = b.CreateICmpUGE(frac, k64(int64_t{1} << 61));
  q = b.CreateSelect(up, b.CreateAdd(q, k64(1)), q);
  frac = b.CreateSelect(up, b.CreateSub(frac, k64(int64_t{1} << 62)), frac);
  llvm::Value* r = b.CreateFMul(b.CreateFMul(b.CreateSIToFP(frac, b.getDoubleTy()),
                                             llvm::ConstantFP::get(b.getDoubleTy(), 0x1p-62)),
                                llvm::ConstantFP::get(b.getDoubleTy(), kPio2));
  llvm::Value* out = llvm::UndefValue::get(ret);
  out = b.CreateInsertValue(out, r, 0);
  out = b.CreateInsertValue(out, b.CreateTrunc(b.CreateAnd(q, k64(3)), b.getInt32Ty()), 1);
  b.CreateRet(out);
  return fn;
}

}  // namespace

llvm::Value* sincos_f32(llvm::IRBuilder<>& b, llvm::Value* x, bool cosine) {
  MathBuilder m(b, x->getType());
  MathBuilder d(b, m.with_elem(b.getDoubleTy()));
  llvm::Type* i32v = m.with_elem(b.getInt32Ty());
  llvm::Value* xd = b.CreateFPExt(x, d.fty);
  llvm::Value* kd = d.round_small(d.mul(xd, d.f(kTwoOverPi)));
  llvm::Value* r = d.sub(d.fma(b.CreateFNeg(kd), d.f(kPio2Hi), xd), d.mul(kd, d.f(kPio2Lo)));
  llvm::Value* q = b.CreateTrunc(b.CreateAnd(d.to_int(kd), d.i(3)), i32v);
  llvm::Value* ax = m.fabs(x);
  llvm::Value* large =
      b.CreateAnd(b.CreateFCmpOGE(ax, m.f(kLargeArgument)), b.CreateFCmpOLT(ax, m.inf()));
  // Huge arguments, lane by lane in a branch taken only when some lane needs it.
  llvm::Value* any = m.lanes ? b.CreateOrReduce(large) : large;
  llvm::BasicBlock* here = b.GetInsertBlock();
  llvm::Function* fn = here->getParent();
  llvm::BasicBlock* slow = llvm::BasicBlock::Create(b.getContext(), "huge", fn);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(b.getContext(), "reduced", fn);
  b.CreateCondBr(any, slow, join);
  b.SetInsertPoint(slow);
  llvm::Function* rem = rem_pio2_large(*fn->getParent());
  llvm::Value* r2 = r;
  llvm::Value* q2 = q;
  unsigned n = m.lanes ? m.lanes : 1;
  for (unsigned l = 0; l < n; ++l) {
    llvm::Value* xl = m.lanes ? b.CreateExtractElement(ax, l) : ax;
    llvm::Value* res = b.CreateCall(rem, {xl});
    llvm::Value* rl = b.CreateExtractValue(res, 0);
    llvm::Value* ql = b.CreateExtractValue(res, 1);
    // The reduction is of |x|: for x < 0, negate r and the quadrant.
    llvm::Value* negx = b.CreateFCmpOLT(m.lanes ? b.CreateExtractElement(x, l) : x,
                                        llvm::ConstantFP::get(b.getFloatTy(), 0.0));
    rl = b.CreateSelect(negx, b.CreateFNeg(rl), rl);
    ql = b.CreateSelect(negx, b.CreateAnd(b.CreateNeg(ql), b.getInt32(3)), ql);
    llvm::Value* use = m.lanes ? b.CreateExtractElement(large, l) : large;
    rl = b.CreateSelect(use, rl, m.lanes ? b.CreateExtractElement(r, l) : r);
    ql = b.CreateSelect(use, ql, m.lanes ? b.CreateExtractElement(q, l) : q);
    r2 = m.lanes ? b.CreateInsertElement(r2, rl, l) : rl;
    q2 = m.lanes ? b.CreateInsertElement(q2, ql, l) : ql;
  }
  llvm::BasicBlock* slow_end = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  llvm::PHINode* rp = b.CreatePHI(r->getType(), 2);
  rp->addIncoming(r, here);
  rp->addIncoming(r2, slow_end);
  llvm::PHINode* qp = b.CreatePHI(q->getType(), 2);
  qp->addIncoming(q, here);
  qp->addIncoming(q2, slow_end);
  r = rp;
  q = qp;
  llvm::Value* z = d.mul(r, r);
  llvm::Value* sn = d.mul(r, d.poly(z, kSinOdd));
  llvm::Value* cs = d.poly(z, kCosEven);
  // sin: quadrants 0..3 give s, c, -s, -c; cos: c, -s, -c, s.
  if (cosine)
    q = b.CreateAnd(b.CreateAdd(q, llvm::ConstantInt::get(i32v, 1)),
                    llvm::ConstantInt::get(i32v, 3));
  llvm::Value* use_cos = b.CreateICmpNE(b.CreateAnd(q, llvm::ConstantInt::get(i32v, 1)),
                                        llvm::ConstantInt::get(i32v, 0));
  llvm::Value* negate = b.CreateICmpNE(b.CreateAnd(q, llvm::ConstantInt::get(i32v, 2)),
                                       llvm::ConstantInt::get(i32v, 0));
  llvm::Value* v = d.sel(use_cos, cs, sn);
  v = d.sel(negate, b.CreateFNeg(v), v);
  llvm::Value* res = b.CreateFPTrunc(v, m.fty);
  return m.sel(b.CreateFCmpOEQ(ax, m.inf()), m.nan(), res);  // NaN propagates through r
}

}  // namespace kiln::mathlib
