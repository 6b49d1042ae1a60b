#include "compiler/opt/beam_search.h"

#include <algorithm>

namespace kiln {

namespace {

struct Candidate {
  std::vector<Opt> opts;
  double ms = 0;
  bool ok = false;
};

std::vector<Candidate> unique(std::vector<Candidate> c) {
  std::vector<Candidate> out;
  for (Candidate& x : c)
    if (std::none_of(out.begin(), out.end(), [&](const Candidate& y) { return y.opts == x.opts; }))
      out.push_back(std::move(x));
  return out;
}

// Times `cands` (candidate 0 is the reference the others must agree with).
void time_all(const KernelProgram& p, const CandidateTimer& timer, std::vector<Candidate>& cands) {
  std::vector<std::vector<Opt>> lists;
  for (const Candidate& c : cands) lists.push_back(c.opts);
  std::vector<std::optional<double>> ms = timer(p, lists);
  for (size_t i = 0; i < cands.size() && i < ms.size(); ++i) {
    cands[i].ok = ms[i].has_value();
    cands[i].ms = ms[i].value_or(0);
  }
}

void by_time(std::vector<Candidate>& c) {
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.ms < b.ms; });
}

}  // namespace

std::vector<Opt> beam_search(const KernelProgram& p, const OptTarget& base, int beam,
                             const CandidateTimer& timer, BeamStats* st) {
  std::vector<Candidate> round1 = {{default_opts(p.ast, base)}};
  OptTarget no_window = base;  // the channel loop unrolled instead of a 3x3 window
  no_window.unroll_window = false;
  round1.push_back({default_opts(p.ast, no_window)});
  OptTarget plain_order = base;  // the loops in their order, whatever L2 holds
  plain_order.stream_order = false;
  round1.push_back({default_opts(p.ast, plain_order)});
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
  time_all(p, timer, round1);
  st->candidates += static_cast<int>(round1.size());
  // The beam: the fastest tiles, refined by the reduce unroll.
  std::vector<Candidate> ranked;
  for (const Candidate& c : round1)
    if (c.ok) ranked.push_back(c);
  by_time(ranked);
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
      o.erase(
          std::remove_if(o.begin(), o.end(),
                         [](const Opt& x) { return x.kind == OptKind::Unroll && x.amount == 1; }),
          o.end());
      round2.push_back({o});
    }
  round2 = unique(std::move(round2));
  if (round2.size() > 1) {
    time_all(p, timer, round2);
    st->candidates += static_cast<int>(round2.size()) - 1;
    for (size_t i = 1; i < round2.size(); ++i)
      if (round2[i].ok) ranked.push_back(round2[i]);
    by_time(ranked);
  }
  const Candidate& heuristic = round1[0];
  if (heuristic.ok && ranked[0].ms > 0.97 * heuristic.ms) return heuristic.opts;
  if (ranked[0].opts != heuristic.opts) st->improved = true;
  return ranked[0].opts;
}

}  // namespace kiln
