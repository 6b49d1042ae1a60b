#include "compiler/jit/tuner.h"


#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "compiler/codegen/llvm/target.h"
#include "compiler/codegen/lower_kernels.h"
#include "compiler/jit/jit.h"
#include "compiler/opt/heuristics.h"
#include "compiler/opt/tuning_cache.h"
#include "compiler/support/error.h"
#include "compiler/support/sha256.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

std::string target_id(const Target& t) {
  // Triple and CPU, readable; the feature list by a digest (short, stable across builds).
  Sha256 h;
  for (const std::string& f : t.features()) {
    h.update(f);
    h.update(",");
  }
  return t.triple() + "/" + t.cpu() + "/" + Sha256::hex(h.finish()).substr(0, 16);
}

namespace {

bool is_contraction_kernel(const UOp* ast) {
  for (const UOp* u : ast->toposort())
    if (u->op == Op::REDUCE && u->op_arg() == Op::ADD && u->src[0]->op == Op::MUL) return true;
  return false;
}

// Argument buffers for timing: floats random in [-1, 1], integers zero (safe as indices).
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

struct Candidate {
  std::vector<Opt> opts;
  double ms = 0;
  bool ok = false;
};

// Compiles every candidate of one kernel into one JIT module, runs each on the same buffers,
// checks its output against candidate 0 (the heuristic's) and records its time.
void time_candidates(const KernelProgram& p, const Target& host, std::vector<Candidate>& cands) {
  std::vector<LoweredKernel> lowered;
  std::vector<size_t> index;  // candidate -> lowered
  for (size_t i = 0; i < cands.size(); ++i) {
    try {
      lowered.push_back(lower_kernel(p.name + "_t" + std::to_string(i), p.ast, cands[i].opts));
      index.push_back(lowered.size() - 1);
    } catch (const Error&) {
      index.push_back(SIZE_MAX);  // not valid for this kernel
    }
  }
  JitKernels jit(lowered, host);

  Buffers buf = make_buffers(p.ast);
  size_t out_bytes = static_cast<size_t>(buf.counts[0] * buf.dtypes[0].itemsize());
  std::vector<uint8_t> reference;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (index[i] == SIZE_MAX) continue;
    const LoweredKernel& k = lowered[index[i]];
    const FfiKernel& fn = jit.kernel(index[i]);
    uint32_t ntasks = static_cast<uint32_t>(k.optimized.ntasks);
    auto run_once = [&] {
      for (uint32_t task = 0; task < ntasks; ++task) fn.call(buf.ptrs, task, ntasks);
    };
    std::memset(buf.ptrs[0], 0, out_bytes);
    run_once();  // warm-up, and the output to check
    std::vector<uint8_t> out(static_cast<uint8_t*>(buf.ptrs[0]), static_cast<uint8_t*>(buf.ptrs[0]) + out_bytes);
    if (i == 0) {
      reference = out;
    } else if (buf.dtypes[0].scalar == ScalarKind::Float32) {
      const float* a = reinterpret_cast<const float*>(reference.data());
      const float* b = reinterpret_cast<const float*>(out.data());
      double scale = 0;
      for (int64_t e = 0; e < buf.counts[0]; ++e) scale = std::max(scale, std::fabs(double(a[e])));
      bool same = true;
      for (int64_t e = 0; e < buf.counts[0] && same; ++e)
        same = std::fabs(double(a[e]) - double(b[e])) <= 1e-4 * scale + 1e-6;
      if (!same) continue;  // a wrong kernel is no candidate
    } else if (out != reference) {
      continue;
    }
    // The best of several runs, at least ~20 ms of runs in total.
    double best = 1e30, total = 0;
    for (int r = 0; r < 10 && (r < 3 || total < 20.0); ++r) {
      auto t0 = std::chrono::steady_clock::now();
      run_once();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, ms);
      total += ms;
    }
    cands[i].ms = best;
    cands[i].ok = true;
  }
}

std::vector<Candidate> unique(std::vector<Candidate> c) {
  std::vector<Candidate> out;
  for (Candidate& x : c)
    if (std::none_of(out.begin(), out.end(), [&](const Candidate& y) { return y.opts == x.opts; }))
      out.push_back(std::move(x));
  return out;
}

