#include "compiler/jit/kernel_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "compiler/jit/jit.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"

namespace kiln {

namespace {

// One kernel's argument buffers, 64-byte aligned.
struct Buffers {
  std::vector<std::vector<uint8_t>> store;
  std::vector<void*> ptrs;
  std::vector<DType> dtypes;
  std::vector<int64_t> counts;
};

Buffers make_buffers(const UOp* ast) {
  Buffers b;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::DEFINE_GLOBAL) continue;
    size_t i = static_cast<size_t>(u->iarg());
    if (b.dtypes.size() <= i) {
      b.dtypes.resize(i + 1);
      b.counts.resize(i + 1, 0);
    }
    b.dtypes[i] = u->dtype.base();
    b.counts[i] = std::max<int64_t>(1, u->dtype.ptr_size);
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (size_t i = 0; i < b.dtypes.size(); ++i) {
    size_t bytes = static_cast<size_t>(b.counts[i] * b.dtypes[i].itemsize());
    b.store.emplace_back(bytes + 64, 0);
    uint8_t* p = b.store.back().data();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    if (b.dtypes[i].scalar == ScalarKind::Float32)
      for (int64_t k = 0; k < b.counts[i]; ++k) reinterpret_cast<float*>(p)[k] = uni(rng);
    b.ptrs.push_back(p);
  }
  return b;
}

bool same_output(const Buffers& buf, const std::vector<uint8_t>& reference,
                 const std::vector<uint8_t>& out) {
  if (buf.dtypes[0].scalar != ScalarKind::Float32) return out == reference;
  const float* a = reinterpret_cast<const float*>(reference.data());
  const float* b = reinterpret_cast<const float*>(out.data());
  double scale = 0;
  for (int64_t e = 0; e < buf.counts[0]; ++e) scale = std::max(scale, std::fabs(double(a[e])));
  for (int64_t e = 0; e < buf.counts[0]; ++e)
    if (std::fabs(double(a[e]) - double(b[e])) > 1e-4 * scale + 1e-6) return false;
  return true;
}

std::vector<std::optional<double>> time_candidates(const KernelProgram& p, const TargetInfo& host,
                                                   const std::vector<std::vector<Opt>>& cands) {
  std::vector<LoweredKernel> lowered;
  std::vector<size_t> index;  // candidate -> lowered
  std::vector<int64_t> ntasks;
  for (size_t i = 0; i < cands.size(); ++i) {
    try {
      OptimizedKernel k = apply_opts(p.ast, cands[i]);
      lowered.push_back(lower_kernel(p.name + "_t" + std::to_string(i), p.ast, k, host));
      ntasks.push_back(k.ntasks);
      index.push_back(lowered.size() - 1);
    } catch (const Error&) {
      index.push_back(SIZE_MAX);  // not valid for this kernel (refused, or not lowerable)
    }
  }
  std::vector<CodegenKernel> code;
  for (const LoweredKernel& k : lowered) code.push_back(k.codegen);
  JitKernels jit(code, host);

  Buffers buf = make_buffers(p.ast);
  // A kernel with symbolic sizes is timed at their upper bounds (the plan's worst case).
  std::vector<int64_t> vars;
  for (const UOp* u : p.ast->toposort())
    if (u->op == Op::DEFINE_VAR) {
      size_t slot = static_cast<size_t>(u->var().slot);
      if (vars.size() <= slot) vars.resize(slot + 1, 0);
      vars[slot] = u->var().max;
    }
  vars.push_back(0);  // never empty: data() is a valid pointer
  size_t out_bytes = static_cast<size_t>(buf.counts[0] * buf.dtypes[0].itemsize());
  uint8_t* out = static_cast<uint8_t*>(buf.ptrs[0]);
  std::vector<uint8_t> reference;
  std::vector<std::optional<double>> ms(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    if (index[i] == SIZE_MAX) continue;
    const FfiKernel& fn = jit.kernel(index[i]);
    uint32_t n = static_cast<uint32_t>(ntasks[index[i]]);
    auto run_once = [&] {
      for (uint32_t task = 0; task < n; ++task) fn.call(buf.ptrs, vars.data(), task, n);
    };
    std::memset(out, 0, out_bytes);
    run_once();  // warm-up, and the output to check
    std::vector<uint8_t> got(out, out + out_bytes);
    if (i == 0)
      reference = got;
    else if (!same_output(buf, reference, got))
      continue;  // a wrong kernel is no candidate
    double best = 1e30, total = 0;
    for (int r = 0; r < 10 && (r < 3 || total < 20.0); ++r) {
      auto t0 = std::chrono::steady_clock::now();
      run_once();
      double t =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, t);
      total += t;
    }
    ms[i] = best;
  }
  return ms;
}

}  // namespace

CandidateTimer jit_candidate_timer(const TargetInfo& host) {
  return [&host](const KernelProgram& p, const std::vector<std::vector<Opt>>& cands) {
    return time_candidates(p, host, cands);
  };
}

}  // namespace kiln
