#include "compiler/ir/symbolic.h"

#include <unordered_map>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic_internal.h"

namespace kiln {

namespace {
int rank(const UOp* u) {
  switch (u->op) {
    case Op::RANGE:
      return 0;
    case Op::DEFINE_VAR:
      return 1;
    case Op::TASK:
      return 2;
    case Op::CONST:
      return 100;
    default:
      return 10;
  }
}
}  // namespace

bool canonical_less(const UOp* a, const UOp* b) {
  if (a == b) return false;
  int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb;
  switch (a->op) {
    case Op::RANGE:
      if (a->range().id != b->range().id) return a->range().id < b->range().id;
      break;
    case Op::DEFINE_VAR:
      if (a->var().name != b->var().name) return a->var().name < b->var().name;
      break;
    default:
      if (a->op != b->op) return a->op < b->op;
      break;
  }
  return a->digest() < b->digest();
}

uint64_t expr_size(const UOp* u) {
  std::unordered_map<const UOp*, uint64_t> size;
  for (const UOp* n : u->toposort()) {
    uint64_t s = 1;
    for (const UOp* x : n->src) s = std::min<uint64_t>(s + size.at(x), uint64_t{1} << 62);
    size[n] = s;
  }
  return size.at(u);
}

const PatternMatcher& pm_constant_fold() {
  static const PatternMatcher pm("pm_constant_fold", symbolic::rules_constant_fold());
  return pm;
}

const PatternMatcher& pm_symbolic() {
  static const PatternMatcher pm = [] {
    std::vector<Rule> rules;
    for (auto group :
         {symbolic::rules_constant_fold, symbolic::rules_identities, symbolic::rules_arith,
          symbolic::rules_divmod, symbolic::rules_logic, symbolic::rules_valid}) {
      auto g = group();
      rules.insert(rules.end(), g.begin(), g.end());
    }
    return PatternMatcher("pm_symbolic", std::move(rules));
  }();
  return pm;
}

const UOp* simplify(const UOp* u) {
  return graph_rewrite(u, pm_symbolic());
}

}  // namespace kiln
