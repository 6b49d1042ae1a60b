#include "compiler/ir/pattern.h"

#include <algorithm>

#include "compiler/support/error.h"

namespace kiln {

using Caps = std::vector<std::pair<const std::string*, const UOp*>>;

bool Pat::match_dtype(DType d) const {
  switch (dclass_) {
    case DTypeClass::Any:
      return true;
    case DTypeClass::Int:
      return d.is_int();
    case DTypeClass::Float:
      return d.is_float();
    case DTypeClass::Bool:
      return d.is_bool();
    case DTypeClass::Index:
      return d.is_index();
    case DTypeClass::Exact:
      return d == exact_;
  }
  return false;
}

bool Pat::match_src_ordered(const UOp* u, size_t first, size_t second, Caps& caps) const {
  return src_[0].match(u->src[first], caps) && src_[1].match(u->src[second], caps);
}

bool Pat::match(const UOp* u, Caps& caps) const {
  if (has_ops_ && !ops_.has(u->op)) return false;
  if (!match_dtype(u->dtype)) return false;
  if (arg_ && !(*arg_ == u->arg)) return false;
  const size_t mark = caps.size();
  auto fail = [&] {
    caps.resize(mark);
    return false;
  };
  if (!name_.empty()) {
    auto it =
        std::find_if(caps.begin(), caps.end(), [&](const auto& c) { return *c.first == name_; });
    if (it == caps.end())
      caps.emplace_back(&name_, u);
    else if (it->second != u)
      return false;  // a repeated name binds one node
  }
  switch (mode_) {
    case SrcMode::Unchecked:
      return true;
    case SrcMode::Ordered:
      if (u->src.size() != src_.size()) return fail();
      for (size_t i = 0; i < src_.size(); ++i)
        if (!src_[i].match(u->src[i], caps)) return fail();
      return true;
    case SrcMode::Commutative: {
      if (u->src.size() != 2) return fail();
      const size_t m2 = caps.size();
      if (match_src_ordered(u, 0, 1, caps)) return true;
      caps.resize(m2);
      if (match_src_ordered(u, 1, 0, caps)) return true;
      return fail();
    }
    case SrcMode::Repeat:
      for (const UOp* s : u->src)
        if (!src_[0].match(s, caps)) return fail();
      return true;
  }
  return fail();
}

const UOp* Match::operator[](const char* name) const {
  for (auto& [n, v] : caps_)
    if (*n == name) return v;
  throw InternalError(str_cat("pattern has no capture named '", name, "'"));
}

bool Match::has(const char* name) const {
  for (auto& [n, v] : caps_)
    if (*n == name) return true;
  return false;
}

PatternMatcher::PatternMatcher(std::string name, std::vector<Rule> rules)
    : name_(std::move(name)), rules_(std::move(rules)) {
  index();
}

void PatternMatcher::index() {
  by_op_.assign(kNumOps, {});
  wildcard_.clear();
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Pat& p = rules_[i].pat;
    if (!p.has_ops_) {
      wildcard_.push_back(static_cast<int>(i));
      continue;
    }
    for (int o = 0; o < kNumOps; ++o)
      if (p.ops_.has(static_cast<Op>(o))) by_op_[o].push_back(static_cast<int>(i));
  }
  // Keep each op's list in rule order, merged with the wildcards, so that rule order decides.
  for (auto& v : by_op_) {
    v.insert(v.end(), wildcard_.begin(), wildcard_.end());
    std::sort(v.begin(), v.end());
  }
}

const UOp* PatternMatcher::rewrite(const UOp* u) const {
  thread_local Caps caps;
  for (int i : by_op_[static_cast<int>(u->op)]) {
    caps.clear();
    const Rule& r = rules_[i];
    if (!r.pat.match(u, caps)) continue;
    // Copy: a rewrite function may itself run matchers (and reuse the thread_local).
    Caps mine = caps;
    if (const UOp* out = r.fn(Match(u, mine))) return out;
  }
  return nullptr;
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  std::vector<Rule> all = rules_;
  all.insert(all.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(name_ + "+" + o.name_, std::move(all));
}

}  // namespace kiln