std::vector<Opt> search(const KernelProgram& p, const Target& host, int beam, TuneStats* st) {
  OptTarget base = opt_target(host);
  std::vector<Candidate> round1 = {{default_opts(p.ast, base)}};
  OptTarget no_window = base;  // the channel loop unrolled instead of a 3x3 window
  no_window.unroll_window = false;
  round1.push_back({default_opts(p.ast, no_window)});
  int max_acc = std::max(4, base.vector_registers - 4);
  for (int lane_choice : {0, 1})
    for (int lv : {1, 2, 4})
      for (int acc : {4, 8, 12, 16, 24})
        if (acc <= max_acc) {
          OptTarget t = base;
          t.lane_choice = lane_choice;
          t.lane_vectors = lv;
          t.accumulators = acc;
          round1.push_back({default_opts(p.ast, t)});
        }
  round1 = unique(std::move(round1));
  time_candidates(p, host, round1);
  st->candidates += static_cast<int>(round1.size());
  // The beam: the fastest tiles, refined by the reduce unroll.
  std::vector<OptTarget> knobs;
  std::vector<Candidate> ranked;
  for (const Candidate& c : round1)
    if (c.ok) ranked.push_back(c);
  std::sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) { return a.ms < b.ms; });
  if (ranked.empty()) return round1[0].opts;
  std::vector<Candidate> round2 = {round1[0]};  // the heuristic again: the reference
  for (size_t b = 0; b < ranked.size() && static_cast<int>(b) < beam; ++b)
    for (int unroll : {1, 2, 8}) {
      std::vector<Opt> o = ranked[b].opts;
      bool changed = false;
      for (Opt& x : o)
        if (x.kind == OptKind::Unroll) {
          x.amount = unroll;
          changed = true;
        }
      if (!changed) continue;
      o.erase(std::remove_if(o.begin(), o.end(), [](const Opt& x) { return x.kind == OptKind::Unroll && x.amount == 1; }),
              o.end());
      round2.push_back({o});
    }
  round2 = unique(std::move(round2));
  if (round2.size() > 1) {
    time_candidates(p, host, round2);
    st->candidates += static_cast<int>(round2.size()) - 1;
    for (size_t i = 1; i < round2.size(); ++i)
      if (round2[i].ok) ranked.push_back(round2[i]);
    std::sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) { return a.ms < b.ms; });
  }
  const Candidate& heuristic = round1[0];
  // Keep the heuristic unless a candidate is clearly (3%) faster: timing noise is not a win.
  if (heuristic.ok && ranked[0].ms > 0.97 * heuristic.ms) return heuristic.opts;
  if (ranked[0].opts != heuristic.opts) ++st->improved;
  return ranked[0].opts;
}

}  // namespace

std::map<std::string, std::vector<Opt>> tune_plan(const Plan& plan, const Target& t,
                                                  const TuneOptions& o, TuneStats* stats) {
  TuneStats local;
  TuneStats* st = stats ? stats : &local;
  if (o.beam > 0 && !t.is_host())
    throw Error("--beam times kernels on this machine: it needs the host target (use a tuning cache "
                "made on the device's kind of CPU for other targets)");
  std::map<std::string, std::vector<Opt>> chosen;
  std::string tid = target_id(t);
  size_t done = 0;
  for (const KernelProgram& p : plan.programs) {
    ++done;
    if (!is_contraction_kernel(p.ast)) continue;
    ++st->kernels;
    std::string key = tuning_key(p.ast, tid);
    if (o.cache)
      if (auto hit = o.cache->find(key)) {
        try {
          apply_opts(p.ast, *hit);  // still valid for this kernel
          chosen[p.name] = *hit;
          ++st->from_cache;
          continue;
        } catch (const Error&) {
        }
      }
    if (o.beam <= 0) continue;
    if (o.times) o.times->starting("beam", str_cat(p.name, " (", done, "/", plan.programs.size(), ")"));
    std::vector<Opt> best = search(p, t, o.beam, st);
    ++st->searched;
    chosen[p.name] = best;
    if (o.cache) o.cache->put(key, best);
  }
  return chosen;
}

}  // namespace kiln
