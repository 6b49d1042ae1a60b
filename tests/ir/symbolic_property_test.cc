// Property test of the simplifier: random integer index expressions over bounded variables,
// simplified and checked exhaustively (every assignment of the variables in their bounds) for
// an unchanged value, and for a result never larger than the input (expr_size).
#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/printer.h"
#include "compiler/ir/symbolic.h"
#include "tests/ir/expr_eval.h"

namespace kiln {
namespace {

class Gen {
 public:
  Gen(Context& ctx, uint64_t seed) : ctx_(ctx), rng_(seed) {
    // Variables: two loop ranges and two symbolic variables, one of which may be negative.
    vars_.push_back(ctx.range(pick(1, 9), 0));
    vars_.push_back(ctx.range(pick(1, 9), 1));
    vars_.push_back(ctx.variable("a", pick(-4, 2), pick(2, 8)));
    vars_.push_back(ctx.variable("b", pick(1, 3), pick(3, 7)));  // strictly positive: a divisor
  }

  const UOp* expr(int depth) {
    if (depth == 0 || pick(0, 9) < 2) return leaf();
    switch (pick(0, 11)) {
      case 0:
      case 1:
        return expr(depth - 1)->add(expr(depth - 1));
      case 2:
        return expr(depth - 1)->mul(cnst(-3, 6));
      case 3:
        return expr(depth - 1)->mul(expr(depth - 1));
      case 4:
        return expr(depth - 1)->idiv(cnst(1, 9));
      case 5:
        return expr(depth - 1)->mod(cnst(1, 9));
      case 6:
        return pick(0, 1) ? expr(depth - 1)->idiv(vars_[3]) : expr(depth - 1)->mod(vars_[3]);
      case 7:
        return cond(depth - 1)->where(expr(depth - 1), expr(depth - 1));
      case 8:
        return expr(depth - 1)->maximum(expr(depth - 1));
      case 9:
        return expr(depth - 1)->minimum(expr(depth - 1));
      case 10:
        return expr(depth - 1)->add(cnst(-5, 5));
      default:
        return expr(depth - 1)->mul(int64_t{pick(1, 4)})->add(expr(depth - 1));
    }
  }

  const UOp* cond(int depth) {
    switch (pick(0, 5)) {
      case 0:
        return expr(depth)->lt(expr(depth));
      case 1:
        return expr(depth)->lt(cnst(-3, 12));
      case 2:
        return expr(depth)->ne(cnst(-2, 6));
      case 3:
        return cond(depth > 0 ? depth - 1 : 0)->logical_and(cond(0));
      case 4:
        return cond(depth > 0 ? depth - 1 : 0)->logical_not();
      default:
        return expr(depth)->eq(expr(0));
    }
  }

  const std::vector<const UOp*>& vars() const { return vars_; }
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  const UOp* leaf() { return pick(0, 4) == 0 ? cnst(-4, 10) : vars_[pick(0, 3)]; }
  const UOp* cnst(int64_t lo, int64_t hi) { return ctx_.const_index(pick(lo, hi)); }

  Context& ctx_;
  std::mt19937_64 rng_;
  std::vector<const UOp*> vars_;
};

// Calls f(env) for every assignment of the variables within their bounds.
template <typename F>
void for_all(const std::vector<const UOp*>& vars, F&& f) {
  testing::Env env;
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == vars.size()) return f(env);
    for (int64_t v = vars[i]->vmin(); v <= vars[i]->vmax(); ++v) {
      env[vars[i]] = v;
      rec(i + 1);
    }
  };
  rec(0);
}

TEST(SymbolicProperty, TenThousandRandomExpressionsKeepTheirValueAndDoNotGrow) {
  constexpr int kExpressions = 10000;
  int simplified_smaller = 0;
  for (int i = 0; i < kExpressions; ++i) {
    Context ctx;
    Gen g(ctx, 0x5EED0000ull + static_cast<uint64_t>(i));
    const UOp* e = g.pick(0, 3) == 0 ? g.cond(3) : g.expr(4);
    const UOp* s = simplify(e);
    ASSERT_LE(expr_size(s), expr_size(e))
        << "seed " << i << ": grew\n  in:  " << render(e) << "\n  out: " << render(s);
    if (expr_size(s) < expr_size(e)) ++simplified_smaller;
    for_all(g.vars(), [&](const testing::Env& env) {
      ConstValue a = testing::eval_expr(e, env);
      ConstValue b = testing::eval_expr(s, env);
      if (a.i != b.i) {
        std::string where;
        for (const UOp* v : g.vars()) where += " " + render(v) + "=" + std::to_string(env.at(v));
        FAIL() << "seed " << i << ": value changed at" << where << ": " << a.i << " vs " << b.i
               << "\n  in:  " << render(e) << "\n  out: " << render(s);
      }
    });
    if (HasFatalFailure() || HasFailure()) return;
  }
  // The simplifier must actually simplify: most random expressions have something to fold.
  EXPECT_GT(simplified_smaller, kExpressions / 2);
  std::printf("simplified (strictly smaller): %d of %d\n", simplified_smaller, kExpressions);
}

}  // namespace
}  // namespace kiln
