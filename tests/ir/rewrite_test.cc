#include "compiler/ir/rewrite.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln {
namespace {

class Rewrite : public ::testing::Test {
 protected:
  Context ctx_;
  const UOp* x_ = ctx_.variable("x", 0, 9);
  const UOp* y_ = ctx_.variable("y", 0, 9);
  const UOp* c(int64_t v) { return ctx_.const_index(v); }
};

// x + 0 -> x and c1 + c2 -> c: needs the sources rewritten first to fold fully.
PatternMatcher fold_adds() {
  return PatternMatcher(
      "pm_fold_adds",
      {{Pat::op(Op::ADD, {Pat::any("a"), Pat::cint(0)}), [](const Match& m) { return m["a"]; }},
       {Pat::op(Op::ADD, {Pat::cvar("a"), Pat::cvar("b")}), [](const Match& m) {
          return m.root()->ctx()->const_index(m["a"]->cval().i + m["b"]->cval().i);
        }}});
}

TEST_F(Rewrite, BottomUpRewritesSourcesFirstThenTheNodeToAFixpoint) {
  // (1 + 2) + -3: the inner add folds to 3 first, then 3 + -3 folds to 0.
  const UOp* e = c(1)->add(c(2))->add(c(-3));
  EXPECT_EQ(graph_rewrite(e, fold_adds()), c(0));
  const UOp* e2 = x_->add(c(1)->add(c(-1)));  // x + (1 + -1) -> x + 0 -> x
  EXPECT_EQ(graph_rewrite(e2, fold_adds()), x_);
}

TEST_F(Rewrite, ResultsOfRulesAreRewrittenCompletely) {
  // A rule that produces a node with foldable sources: x*2 -> (x + 0) + (x + 0)... -> x + x
  PatternMatcher pm("pm_double",
                    {{Pat::op(Op::MUL, {Pat::any("a"), Pat::cint(2)}), [](const Match& m) {
                        const UOp* a0 = m["a"]->add(m.root()->ctx()->const_index(0));
                        return a0->add(a0);
                      }}});
  PatternMatcher both = pm + fold_adds();
  EXPECT_EQ(graph_rewrite(x_->mul(c(2)), both), x_->add(x_));
}

TEST_F(Rewrite, TopDownSeesTheNodeBeforeItsSources) {
  // Rule: ADD(ADD(a, b), c) -> MUL(a, c). Bottom-up would first rewrite the inner ADD with the
  // second rule (ADD(a, b) -> b); top-down applies the outer rule first.
  PatternMatcher pm(
      "pm_order",
      {{Pat::op(Op::ADD, {Pat::op(Op::ADD, {Pat::any("a"), Pat::any()}), Pat::any("c")}),
        [](const Match& m) { return m["a"]->mul(m["c"]); }},
       {Pat::op(Op::ADD, {Pat::op(Op::DEFINE_VAR), Pat::any("b")}),
        [](const Match& m) { return m["b"]; }}});
  const UOp* e = x_->add(y_)->add(c(5));
  EXPECT_EQ(graph_rewrite(e, pm, {RewriteMode::TopDown}), x_->mul(c(5)));
  // Bottom-up: x+y -> y first, then y+5 -> 5.
  EXPECT_EQ(graph_rewrite(e, pm, {RewriteMode::BottomUp}), c(5));
}

TEST_F(Rewrite, TopDownRewritesARebuiltNodeAgain) {
  // Sources change (x+0 -> x), after which the parent matches a rule it did not match before.
  PatternMatcher pm =
      fold_adds() +
      PatternMatcher("pm_mul",
                     {{Pat::op(Op::MUL, {Pat::op(Op::DEFINE_VAR).bind("v"), Pat::cint(1)}),
                       [](const Match& m) { return m["v"]; }}});
  const UOp* e = x_->add(c(0))->mul(c(1));
  EXPECT_EQ(graph_rewrite(e, pm, {RewriteMode::TopDown}), x_);
}

TEST_F(Rewrite, SharedSubgraphsAreRewrittenOnce) {
  int calls = 0;
  PatternMatcher pm("pm_count", {{Pat::op(Op::DEFINE_VAR), [&](const Match&) -> const UOp* {
                                    ++calls;
                                    return nullptr;
                                  }}});
  const UOp* shared = x_->add(c(1));
  const UOp* e = shared->mul(shared)->add(shared);
  graph_rewrite(e, pm);
  EXPECT_EQ(calls, 1);
  // The shared node stays shared after a rewrite that changes it.
  const UOp* r = graph_rewrite(x_->add(c(0))->mul(x_->add(c(0))), fold_adds());
  EXPECT_EQ(r, x_->mul(x_));
}

TEST_F(Rewrite, ACycleIsAnErrorNamingThePass) {
  // a+b -> b+a forever: each result is rewritten, leading back to the node being rewritten.
  PatternMatcher swap("pm_swap_forever", {{Pat::op(Op::ADD, {Pat::any("a"), Pat::any("b")}),
                                           [](const Match& m) { return m["b"]->add(m["a"]); }}});
  try {
    graph_rewrite(x_->add(y_), swap);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pm_swap_forever"), std::string::npos) << e.what();
  }
  try {
    graph_rewrite(x_->add(y_), swap, {RewriteMode::TopDown});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST_F(Rewrite, RunawayRewritingHitsTheBoundAndNamesThePass) {
  // Each result is a new node (a counter in its arg grows): no cycle, no fixpoint.
  PatternMatcher grow("pm_grow", {{Pat::op(Op::DEFINE_VAR),
                                   [](const Match& m) {
                                     return m.root()->ctx()->make(Op::NOOP, m.root()->dtype, {},
                                                                  m.root()->arg);
                                   }},
                                  {Pat::op(Op::NOOP), [](const Match& m) {
                                     // NOOP with a counter that increases forever
                                     const VarArg& v = m.root()->var();
                                     return m.root()->ctx()->make(Op::NOOP, m.root()->dtype, {},
                                                                  VarArg{v.name, v.min, v.max + 1});
                                   }}});
  try {
    graph_rewrite(x_, grow, {RewriteMode::BottomUp, 1000});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("pm_grow"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1000 rewrites"), std::string::npos) << msg;
  }
}

TEST_F(Rewrite, RuleReturningItsInputIsNoChange) {
  PatternMatcher same("pm_same", {{Pat::any(), [](const Match& m) { return m.root(); }}});
  const UOp* e = x_->add(y_);
  EXPECT_EQ(graph_rewrite(e, same), e);
  EXPECT_EQ(graph_rewrite(e, same, {RewriteMode::TopDown}), e);
}

TEST_F(Rewrite, SubstituteReplacesEverywhere) {
  const UOp* e = x_->add(x_->mul(y_));
  EXPECT_EQ(substitute(e, {{x_, c(3)}}), c(3)->add(c(3)->mul(y_)));
  EXPECT_EQ(substitute(e, {}), e);
}

TEST_F(Rewrite, DeepChainsRewriteWithoutRecursion) {
  const UOp* acc = x_;
  for (int i = 0; i < 100000; ++i) acc = acc->add(c(0));
  EXPECT_EQ(graph_rewrite(acc, fold_adds()), x_);
  EXPECT_EQ(graph_rewrite(acc, fold_adds(), {RewriteMode::TopDown}), x_);
}

}  // namespace
}  // namespace kiln
