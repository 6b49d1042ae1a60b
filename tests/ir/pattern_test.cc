#include "compiler/ir/pattern.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

using Caps = std::vector<std::pair<const std::string*, const UOp*>>;

class PatternTest : public ::testing::Test {
 protected:
  bool m(const Pat& p, const UOp* u) {
    caps_.clear();
    return p.match(u, caps_);
  }
  const UOp* cap(const char* name) { return Match(nullptr, caps_)[name]; }
  Context ctx_;
  Caps caps_;
  const UOp* x_ = ctx_.variable("x", 0, 9);
  const UOp* y_ = ctx_.variable("y", 0, 9);
};

TEST_F(PatternTest, OpAndOpSet) {
  const UOp* s = x_->add(y_);
  EXPECT_TRUE(m(Pat::op(Op::ADD), s));
  EXPECT_FALSE(m(Pat::op(Op::MUL), s));
  EXPECT_TRUE(m(Pat::op(OpSet{Op::MUL, Op::ADD}), s));
  EXPECT_TRUE(m(Pat::any("a"), s));
  EXPECT_EQ(cap("a"), s);
}

TEST_F(PatternTest, DTypeClasses) {
  const UOp* f = ctx_.const_float(dtypes::float32, 1.0);
  EXPECT_TRUE(m(Pat::any().dtype(DTypeClass::Float), f));
  EXPECT_FALSE(m(Pat::any().dtype(DTypeClass::Int), f));
  EXPECT_TRUE(m(Pat::any().dtype(DTypeClass::Index), x_));
  EXPECT_TRUE(m(Pat::any().dtype(dtypes::float32), f));
  EXPECT_FALSE(m(Pat::any().dtype(dtypes::float64), f));
  EXPECT_TRUE(m(Pat::any().dtype(DTypeClass::Bool), x_->lt(y_)));
}

TEST_F(PatternTest, OrderedSourcesAndArgs) {
  const UOp* s = x_->add(int64_t{3});
  EXPECT_TRUE(m(Pat::op(Op::ADD, {Pat::any("a"), Pat::cint(3)}), s));
  EXPECT_EQ(cap("a"), x_);
  EXPECT_FALSE(m(Pat::op(Op::ADD, {Pat::cint(3), Pat::any("a")}), s));
  EXPECT_FALSE(m(Pat::op(Op::ADD, {Pat::any(), Pat::cint(4)}), s));
  EXPECT_FALSE(m(Pat::op(Op::ADD, {Pat::any()}), s));  // source count must match
  const UOp* r = ctx_.range(8, 3, AxisKind::Reduce);
  EXPECT_TRUE(m(Pat::op(Op::RANGE).arg(RangeArg{3, AxisKind::Reduce}), r));
  EXPECT_FALSE(m(Pat::op(Op::RANGE).arg(RangeArg{3, AxisKind::Loop}), r));
}

TEST_F(PatternTest, CommutativeSourcesTryBothOrders) {
  Pat p = Pat::comm(Op::ADD, Pat::any("v"), Pat::cvar("c"));
  EXPECT_TRUE(m(p, x_->add(int64_t{3})));
  EXPECT_EQ(cap("v"), x_);
  EXPECT_TRUE(m(p, ctx_.const_index(3)->add(x_)));
  EXPECT_EQ(cap("v"), x_);
  EXPECT_EQ(cap("c"), ctx_.const_index(3));
  EXPECT_FALSE(m(p, x_->add(y_)));
}

TEST_F(PatternTest, CommutativeMatchUndoesCapturesOfTheFailedOrder) {
  // First order binds a=x then fails on the second source; the second order must start clean.
  Pat p = Pat::comm(Op::ADD, Pat::any("a"), Pat::op(Op::MUL, {Pat::any("a"), Pat::any()}));
  const UOp* s = x_->mul(y_)->add(y_);  // (x*y) + y: neither order has a == the MUL's first source
  EXPECT_FALSE(m(p, s));
  const UOp* t = y_->add(y_->mul(x_));
  EXPECT_TRUE(m(p, t));
  EXPECT_EQ(cap("a"), y_);
}

TEST_F(PatternTest, RepeatedNamesMustBindTheSameNode) {
  Pat same = Pat::op(Op::ADD, {Pat::any("x"), Pat::any("x")});
  EXPECT_TRUE(m(same, x_->add(x_)));
  EXPECT_FALSE(m(same, x_->add(y_)));
  // Interning makes structurally equal subtrees the same node.
  EXPECT_TRUE(m(same, x_->mul(int64_t{2})->add(x_->mul(int64_t{2}))));
}

TEST_F(PatternTest, RepeatMatchesEverySource) {
  const UOp* v = ctx_.make(Op::VECTORIZE, DType(ScalarKind::Index, 3), {x_, x_, x_});
  EXPECT_TRUE(m(Pat::repeat(Op::VECTORIZE, Pat::any("e")), v));
  EXPECT_EQ(cap("e"), x_);
  const UOp* v2 = ctx_.make(Op::VECTORIZE, DType(ScalarKind::Index, 2), {x_, y_});
  EXPECT_FALSE(m(Pat::repeat(Op::VECTORIZE, Pat::any("e")), v2));
  EXPECT_TRUE(m(Pat::repeat(Op::VECTORIZE, Pat::op(Op::DEFINE_VAR)), v2));
}

TEST_F(PatternTest, MatcherTriesRulesInOrderAndSkipsNullResults) {
  std::vector<int> tried;
  PatternMatcher pm("pm_test", {
                                   {Pat::op(Op::ADD),
                                    [&](const Match&) -> const UOp* {
                                      tried.push_back(1);
                                      return nullptr;  // declines
                                    }},
                                   {Pat::any(),
                                    [&](const Match& mm) -> const UOp* {
                                      tried.push_back(2);
                                      return mm.root()->op == Op::ADD ? ctx_.const_index(0)
                                                                      : nullptr;
                                    }},
                                   {Pat::op(Op::ADD),
                                    [&](const Match&) -> const UOp* {
                                      tried.push_back(3);
                                      return ctx_.const_index(1);
                                    }},
                               });
  EXPECT_EQ(pm.rewrite(x_->add(y_)), ctx_.const_index(0));
  EXPECT_EQ(tried, (std::vector<int>{1, 2}));
  tried.clear();
  EXPECT_EQ(pm.rewrite(x_), nullptr);  // only the wildcard rule is tried for a DEFINE_VAR
  EXPECT_EQ(tried, (std::vector<int>{2}));
}

}  // namespace
}  // namespace kiln
