// The pattern matcher: rewrites as data.
//
// A Pat matches a UOp by op (or op set), dtype class, argument and sources. Sources match
// in order, commutatively (either order, for two sources), as a repetition (every source matches
// one pattern), or are not examined. A named pattern captures the node it matched; a name used
// twice must bind the same node both times (structurally equal, since nodes are interned).
//
// A PatternMatcher is a named pass: an ordered list of (pattern, rewrite) rules. `rewrite(n)`
// tries the rules whose root op is n's op, in order, and returns the first non-null result of a
// rewrite function (nullptr if none applies). Passes are named `pm_<effect>`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/uop.h"

namespace kiln {

enum class DTypeClass : uint8_t { Any, Int, Float, Bool, Index, Exact };

class Pat {
 public:
  enum class SrcMode : uint8_t { Unchecked, Ordered, Commutative, Repeat };

  Pat() = default;  // matches any node

  Pat& bind(std::string name) {
    name_ = std::move(name);
    return *this;
  }
  Pat& dtype(DTypeClass c) {
    dclass_ = c;
    return *this;
  }
  Pat& dtype(DType d) {
    dclass_ = DTypeClass::Exact;
    exact_ = d;
    return *this;
  }
  Pat& arg(Arg a) {
    arg_ = std::move(a);
    return *this;
  }

  static Pat any(std::string name = "") { return Pat().bind(std::move(name)); }
  static Pat op(Op o) {
    Pat p;
    p.ops_ = OpSet{o};
    p.has_ops_ = true;
    return p;
  }
  static Pat op(OpSet s) {
    Pat p;
    p.ops_ = s;
    p.has_ops_ = true;
    return p;
  }
  // Sources in order.
  static Pat op(Op o, std::vector<Pat> src) {
    Pat p = op(o);
    p.mode_ = SrcMode::Ordered;
    p.src_ = std::move(src);
    return p;
  }
  static Pat op(OpSet s, std::vector<Pat> src) {
    Pat p = op(s);
    p.mode_ = SrcMode::Ordered;
    p.src_ = std::move(src);
    return p;
  }
  // Two sources in either order.
  static Pat comm(Op o, Pat a, Pat b) {
    Pat p = op(o);
    p.mode_ = SrcMode::Commutative;
    p.src_ = {std::move(a), std::move(b)};
    return p;
  }
  // Every source matches `each` (names in `each` must bind the same node every time).
  static Pat repeat(Op o, Pat each) {
    Pat p = op(o);
    p.mode_ = SrcMode::Repeat;
    p.src_ = {std::move(each)};
    return p;
  }
  // Any CONST (optionally of a dtype class).
  static Pat cvar(std::string name = "", DTypeClass c = DTypeClass::Any) {
    return op(Op::CONST).bind(std::move(name)).dtype(c);
  }
  // A CONST with the integer (or bool) value v.
  static Pat cint(int64_t v) { return op(Op::CONST).arg(ConstValue::of_int(v)); }

  bool match(const UOp* u, std::vector<std::pair<const std::string*, const UOp*>>& caps) const;

 private:
  bool match_dtype(DType d) const;
  bool match_src_ordered(const UOp* u, size_t first, size_t second,
                         std::vector<std::pair<const std::string*, const UOp*>>& caps) const;

  bool has_ops_ = false;
  OpSet ops_;
  DTypeClass dclass_ = DTypeClass::Any;
  DType exact_;
  std::optional<Arg> arg_;
  SrcMode mode_ = SrcMode::Unchecked;
  std::vector<Pat> src_;
  std::string name_;

  friend class PatternMatcher;
};

// The captures of one successful match.
class Match {
 public:
  Match(const UOp* root, const std::vector<std::pair<const std::string*, const UOp*>>& caps)
      : root_(root), caps_(caps) {}
  const UOp* root() const { return root_; }
  // The node bound to `name`; throws InternalError if the pattern has no such name.
  const UOp* operator[](const char* name) const;
  bool has(const char* name) const;

 private:
  const UOp* root_;
  const std::vector<std::pair<const std::string*, const UOp*>>& caps_;
};

using RewriteFn = std::function<const UOp*(const Match&)>;

struct Rule {
  Pat pat;
  RewriteFn fn;
};

class PatternMatcher {
 public:
  PatternMatcher(std::string name, std::vector<Rule> rules);
  const std::string& name() const { return name_; }
  // The first rule's non-null result, or nullptr.
  const UOp* rewrite(const UOp* u) const;
  // A matcher with the rules of both, this one's first.
  PatternMatcher operator+(const PatternMatcher& o) const;

 private:
  void index();
  std::string name_;
  std::vector<Rule> rules_;
  std::vector<std::vector<int>>
      by_op_;                  // rule indices per op (rules with an op set appear in each)
  std::vector<int> wildcard_;  // rules whose root matches any op
};

}  // namespace kiln
