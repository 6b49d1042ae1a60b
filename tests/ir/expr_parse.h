// Test helper: parses a small infix language into index UOps, so that simplifier cases read
// like the math they test. Grammar (lowest precedence first):
//   or: and ('|' and)*      and: cmp ('&' cmp)*     cmp: sum (('<'|'<='|'>'|'>='|'=='|'!=') sum)?
//   sum: prod (('+'|'-') prod)*   prod: unary (('*'|'//'|'%') unary)*
//   unary: '-' unary | '!' unary | atom
//   atom: INT | true | false | NAME | '(' or ')' | max(a,b) | min(a,b) | where(c,a,b)
// Names must be declared in the variable map (ranges or DEFINE_VARs).
#pragma once

#include <cctype>
#include <map>
#include <stdexcept>
#include <string>

#include "compiler/ir/uop.h"

namespace kiln::testing {

class ExprParser {
 public:
  ExprParser(Context& ctx, const std::map<std::string, const UOp*>& vars)
      : ctx_(ctx), vars_(vars) {}

  const UOp* parse(const std::string& s) {
    s_ = s;
    i_ = 0;
    const UOp* r = parse_or();
    skip();
    if (i_ != s_.size())
      throw std::runtime_error("trailing input in '" + s_ + "' at " + std::to_string(i_));
    return r;
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(const std::string& t) {
    skip();
    if (s_.compare(i_, t.size(), t) == 0) {
      i_ += t.size();
      return true;
    }
    return false;
  }
  void expect(const std::string& t) {
    if (!eat(t))
      throw std::runtime_error("expected '" + t + "' in '" + s_ + "' at " + std::to_string(i_));
  }
  const UOp* parse_or() {
    const UOp* a = parse_and();
    while (eat("|")) a = a->logical_or(parse_and());
    return a;
  }
  const UOp* parse_and() {
    const UOp* a = parse_cmp();
    while (eat("&")) a = a->logical_and(parse_cmp());
    return a;
  }
  const UOp* parse_cmp() {
    const UOp* a = parse_sum();
    if (eat("<=")) return parse_sum()->lt(a)->logical_not();
    if (eat(">=")) return a->lt(parse_sum())->logical_not();
    if (eat("==")) return a->eq(parse_sum());
    if (eat("!=")) return a->ne(parse_sum());
    if (eat("<")) return a->lt(parse_sum());
    if (eat(">")) return parse_sum()->lt(a);
    return a;
  }
  const UOp* parse_sum() {
    const UOp* a = parse_prod();
    for (;;) {
      if (eat("+"))
        a = a->add(parse_prod());
      else if (eat("-"))
        a = a->add(parse_prod()->mul(int64_t{-1}));
      else
        return a;
    }
  }
  const UOp* parse_prod() {
    const UOp* a = parse_unary();
    for (;;) {
      if (eat("*"))
        a = a->mul(parse_unary());
      else if (eat("//"))
        a = a->idiv(parse_unary());
      else if (eat("%"))
        a = a->mod(parse_unary());
      else
        return a;
    }
  }
  const UOp* parse_unary() {
    if (eat("-")) {
      skip();
      if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        return ctx_.const_index(-number());
      return parse_unary()->mul(int64_t{-1});
    }
    if (eat("!")) return parse_unary()->logical_not();
    return parse_atom();
  }
  int64_t number() {
    size_t st = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    return std::stoll(s_.substr(st, i_ - st));
  }
  const UOp* parse_atom() {
    skip();
    if (eat("(")) {
      const UOp* r = parse_or();
      expect(")");
      return r;
    }
    if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
      return ctx_.const_index(number());
    size_t st = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    std::string name = s_.substr(st, i_ - st);
    if (name.empty())
      throw std::runtime_error("expected an atom in '" + s_ + "' at " + std::to_string(i_));
    if (name == "true") return ctx_.const_bool(true);
    if (name == "false") return ctx_.const_bool(false);
    if (name == "max" || name == "min" || name == "where") {
      expect("(");
      const UOp* a = parse_or();
      expect(",");
      const UOp* b = parse_or();
      if (name == "where") {
        expect(",");
        const UOp* c = parse_or();
        expect(")");
        return a->where(b, c);
      }
      expect(")");
      return name == "max" ? a->maximum(b) : a->minimum(b);
    }
    auto it = vars_.find(name);
    if (it == vars_.end())
      throw std::runtime_error("unknown variable '" + name + "' in '" + s_ + "'");
    return it->second;
  }

  Context& ctx_;
  const std::map<std::string, const UOp*>& vars_;
  std::string s_;
  size_t i_ = 0;
};

}  // namespace kiln::testing
