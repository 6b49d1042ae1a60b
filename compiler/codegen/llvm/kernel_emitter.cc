#include "compiler/codegen/llvm/kernel_emitter.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Triple.h>

#include <cmath>
#include <unordered_map>

#include "compiler/codegen/llvm/mathlib.h"
#include "compiler/ir/const_eval.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

class Emitter {
 public:
  explicit Emitter(llvm::Module& m) : m_(m), c_(m.getContext()), b_(c_) {}

  KernelFunctions run(const CodegenKernel& k) {
    const std::string& name = k.name;
    const std::vector<DType>& args = k.arg_dtypes;
    idx_ = k.index_bits == 32 ? b_.getInt32Ty() : b_.getInt64Ty();
    std::vector<llvm::Type*> params(args.size(), b_.getPtrTy());
    params.push_back(b_.getPtrTy());  // vars: the symbols' run-time values (int64 each)
    params.push_back(b_.getInt32Ty());
    params.push_back(b_.getInt32Ty());
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name + ".raw", m_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    fn_->addFnAttr("no-builtins");
    for (size_t i = 0; i < args.size(); ++i) {
      if (i >= k.may_alias.size() || !k.may_alias[i])
        fn_->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
      fn_->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoCapture);
    }
    vars_ = fn_->getArg(static_cast<unsigned>(args.size()));
    task_ = fn_->getArg(static_cast<unsigned>(args.size() + 1));
    ntasks_ = fn_->getArg(static_cast<unsigned>(args.size() + 2));
    entry_bb_ = llvm::BasicBlock::Create(c_, "entry", fn_);
    b_.SetInsertPoint(entry_bb_);
    // Multiply-adds may fuse (FMA); nothing else is relaxed: no reassociation, NaN and inf kept.
    llvm::FastMathFlags contract;
    contract.setAllowContract(true);
    b_.setFastMathFlags(contract);
    prefetch_ = k.prefetch;
    for (const LinearOp& op : k.program) step(op);
    b_.CreateRetVoid();
    KernelFunctions out{fn_, make_entry(name, args.size())};
    return out;
  }

 private:
  // ---------------------------------------------------------------- types

  llvm::Type* scalar_ty(ScalarKind k) {
    switch (k) {
      case ScalarKind::Bool:
        return b_.getInt1Ty();
      case ScalarKind::Int8:
      case ScalarKind::UInt8:
        return b_.getInt8Ty();
      case ScalarKind::Int16:
      case ScalarKind::UInt16:
        return b_.getInt16Ty();
      case ScalarKind::Int32:
      case ScalarKind::UInt32:
        return b_.getInt32Ty();
      case ScalarKind::Int64:
      case ScalarKind::UInt64:
        return b_.getInt64Ty();
      case ScalarKind::Index:
        return idx_;
      case ScalarKind::Float16:
        return b_.getHalfTy();  // only loads, stores and casts (late_lower computes in float)
      case ScalarKind::BFloat16:
        throw InternalError("emitter: bfloat16 after late lowering");
      case ScalarKind::Float32:
        return b_.getFloatTy();
      case ScalarKind::Float64:
        return b_.getDoubleTy();
      case ScalarKind::Void:
        return b_.getVoidTy();
    }
    return nullptr;
  }
  llvm::Type* ty(DType d) {
    llvm::Type* s = scalar_ty(d.scalar);
    return d.lanes > 1 ? llvm::FixedVectorType::get(s, d.lanes) : s;
  }
  // How an element sits in memory: bool as i8.
  llvm::Type* mem_scalar_ty(ScalarKind k) {
    return k == ScalarKind::Bool ? b_.getInt8Ty() : scalar_ty(k);
  }
  llvm::Type* mem_ty(DType d) {
    llvm::Type* s = mem_scalar_ty(d.scalar);
    return d.lanes > 1 ? llvm::FixedVectorType::get(s, d.lanes) : s;
  }

  llvm::Constant* constant(DType d, const ConstValue& v) {
    llvm::Type* s = scalar_ty(d.scalar);
    llvm::Constant* c;
    if (d.is_float())
      c = llvm::ConstantFP::get(s, v.as_double());
    else
      c = llvm::ConstantInt::get(s, static_cast<uint64_t>(v.as_int()), !d.is_unsigned());
    return d.lanes > 1 ? llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(d.lanes), c)
                       : c;
  }

  // ---------------------------------------------------------------- the program

  void step(const LinearOp& op) {
    switch (op.kind) {
      case LinearOp::Kind::LoopBegin:
        loop_begin(op.u);
        return;
      case LinearOp::Kind::LoopEnd:
        loop_end(op.u);
        return;
      case LinearOp::Kind::AccInit: {
        const UOp* red = op.u;
        llvm::IRBuilder<> eb(entry_bb_, entry_bb_->begin());
        llvm::AllocaInst* a = eb.CreateAlloca(ty(red->dtype), nullptr, "acc");
        accs_[red] = a;
        accs_[red->src[1]] = a;
        DType el = red->dtype;
        b_.CreateStore(constant(el, reduce_identity(red->op_arg(), el.base())), a);
        return;
      }
      case LinearOp::Kind::AccUpdate:
        b_.CreateStore(val(op.u->src[0]), accs_.at(op.u));
        return;
      case LinearOp::Kind::Node:
        vals_[op.u] = node(op.u);
        return;
    }
  }

  llvm::Value* val(const UOp* u) {
    auto it = vals_.find(u);
    KILN_CHECK(it != vals_.end(), "emitter: ", op_name(u->op), " used before it is computed");
    return it->second;
  }

  void loop_begin(const UOp* r) {
    // A symbolic range's end is a value computed before the loop (from the kernel's vars).
    llvm::Value* n = val(r->src[0]);
    llvm::Value* lo = llvm::ConstantInt::get(idx_, 0);
    llvm::Value* hi = n;
    if (r->range().kind == AxisKind::Parallel) {
      // Task t of T gets [t*N/T, (t+1)*N/T), computed in 64 bits.
      llvm::Type* i64 = b_.getInt64Ty();
      llvm::Value* n64 = b_.CreateSExtOrTrunc(n, i64);
      llvm::Value* t = b_.CreateZExt(task_, i64);
      llvm::Value* tt = b_.CreateZExt(ntasks_, i64);
      lo = b_.CreateTrunc(b_.CreateUDiv(b_.CreateMul(t, n64), tt), idx_);
      hi = b_.CreateTrunc(
          b_.CreateUDiv(b_.CreateMul(b_.CreateAdd(t, llvm::ConstantInt::get(i64, 1)), n64), tt),
          idx_);
    }
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(c_, "loop.r" + std::to_string(r->range().id), fn_);
    auto* body = llvm::BasicBlock::Create(c_, "body.r" + std::to_string(r->range().id), fn_);
    auto* exit = llvm::BasicBlock::Create(c_, "exit.r" + std::to_string(r->range().id), fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(idx_, 2, "r" + std::to_string(r->range().id));
    iv->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), body, exit);
    b_.SetInsertPoint(body);
    vals_[r] = iv;
    loops_.push_back({r, iv, header, exit});
    // (Only inside the reuse loop: a reduction that does not depend on it is hoisted out.)
    if (prefetch_ && r == prefetch_.reduce && vals_.count(prefetch_.reuse) &&
        vals_.count(prefetch_.parallel))
      prefetch_next_panel(iv);
  }

  // The prefetches of one reduce step (weight_prefetch.h): lines ((l - 1) * K + k) * per_step
  // + j of the next panel, l the reuse loop's iteration and k the reduce step. In the first
  // reuse iteration (l = 0: the current panel's own first pass) the line is clamped to the next
  // panel's first, asked for again and again, rather than a branch in the reduce loop. Past the
  // next panel's end they run on into the one after it, which the next task reads in turn.
  // Prefetches never fault: the last task's run past the weight's end is harmless.
  void prefetch_next_panel(llvm::Value* k) {
    const WeightPrefetch& p = prefetch_;
    llvm::Type* i64 = b_.getInt64Ty();
    auto wide = [&](llvm::Value* v) { return b_.CreateSExtOrTrunc(v, i64); };
    auto c = [&](int64_t v) { return llvm::ConstantInt::get(i64, static_cast<uint64_t>(v)); };
    llvm::Value* step = b_.CreateAdd(
        b_.CreateMul(b_.CreateSub(wide(val(p.reuse)), c(1)), c(p.reduce_trips)), wide(k));
    llvm::Value* line = b_.CreateMul(step, c(p.per_step));
    line = b_.CreateSelect(b_.CreateICmpSLT(line, c(0)), c(0), line);
    llvm::Value* next = b_.CreateMul(b_.CreateAdd(wide(val(p.parallel)), c(1)), c(p.stride_bytes));
    llvm::Value* base = b_.CreateGEP(b_.getInt8Ty(), fn_->getArg(static_cast<unsigned>(p.arg)),
                                     b_.CreateAdd(next, b_.CreateMul(line, c(kCacheLine))));
    llvm::Function* pf =
        llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::prefetch, {b_.getPtrTy()});
    // Read, into every cache level (prefetcht0), data.
    for (int64_t j = 0; j < p.per_step; ++j)
      b_.CreateCall(
          pf, {b_.CreateConstGEP1_64(b_.getInt8Ty(), base, static_cast<uint64_t>(kCacheLine * j)),
               b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
  }

  void loop_end(const UOp* r) {
    Loop l = loops_.back();
    loops_.pop_back();
    KILN_CHECK(l.range == r, "emitter: loops closed out of order");
    llvm::Value* next = b_.CreateAdd(l.iv, llvm::ConstantInt::get(idx_, 1), "", true, true);
    l.iv->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(l.header);
    b_.SetInsertPoint(l.exit);
  }

  // ---------------------------------------------------------------- nodes

  llvm::Value* node(const UOp* u) {
    switch (u->op) {
      case Op::CONST:
        return constant(u->dtype, u->cval());
      case Op::VCONST: {
        std::vector<llvm::Constant*> lanes;
        for (const ConstValue& v : std::get<std::vector<ConstValue>>(u->arg))
          lanes.push_back(constant(u->dtype.base(), v));
        return llvm::ConstantVector::get(lanes);
      }
      case Op::DEFINE_GLOBAL:
        return fn_->getArg(static_cast<unsigned>(u->iarg()));
      case Op::DEFINE_VAR: {
        // vars[slot], an int64, in the kernel's index type (the bounds chose it to hold the
        // symbol's maximum). The value is the same for the whole run: loaded once, invariant.
        llvm::Value* p = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), vars_,
                                                       static_cast<uint64_t>(u->var().slot));
        auto* load = b_.CreateLoad(b_.getInt64Ty(), p, u->var().name);
        load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(c_, {}));
        return b_.CreateSExtOrTrunc(load, idx_);
      }
      case Op::RANGE:
        return val(u);  // the loop's induction variable
      case Op::ACC:
      case Op::REDUCE:
        return b_.CreateLoad(ty(u->dtype), accs_.at(u));
      case Op::INDEX:
        return nullptr;  // consumed by LOAD/STORE
      case Op::WHERE:
        if (u->src[2]->is_invalid()) return nullptr;  // an index gate, consumed by INDEX
        break;
      case Op::LOAD:
        return load(u);
      case Op::STORE:
        store(u);
        return nullptr;
      case Op::VECTORIZE:
        return vectorize(u);
      case Op::GEP:
        return shuffle(u);
      case Op::CAST:
        return cast(u->src[0]->dtype, u->dtype, val(u->src[0]));
      case Op::BITCAST:
        return bitcast(u->src[0]->dtype, u->dtype, val(u->src[0]));
      case Op::DOT4:
        return dot4(u);
      default:
        break;
    }
    KILN_CHECK(alu_arity(u->op), "emitter: unexpected ", op_name(u->op));
    std::vector<llvm::Value*> s;
    for (const UOp* x : u->src) s.push_back(val(x));
    DType operand = u->op == Op::WHERE ? u->src[1]->dtype : u->src[0]->dtype;
    return alu(u->op, operand, s);
  }

  // The address of an INDEX, and its gate (nullptr if ungated). Masked lanes address element 0.
  std::pair<llvm::Value*, llvm::Value*> address(const UOp* index) {
    const UOp* buf = index->src[0];
    const UOp* i = index->src[1];
    llvm::Value* gate = nullptr;
    llvm::Value* lin;
    if (i->op == Op::WHERE && i->src[2]->is_invalid() && i->src[0]->dtype.lanes > 1) {
      // A masked vector access (one gate per lane): the lanes' addresses are never formed for
      // masked lanes, so the base needs no select (and no inbounds: it may lie before the row).
      return {b_.CreateGEP(mem_scalar_ty(buf->dtype.scalar), val(buf), val(i->src[1])),
              val(i->src[0])};
    }
    if (i->op == Op::WHERE && i->src[2]->is_invalid()) {
      gate = val(i->src[0]);
      lin = b_.CreateSelect(gate, val(i->src[1]), llvm::ConstantInt::get(idx_, 0));
    } else {
      lin = val(i);
    }
    return {b_.CreateInBoundsGEP(mem_scalar_ty(buf->dtype.scalar), val(buf), lin), gate};
  }

  // A masked vector access: `plain()` when every lane of `gate` is on (all but a row's last
  // group), else `masked()` (masked accesses are slow on some cores: microcoded on AMD Zen).
  // Returns the merged value of a load, nullptr for a store.
  template <typename Plain, typename Masked>
  llvm::Value* all_lanes_or_masked(llvm::Value* gate, Plain plain, Masked masked) {
    auto* all_bb = llvm::BasicBlock::Create(c_, "lanes.all", fn_);
    auto* masked_bb = llvm::BasicBlock::Create(c_, "lanes.masked", fn_);
    auto* done = llvm::BasicBlock::Create(c_, "lanes.done", fn_);
    b_.CreateCondBr(b_.CreateAndReduce(gate), all_bb, masked_bb);
    b_.SetInsertPoint(all_bb);
    llvm::Value* a = plain();
    b_.CreateBr(done);
    b_.SetInsertPoint(masked_bb);
    llvm::Value* m = masked();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    if (a->getType()->isVoidTy()) return nullptr;
    llvm::PHINode* v = b_.CreatePHI(a->getType(), 2);
    v->addIncoming(a, all_bb);
    v->addIncoming(m, masked_bb);
    return v;
  }

  llvm::Value* load(const UOp* u) {
    auto [ptr, gate] = address(u->src[0]);
    DType d = u->dtype;
    llvm::Align align(static_cast<uint64_t>(d.itemsize()));
    if (gate && gate->getType()->isVectorTy()) {  // masked lanes read zero
      llvm::Value* zero = llvm::Constant::getNullValue(mem_ty(d));
      return from_memory(
          all_lanes_or_masked(
              gate, [&] { return b_.CreateAlignedLoad(mem_ty(d), ptr, align); },
              [&] { return b_.CreateMaskedLoad(mem_ty(d), ptr, align, gate, zero); }),
          d);
    }
    llvm::LoadInst* raw = b_.CreateAlignedLoad(mem_ty(d), ptr, align);
    // A masked lane loads element 0 and keeps it: the IR leaves its value unspecified (rangeify
    // selects the pad value around every gated load; a padded tile's extra lanes are never
    // stored). Selecting zero here would cost a branch per scalar load on x86 (a float select on
    // an integer condition is lowered to one), splitting a register tile's inner loop.
    return from_memory(raw, d);
  }

  void store(const UOp* u) {
    auto [ptr, gate] = address(u->src[0]);
    const UOp* value = u->src[1];
    llvm::Value* v = to_memory(val(value), value->dtype);
    if (gate && gate->getType()->isVectorTy()) {
      llvm::Align align(static_cast<uint64_t>(value->dtype.itemsize()));
      all_lanes_or_masked(
          gate, [&] { return b_.CreateAlignedStore(v, ptr, align); },
          [&] { return b_.CreateMaskedStore(v, ptr, align, gate); });
      return;
    }
    if (!gate) {
      b_.CreateAlignedStore(v, ptr, llvm::Align(static_cast<uint64_t>(value->dtype.itemsize())));
      return;
    }
    auto* yes = llvm::BasicBlock::Create(c_, "store", fn_);
    auto* done = llvm::BasicBlock::Create(c_, "stored", fn_);
    b_.CreateCondBr(gate, yes, done);
    b_.SetInsertPoint(yes);
    b_.CreateAlignedStore(v, ptr, llvm::Align(static_cast<uint64_t>(value->dtype.itemsize())));
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // Booleans are i1 in registers and a byte in memory.
  llvm::Value* from_memory(llvm::Value* v, DType d) {
    if (d.scalar != ScalarKind::Bool) return v;
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  llvm::Value* to_memory(llvm::Value* v, DType d) {
    return d.scalar == ScalarKind::Bool ? b_.CreateZExt(v, mem_ty(d)) : v;
  }

  llvm::Value* vectorize(const UOp* u) {
    llvm::Type* t = ty(u->dtype);
    bool splat = true;
    for (const UOp* s : u->src) splat &= s == u->src[0];
    if (splat) return b_.CreateVectorSplat(u->dtype.lanes, val(u->src[0]));
    llvm::Value* v = llvm::PoisonValue::get(t);
    for (size_t i = 0; i < u->src.size(); ++i)
      v = b_.CreateInsertElement(v, val(u->src[i]), static_cast<uint64_t>(i));
    return v;
  }

  // GEP: lanes picked from the concatenation of the sources.
  llvm::Value* shuffle(const UOp* u) {
    std::vector<llvm::Value*> parts;
    for (const UOp* s : u->src) {
      llvm::Value* v = val(s);
      if (!v->getType()->isVectorTy())
        v = b_.CreateInsertElement(
            llvm::PoisonValue::get(llvm::FixedVectorType::get(v->getType(), 1)), v, uint64_t{0});
      parts.push_back(v);
    }
    llvm::Value* all = concat(parts);
    const auto& lanes = u->varg();
    if (u->dtype.lanes == 1) return b_.CreateExtractElement(all, static_cast<uint64_t>(lanes[0]));
    std::vector<int> mask(lanes.begin(), lanes.end());
    return b_.CreateShuffleVector(all, mask);
  }

  llvm::Value* concat(std::vector<llvm::Value*> parts) {
    while (parts.size() > 1) {
      std::vector<llvm::Value*> next;
      for (size_t i = 0; i + 1 < parts.size(); i += 2)
        next.push_back(concat2(parts[i], parts[i + 1]));
      if (parts.size() % 2) next.push_back(parts.back());
      parts = std::move(next);
    }
    return parts[0];
  }
  llvm::Value* concat2(llvm::Value* a, llvm::Value* c) {
    unsigned na = llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements();
    unsigned nc = llvm::cast<llvm::FixedVectorType>(c->getType())->getNumElements();
    unsigned n = std::max(na, nc);
    auto widen = [&](llvm::Value* v, unsigned k) {
      if (k == n) return v;
      std::vector<int> m(n);
      for (unsigned i = 0; i < n; ++i) m[i] = i < k ? static_cast<int>(i) : -1;
      return b_.CreateShuffleVector(v, m);
    };
    llvm::Value* wa = widen(a, na);
    llvm::Value* wc = widen(c, nc);
    std::vector<int> m;
    for (unsigned i = 0; i < na; ++i) m.push_back(static_cast<int>(i));
    for (unsigned i = 0; i < nc; ++i) m.push_back(static_cast<int>(n + i));
    return b_.CreateShuffleVector(wa, wc, m);
  }

  // vpdpbusd on 4, 8 or 16 lanes, or sdot on 4: late_lower left DOT4 only where the target has
  // one, in the register widths it has, and lowered it to plain integer code elsewhere.
  llvm::Value* dot4(const UOp* u) {
    int lanes = u->dtype.lanes;
    if (llvm::Triple(m_.getTargetTriple()).isAArch64()) {
      // sdot multiplies two signed operands: a - 128 (a xor 0x80) times b, plus 128 x the sum of
      // b's bytes, which is minus sdot(-128, b).
      KILN_CHECK(lanes == 4, "emitter: DOT4 on ", lanes, " lanes for AArch64");
      llvm::Type* bytes = ty(dtypes::int8.vec(16));
      llvm::Value* a =
          b_.CreateXor(val(u->src[1]), llvm::ConstantInt::get(ty(u->src[1]->dtype), 0x80));
      a = b_.CreateBitCast(a, bytes);
      llvm::Value* b = val(u->src[2]);
      llvm::Value* prod = b_.CreateIntrinsic(llvm::Intrinsic::aarch64_neon_sdot,
                                             {ty(u->dtype), bytes}, {val(u->src[0]), a, b});
      llvm::Value* low =
          b_.CreateIntrinsic(llvm::Intrinsic::aarch64_neon_sdot, {ty(u->dtype), bytes},
                             {llvm::Constant::getNullValue(ty(u->dtype)),
                              llvm::ConstantInt::get(bytes, static_cast<uint64_t>(-128), true), b});
      return b_.CreateSub(prod, low);
    }
    llvm::Intrinsic::ID id = lanes == 16  ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                             : lanes == 8 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                          : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    KILN_CHECK(lanes == 4 || lanes == 8 || lanes == 16, "emitter: DOT4 on ", lanes, " lanes");
    llvm::Type* words = ty(u->dtype);
    return b_.CreateIntrinsic(id, {},
                              {val(u->src[0]), b_.CreateBitCast(val(u->src[1]), words),
                               b_.CreateBitCast(val(u->src[2]), words)});
  }

  // ---------------------------------------------------------------- ALU

  llvm::Value* alu(Op op, DType d, const std::vector<llvm::Value*>& s) {
    bool flt = d.is_float();
    bool uns = d.is_unsigned() || d.is_bool();
    llvm::Type* t = s[0]->getType();
    auto iz = [&] { return llvm::Constant::getNullValue(t); };
    auto ic = [&](int64_t v) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true); };
    if (mathlib::provides(op) && (flt || op != Op::POW)) {  // integer POW is below
      KILN_CHECK(flt, op_name(op), " on ", d.str());
      if (d.scalar == ScalarKind::Float64 && !mathlib::provides_f64(op))
        throw Error(str_cat(op_name(op), " on float64 is not supported by the code generator yet"));
      return mathlib::emit(b_, op, s[0], s.size() > 1 ? s[1] : nullptr);
    }
    if (d.is_bool()) {
      switch (op) {
        case Op::AND:
        case Op::MUL:
        case Op::MIN:
          return b_.CreateAnd(s[0], s[1]);
        case Op::OR:
        case Op::ADD:
        case Op::MAX:
          return b_.CreateOr(s[0], s[1]);
        case Op::XOR:
        case Op::CMPNE:
          return b_.CreateXor(s[0], s[1]);
        case Op::CMPEQ:
          return b_.CreateICmpEQ(s[0], s[1]);
        case Op::CMPLT:
          return b_.CreateICmpULT(s[0], s[1]);
        case Op::WHERE:
          return b_.CreateSelect(s[0], s[1], s[2]);
        default:
          throw InternalError(str_cat("emitter: ", op_name(op), " on bool"));
      }
    }
    // Index math never wraps: choose_index_type checked every index node's bounds against the
    // index width. Saying so (nsw) lets LLVM fold sext(i + c) into an address displacement
    // instead of recomputing and sign-extending each load's index (two integer ops per load in
    // a register tile's inner loop).
    bool nsw = d.scalar == ScalarKind::Index;
    switch (op) {
      case Op::ADD:
        return flt ? b_.CreateFAdd(s[0], s[1], "", nullptr)
                   : b_.CreateAdd(s[0], s[1], "", false, nsw);
      case Op::MUL:
        return flt ? b_.CreateFMul(s[0], s[1]) : b_.CreateMul(s[0], s[1], "", false, nsw);
      case Op::FDIV:
        return b_.CreateFDiv(s[0], s[1]);
      case Op::NEG:
        return flt ? b_.CreateFNeg(s[0]) : b_.CreateNeg(s[0]);
      case Op::RECIP:
        return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0), s[0]);
      case Op::SQRT:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, s[0]);
      case Op::ABS:
        if (flt) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, s[0]);
        if (uns) return s[0];
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, s[0], b_.getFalse());
      case Op::TRUNC:
      case Op::FLOOR:
      case Op::CEIL:
      case Op::ROUND:
        return rounding(op, s[0]);
      case Op::MAX:
        return b_.CreateSelect(flt   ? b_.CreateFCmpOLT(s[0], s[1])
                               : uns ? b_.CreateICmpULT(s[0], s[1])
                                     : b_.CreateICmpSLT(s[0], s[1]),
                               s[1], s[0]);
      case Op::MIN:
        return b_.CreateSelect(flt   ? b_.CreateFCmpOLT(s[1], s[0])
                               : uns ? b_.CreateICmpULT(s[1], s[0])
                                     : b_.CreateICmpSLT(s[1], s[0]),
                               s[1], s[0]);
      case Op::CMPLT:
        return flt   ? b_.CreateFCmpOLT(s[0], s[1])
               : uns ? b_.CreateICmpULT(s[0], s[1])
                     : b_.CreateICmpSLT(s[0], s[1]);
      case Op::CMPEQ:
        return flt ? b_.CreateFCmpOEQ(s[0], s[1]) : b_.CreateICmpEQ(s[0], s[1]);
      case Op::CMPNE:
        return flt ? b_.CreateFCmpUNE(s[0], s[1]) : b_.CreateICmpNE(s[0], s[1]);
      case Op::AND:
        return b_.CreateAnd(s[0], s[1]);
      case Op::OR:
        return b_.CreateOr(s[0], s[1]);
      case Op::XOR:
        return b_.CreateXor(s[0], s[1]);
      case Op::WHERE:
        return b_.CreateSelect(s[0], s[1], s[2]);
      case Op::MULACC:
        if (flt) return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t}, {s[0], s[1], s[2]});
        return b_.CreateAdd(b_.CreateMul(s[0], s[1], "", false, nsw), s[2], "", false, nsw);
      case Op::IDIV:
      case Op::MOD:
        // The machine's division: late_lower guarded every divisor that may be 0 (or -1) and
        // lowered float MOD.
        if (flt) break;
        if (uns) return op == Op::IDIV ? b_.CreateUDiv(s[0], s[1]) : b_.CreateURem(s[0], s[1]);
        return op == Op::IDIV ? b_.CreateSDiv(s[0], s[1]) : b_.CreateSRem(s[0], s[1]);
      case Op::SHL:
      case Op::SHR: {
        unsigned bits = t->getScalarSizeInBits();
        llvm::Value* inr = b_.CreateICmpULT(s[1], ic(bits));  // also rejects negative amounts
        llvm::Value* amt = b_.CreateSelect(inr, s[1], iz());
        if (op == Op::SHL) return b_.CreateSelect(inr, b_.CreateShl(s[0], amt), iz());
        if (uns) return b_.CreateSelect(inr, b_.CreateLShr(s[0], amt), iz());
        return b_.CreateSelect(inr, b_.CreateAShr(s[0], amt), b_.CreateAShr(s[0], ic(bits - 1)));
      }
      case Op::POW:
        return ipow(s[0], s[1], t, ic, uns);
      default:
        break;
    }
    throw InternalError(str_cat("emitter: no lowering for ", op_name(op), " on ", d.str()));
  }

  // Rounding to an integral value (late_lower replaced these on targets without instructions).
  llvm::Value* rounding(Op op, llvm::Value* x) {
    llvm::Intrinsic::ID id = op == Op::TRUNC   ? llvm::Intrinsic::trunc
                             : op == Op::FLOOR ? llvm::Intrinsic::floor
                             : op == Op::CEIL  ? llvm::Intrinsic::ceil
                                               : llvm::Intrinsic::roundeven;
    return b_.CreateUnaryIntrinsic(id, x);
  }

  // Integer power by squaring, branch-free over the exponent's bits.
  template <typename C>
  llvm::Value* ipow(llvm::Value* x, llvm::Value* e, llvm::Type* t, C ic, bool uns) {
    unsigned bits = t->getScalarSizeInBits();
    llvm::Value* r = ic(1);
    llvm::Value* base = x;
    for (unsigned i = 0; i < bits - (uns ? 0 : 1); ++i) {
      llvm::Value* bit = b_.CreateICmpNE(b_.CreateAnd(b_.CreateLShr(e, ic(i)), ic(1)), ic(0));
      r = b_.CreateSelect(bit, b_.CreateMul(r, base), r);
      base = b_.CreateMul(base, base);
    }
    if (uns) return r;
    // Negative exponents: 1 for x == 1, +-1 for x == -1 (by parity), 0 otherwise.
    llvm::Value* neg = b_.CreateICmpSLT(e, ic(0));
    llvm::Value* odd = b_.CreateICmpNE(b_.CreateAnd(e, ic(1)), ic(0));
    llvm::Value* negres = b_.CreateSelect(
        b_.CreateICmpEQ(x, ic(1)), ic(1),
        b_.CreateSelect(b_.CreateICmpEQ(x, ic(-1)), b_.CreateSelect(odd, ic(-1), ic(1)), ic(0)));
    return b_.CreateSelect(neg, negres, r);
  }

  llvm::Value* cast(DType from, DType to, llvm::Value* v) {
    llvm::Type* t = ty(to);
    bool ff = from.is_float(), tf = to.is_float();
    if (to.is_bool())
      return ff ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    if (from.is_bool()) return tf ? b_.CreateUIToFP(v, t) : b_.CreateZExt(v, t);
    if (ff && tf) return v->getType() == t ? v : b_.CreateFPCast(v, t);
    if (tf) return from.is_unsigned() ? b_.CreateUIToFP(v, t) : b_.CreateSIToFP(v, t);
    if (ff && to.bits() <= 16) return narrow_float_to_int(to, v);
    if (ff)
      return b_.CreateIntrinsic(
          to.is_unsigned() ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat,
          {t, v->getType()}, {v});
    return b_.CreateIntCast(v, t, !from.is_unsigned());
  }

  // A float to an 8- or 16-bit integer, saturating, NaN to 0 (kiln's CAST): clamped in float to
  // the type's range (exact in float32), converted to int32, truncated. LLVM scalarizes vector
  // fptoui.sat/fptosi.sat on x86 (a quantized layer's stores: 256 vcvttss2si per tile).
  llvm::Value* narrow_float_to_int(DType to, llvm::Value* v) {
    int bits = to.bits();
    double lo = to.is_unsigned() ? 0.0 : -std::ldexp(1.0, bits - 1);
    double hi = to.is_unsigned() ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
    llvm::Type* ft = v->getType();
    llvm::Value* x = b_.CreateSelect(b_.CreateFCmpORD(v, v), v, llvm::ConstantFP::get(ft, 0.0));
    llvm::Value* l = llvm::ConstantFP::get(ft, lo);
    llvm::Value* h = llvm::ConstantFP::get(ft, hi);
    x = b_.CreateSelect(b_.CreateFCmpOLT(x, l), l, x);
    x = b_.CreateSelect(b_.CreateFCmpOLT(h, x), h, x);
    llvm::Type* i32 = ty(dtypes::int32.vec(to.lanes));
    return b_.CreateTrunc(b_.CreateFPToSI(x, i32), ty(to));
  }

  llvm::Value* bitcast(DType, DType to, llvm::Value* v) { return b_.CreateBitCast(v, ty(to)); }

  // ---------------------------------------------------------------- entry

  llvm::Function* make_entry(const std::string& name, size_t nargs) {
    auto* fty = llvm::FunctionType::get(
        b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty(), b_.getInt32Ty()}, false);
    auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("no-builtins");
    llvm::IRBuilder<> eb(llvm::BasicBlock::Create(c_, "entry", f));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < nargs; ++i) {
      llvm::Value* slot = eb.CreateConstInBoundsGEP1_64(eb.getPtrTy(), f->getArg(0), i);
      args.push_back(eb.CreateLoad(eb.getPtrTy(), slot));
    }
    args.push_back(f->getArg(1));
    args.push_back(f->getArg(2));
    args.push_back(f->getArg(3));
    eb.CreateCall(fn_, args);
    eb.CreateRetVoid();
    fn_->addFnAttr(llvm::Attribute::AlwaysInline);
    return f;
  }

  struct Loop {
    const UOp* range;
    llvm::PHINode* iv;
    llvm::BasicBlock* header;
    llvm::BasicBlock* exit;
  };

  WeightPrefetch prefetch_;
  llvm::Module& m_;
  llvm::LLVMContext& c_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_bb_ = nullptr;
  llvm::Value* vars_ = nullptr;
  llvm::Value* task_ = nullptr;
  llvm::Value* ntasks_ = nullptr;
  llvm::Type* idx_ = nullptr;
  std::unordered_map<const UOp*, llvm::Value*> vals_;
  std::unordered_map<const UOp*, llvm::AllocaInst*> accs_;
  std::vector<Loop> loops_;
};

}  // namespace

KernelFunctions emit_kernel(llvm::Module& m, const CodegenKernel& kernel) {
  return Emitter(m).run(kernel);
}

}  // namespace kiln
