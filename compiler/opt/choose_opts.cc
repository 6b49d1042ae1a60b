#include "compiler/opt/choose_opts.h"

#include "compiler/opt/split_affinity.h"
#include "compiler/opt/tuning_cache.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"

namespace kiln {

namespace {

// Applies `opts`, dropping each opt the applier refuses (the proposal is the heuristics' or a
// cache's; legality is the applier's alone).
OptimizedKernel apply_accepted(const UOp* ast, std::vector<Opt> opts) {
  for (;;) {
    try {
      return apply_opts(ast, opts);
    } catch (const OptRefused& e) {
      opts.erase(opts.begin() + static_cast<std::ptrdiff_t>(e.index()));
    }
  }
}

// Beam search times kernels on this machine.
void check_beam_target(const TuningOptions& o, const TargetInfo& t) {
  if (o.beam > 0 && !t.is_host())
    throw OptionError(Option::Beam,
                      "beam search times kernels on this machine: it needs the host target "
                      "(for another target, use a tuning cache made on that kind of CPU)",
                      {Option::TuningCache});
}

// True when choose_opts takes the heuristics' proposal for `p` (not forced, cached or tuned).
bool chosen_by_heuristics(const KernelProgram& p, const TuningOptions& o) {
  if (o.forced && o.forced->count(p.name)) return false;
  if (o.opt_level == OptLevel::None) return false;
  return !((o.beam > 0 || o.cache) && is_contraction_kernel(p.ast));
}

}  // namespace

OptimizedKernel choose_opts(const KernelProgram& p, const TargetInfo& t, const TuningOptions& o,
                            TuneStats* stats) {
  TuneStats local;
  TuneStats* st = stats ? stats : &local;
  if (o.forced)
    if (auto it = o.forced->find(p.name); it != o.forced->end())
      return apply_opts(p.ast, it->second);
  if (o.opt_level == OptLevel::None) return apply_opts(p.ast, {});
  bool tuning = o.beam > 0 || o.cache;
  if (tuning && is_contraction_kernel(p.ast)) {
    check_beam_target(o, t);
    ++st->kernels;
    std::string key = tuning_key(p.ast, t.id());
    if (o.cache)
      if (auto hit = o.cache->find(key)) {
        try {
          OptimizedKernel k = apply_opts(p.ast, *hit);  // still valid for this kernel
          ++st->from_cache;
          return k;
        } catch (const OptRefused&) {
        }
      }
    if (o.beam > 0) {
      KILN_CHECK(o.timer, "beam search needs a candidate timer");
      BeamStats bs;
      std::vector<Opt> best = beam_search(p, opt_target(t, o.opt_level), o.beam, *o.timer, &bs);
      ++st->searched;
      st->candidates += bs.candidates;
      st->improved += bs.improved;
      if (o.cache) o.cache->put(key, best);
      return apply_opts(p.ast, best);
    }
  }
  return apply_accepted(p.ast, default_opts(p.ast, opt_target(t, o.opt_level)));
}

std::vector<OptimizedKernel> optimize_programs(const Plan& plan, const TargetInfo& t,
                                               const TuningOptions& o, TuneStats* stats) {
  check_beam_target(o, t);  // before any kernel is optimized
  std::vector<OptimizedKernel> out;
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    const KernelProgram& p = plan.programs[i];
    if (o.beam > 0 && o.times && is_contraction_kernel(p.ast))
      o.times->starting("optimize",
                        str_cat("beam ", p.name, " (", i + 1, "/", plan.programs.size(), ")"));
    out.push_back(choose_opts(p, t, o, stats));
  }
  std::vector<bool> heuristic;
  for (const KernelProgram& p : plan.programs) heuristic.push_back(chosen_by_heuristics(p, o));
  follow_producer_splits(plan, opt_target(t, o.opt_level), heuristic, out, o.threads);
  return out;
}

void set_launch_tasks(Plan& plan, const std::vector<OptimizedKernel>& kernels) {
  for (Launch& l : plan.launches) l.ntasks = kernels.at(static_cast<size_t>(l.program)).ntasks;
}

}  // namespace kiln
