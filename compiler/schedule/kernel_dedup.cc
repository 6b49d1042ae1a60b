#include "compiler/schedule/kernel_dedup.h"

#include <map>

namespace kiln {

void dedup_kernels(const std::vector<RangeifiedKernel>& kernels, Plan& plan) {
  std::map<Digest, int> by_digest;
  for (const RangeifiedKernel& k : kernels) {
    const Digest& d = k.ast->digest();
    auto it = by_digest.find(d);
    int program;
    if (it == by_digest.end()) {
      program = static_cast<int>(plan.programs.size());
      plan.programs.push_back({"k" + std::to_string(program), k.ast, d});
      by_digest.emplace(d, program);
    } else {
      program = it->second;
    }
    Launch l;
    l.program = program;
    l.args = k.args;
    l.what = k.what;
    l.origins = k.origins;
    l.loop = k.loop;
    l.carry = k.carry;
    plan.launches.push_back(std::move(l));
  }
}

}  // namespace kiln
