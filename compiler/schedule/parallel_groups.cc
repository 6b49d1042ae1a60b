#include "compiler/schedule/parallel_groups.h"

#include <algorithm>
#include <deque>

#include "compiler/support/error.h"

namespace kiln {

namespace {

// Kahn's algorithm over `n` nodes and their edges: each node's level (the longest path to it).
std::vector<int> kahn_levels(size_t n, const std::vector<std::vector<int>>& users) {
  std::vector<int> indegree(n, 0), level(n, 0);
  for (const auto& us : users)
    for (int u : us) ++indegree[static_cast<size_t>(u)];
  std::deque<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
  size_t seen = 0;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    ++seen;
    for (int u : users[static_cast<size_t>(i)]) {
      level[static_cast<size_t>(u)] =
          std::max(level[static_cast<size_t>(u)], level[static_cast<size_t>(i)] + 1);
      if (--indegree[static_cast<size_t>(u)] == 0) ready.push_back(u);
    }
  }
  KILN_CHECK(seen == n, "the kernel graph has a cycle");
  return level;
}

}  // namespace

void parallel_groups(Plan& plan) {
  const size_t n = plan.launches.size(), nloops = plan.loops.size();
  // The launches that write each buffer, in launch order (several for a concatenation whose
  // parts store into it, or a loop's state: its initial value and its carry).
  std::vector<std::vector<int>> writers(plan.buffers.size());
  for (size_t i = 0; i < n; ++i)
    writers[static_cast<size_t>(plan.launches[i].args.at(0))].push_back(static_cast<int>(i));
  // The outer DAG: a node per launch outside every loop, and one per loop standing for its
  // whole body (node n + loop). A reader depends on every writer of what it reads; the writers
  // of one buffer run in a chain, one per group (the runtime refuses a slot written twice in
  // one group). Inside a loop the same rules order its body, except that a state's carry, which
  // writes it for the next iteration, runs after everything else in the body.
  auto node = [&](int launch) {
    int l = plan.launches[static_cast<size_t>(launch)].loop;
    return l < 0 ? launch : static_cast<int>(n) + l;
  };
  std::vector<std::vector<int>> outer(n + nloops), inner(n);
  auto edge = [&](int from, int to) {
    int a = node(from), b = node(to);
    if (a != b) {
      outer[static_cast<size_t>(a)].push_back(b);
    } else if (a >= static_cast<int>(n) && !plan.launches[static_cast<size_t>(from)].carry &&
               !plan.launches[static_cast<size_t>(to)].carry) {
      inner[static_cast<size_t>(from)].push_back(to);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const auto& args = plan.launches[i].args;
    for (size_t a = 1; a < args.size(); ++a) {
      KILN_CHECK(args[a] != args[0], "launch ", i, " reads the buffer ", plan.buffer(args[0]).name,
                 " it writes");
      for (int w : writers[static_cast<size_t>(args[a])]) edge(w, static_cast<int>(i));
    }
  }
  for (const std::vector<int>& w : writers)
    for (size_t k = 1; k < w.size(); ++k) edge(w[k - 1], w[k]);
  // A size computed from data is read by the runtime after its writer's group: every launch
  // whose kernel reads its symbol comes later.
  std::vector<std::vector<int64_t>> reads(plan.programs.size());
  for (size_t p = 0; p < plan.programs.size() && !plan.counts.empty(); ++p)
    for (const UOp* u : plan.programs[p].ast->toposort())
      if (u->op == Op::DEFINE_VAR) reads[p].push_back(u->var().slot);
  for (const PlanCount& c : plan.counts)
    for (int w : writers[static_cast<size_t>(c.buffer)])
      for (size_t i = 0; i < n; ++i) {
        const auto& r = reads[static_cast<size_t>(plan.launches[i].program)];
        if (std::find(r.begin(), r.end(), c.symbol) != r.end()) edge(w, static_cast<int>(i));
      }
  // The runtime reads a loop's trip count when the loop starts.
  for (size_t l = 0; l < nloops; ++l)
    if (int t = plan.loops[l].trips; t >= 0)
      for (int w : writers[static_cast<size_t>(t)])
        if (node(w) != static_cast<int>(n + l))
          outer[static_cast<size_t>(node(w))].push_back(static_cast<int>(n + l));
  std::vector<int> level = kahn_levels(n + nloops, outer);
  std::vector<int> body_level = kahn_levels(n, inner);
  int max_level = -1;
  for (size_t i = 0; i < n; ++i)
    if (plan.launches[i].loop < 0) max_level = std::max(max_level, level[i]);
  for (size_t l = 0; l < nloops; ++l) max_level = std::max(max_level, level[n + l]);
  // Groups level by level: the level's launches, then each loop of the level as its body's
  // groups (by body level; the carries last).
  std::vector<Launch> ordered;
  std::vector<int> group_of(n, -1);
  plan.groups.clear();
  auto emit = [&](const std::vector<int>& launches) {
    if (launches.empty()) return;
    std::vector<int> ids;
    for (int i : launches) {
      ids.push_back(static_cast<int>(ordered.size()));
      ordered.push_back(plan.launches[static_cast<size_t>(i)]);
      group_of[static_cast<size_t>(i)] = static_cast<int>(plan.groups.size());
    }
    plan.groups.push_back(ids);
  };
  for (int lv = 0; lv <= max_level; ++lv) {
    std::vector<int> here;
    for (size_t i = 0; i < n; ++i)
      if (plan.launches[i].loop < 0 && level[i] == lv) here.push_back(static_cast<int>(i));
    emit(here);
    for (size_t l = 0; l < nloops; ++l) {
      if (level[n + l] != lv) continue;
      PlanLoop& loop = plan.loops[l];
      std::vector<std::vector<int>> body;
      std::vector<int> carries;
      for (size_t i = 0; i < n; ++i) {
        const Launch& li = plan.launches[i];
        if (li.loop != static_cast<int>(l)) continue;
        if (li.carry) {
          carries.push_back(static_cast<int>(i));
          continue;
        }
        size_t b = static_cast<size_t>(body_level[i]);
        if (body.size() <= b) body.resize(b + 1);
        body[b].push_back(static_cast<int>(i));
      }
      body.push_back(carries);
      loop.first_group = static_cast<int>(plan.groups.size());
      for (const auto& g : body) emit(g);
      // A body with nothing to run still takes a group: the runtime counts its iterations.
      if (static_cast<int>(plan.groups.size()) == loop.first_group) plan.groups.push_back({});
      loop.last_group = static_cast<int>(plan.groups.size()) - 1;
    }
  }
  for (PlanCount& c : plan.counts) {
    const auto& w = writers[static_cast<size_t>(c.buffer)];
    KILN_CHECK(w.size() == 1 && plan.launches[static_cast<size_t>(w[0])].loop < 0, c.name,
               ": a computed size needs one writer outside every loop");
    c.group = group_of[static_cast<size_t>(w[0])];
  }
  plan.launches = std::move(ordered);
}

}  // namespace kiln
