#include "compiler/schedule/parallel_groups.h"

#include <deque>

#include "compiler/support/error.h"

namespace kiln {

void parallel_groups(Plan& plan) {
  const size_t n = plan.launches.size();
  // The launches that write each buffer, in launch order (several for a concatenation whose
  // parts store into it).
  std::vector<std::vector<int>> writers(plan.buffers.size());
  for (size_t i = 0; i < n; ++i)
    writers[static_cast<size_t>(plan.launches[i].args.at(0))].push_back(static_cast<int>(i));
  // Kahn's algorithm over launch -> launch edges, computing each launch's level. A reader depends
  // on every writer of what it reads; the writers of one buffer run in a chain, one per group
  // (the runtime refuses a slot written twice in one group).
  std::vector<std::vector<int>> users(n);
  std::vector<int> indegree(n, 0), level(n, 0);
  auto edge = [&](int from, int to) {
    users[static_cast<size_t>(from)].push_back(to);
    ++indegree[static_cast<size_t>(to)];
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
  std::deque<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
  size_t seen = 0;
  int max_level = -1;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    ++seen;
    max_level = std::max(max_level, level[static_cast<size_t>(i)]);
    for (int u : users[static_cast<size_t>(i)]) {
      level[static_cast<size_t>(u)] =
          std::max(level[static_cast<size_t>(u)], level[static_cast<size_t>(i)] + 1);
      if (--indegree[static_cast<size_t>(u)] == 0) ready.push_back(u);
    }
  }
  KILN_CHECK(seen == n, "the kernel graph has a cycle");
  std::vector<std::vector<int>> groups(static_cast<size_t>(max_level + 1));
  for (size_t i = 0; i < n; ++i)
    groups[static_cast<size_t>(level[i])].push_back(static_cast<int>(i));
  // Reorder launches group by group and renumber.
  std::vector<Launch> ordered;
  plan.groups.clear();
  for (const auto& g : groups) {
    std::vector<int> ids;
    for (int i : g) {
      ids.push_back(static_cast<int>(ordered.size()));
      ordered.push_back(plan.launches[static_cast<size_t>(i)]);
    }
    plan.groups.push_back(ids);
  }
  plan.launches = std::move(ordered);
}

}  // namespace kiln
