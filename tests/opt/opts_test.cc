// Kernel opts: validity checks, and that every opt is a pure range substitution (the optimized
// AST computes the same values, checked with the reference interpreter). The heuristics' choices
// are heuristics_test.cc's.
#include <gtest/gtest.h>

#include "compiler/codegen/expander.h"
#include "compiler/opt/opts.h"
#include "compiler/support/error.h"
#include "tests/opt/opt_plans.h"
#include "tests/schedule/random_graph.h"

namespace kiln {
namespace {

using testing::matmul_plan;

std::string opt_error(const UOp* ast, std::vector<Opt> opts) {
  try {
    apply_opts(ast, opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Opts, InvalidOptsAreRejectedWithAReason) {
  Graph g;
  Plan p = matmul_plan(g, 12, 10, 16);  // loops r0[12] r1[16], reduce r2[10]
  const UOp* ast = p.programs[0].ast;
  // An upcast may pad its range by up to a third of the lanes (16 as 2 x 13 would be 10 of 26).
  EXPECT_EQ(opt_error(ast, {{OptKind::Upcast, 1, 13}}),
            "opt UPCAST(r1,13): amount pads the range of 16 by more than a third");
  EXPECT_EQ(opt_error(ast, {{OptKind::Upcast, 1, 5}}), "");
  // Unrolls and tiles may not pad.
  EXPECT_EQ(opt_error(ast, {{OptKind::Unroll, 2, 3}}),
            "opt UNROLL(r2,3): amount does not divide the range size 10");
  EXPECT_EQ(opt_error(ast, {{OptKind::Tile, 1, 5}}),
            "opt TILE(r1,5): amount does not divide the range size 16");
  EXPECT_EQ(opt_error(ast, {{OptKind::Upcast, 2, 2}}),
            "opt UPCAST(r2,2): needs an output loop, r2 is reduce");
  // An output loop is unrolled whole, and only in a kernel without reductions.
  EXPECT_EQ(opt_error(ast, {{OptKind::Unroll, 0, 2}}),
            "opt UNROLL(r0,2): an output loop is unrolled whole (12)");
  EXPECT_EQ(opt_error(ast, {{OptKind::Unroll, 0, 12}}),
            "opt UNROLL(r0,12): an output loop of a kernel with reductions is not unrolled");
  EXPECT_EQ(opt_error(ast, {{OptKind::Parallel, 1, 2}}),
            "opt PARALLEL(r1,2): only the outermost loop can be split into tasks");
  EXPECT_EQ(opt_error(ast, {{OptKind::Upcast, 9, 2}}),
            "opt UPCAST(r9,2): the kernel has no range r9");
  EXPECT_EQ(opt_error(ast, {{OptKind::Tile, 1, 16}}),
            "opt TILE(r1,16): a tile as large as the range is no tile");
  EXPECT_EQ(
      opt_error(ast, {{OptKind::Upcast, 1, 8}, {OptKind::Unroll, 2, 5}, {OptKind::Parallel, 0, 4}}),
      "");
  Graph g2;
  Plan big = matmul_plan(g2, 16, 10, 32);
  EXPECT_EQ(opt_error(big.programs[0].ast, {{OptKind::Upcast, 1, 32}, {OptKind::Upcast, 0, 16}}),
            "opt UPCAST(r0,16): more than 288 upcast lanes in one kernel");
}

TEST(Opts, OptimizedKernelsComputeTheSameValues) {
  Graph g;
  Plan p = matmul_plan(g, 12, 10, 16);
  auto inputs = testing::random_inputs(g, 3);
  auto ref = interpret(p, g, inputs);
  std::vector<std::vector<Opt>> cases = {
      {{OptKind::Upcast, 1, 8}},
      {{OptKind::Upcast, 1, 4}, {OptKind::Upcast, 0, 3}, {OptKind::Unroll, 2, 5}},
      {{OptKind::Tile, 1, 4}, {OptKind::Unroll, 2, 2}},
      {{OptKind::Parallel, 0, 5}},
      {{OptKind::Upcast, 0, 4}, {OptKind::Parallel, 0, 3}, {OptKind::Upcast, 1, 16}},
      // Padded upcasts: 16 lanes as 4 groups of 5, 12 rows as one group of 16.
      {{OptKind::Upcast, 1, 5}, {OptKind::Unroll, 2, 2}},
      {{OptKind::Upcast, 0, 16}, {OptKind::Upcast, 1, 8}},
      // The streaming order: N's tiles outermost (TILE(r1, 1)), split into tasks.
      {{OptKind::Upcast, 0, 4},
       {OptKind::Upcast, 1, 8},
       {OptKind::Tile, 1, 1},
       {OptKind::Parallel, 1, 2}},
  };
  for (const auto& opts : cases) {
    Plan q = p;
    OptimizedKernel k = apply_opts(p.programs[0].ast, opts);
    q.programs[0].ast = k.ast;
    auto got = interpret(q, g, inputs);
    std::string what;
    for (const Opt& o : opts) what += o.str() + " ";
    EXPECT_TRUE(testing::arrays_close(ref.at("c"), got.at("c"))) << what;
  }
}

// UNROLL of an output loop: one copy of the store per iteration, each with the loop's value as a
// constant, so the gates that selected its expression fold (the expander, output_copies). The
// values stay the reference interpreter's.
TEST(Opts, AnOutputLoopUnrolledWholeStoresOneCopyPerIteration) {
  Graph g;
  Plan p = testing::selector_plan(g);  // loops r0[4] (the selector), r1[64]
  ASSERT_EQ(p.programs.size(), 1u);
  const UOp* ast = p.programs[0].ast;
  EXPECT_EQ(opt_error(ast, {{OptKind::Unroll, 0, 2}}),
            "opt UNROLL(r0,2): an output loop is unrolled whole (4)");
  std::vector<Opt> opts = {{OptKind::Unroll, 0, 4}, {OptKind::Upcast, 1, 16}};
  OptimizedKernel k = apply_opts(ast, opts);
  auto inputs = testing::random_inputs(g, 5);
  Plan q = p;
  q.programs[0].ast = k.ast;
  EXPECT_TRUE(
      testing::arrays_close(interpret(p, g, inputs).at("y"), interpret(q, g, inputs).at("y")));

  auto count = [](const UOp* root, Op op) {
    int n = 0;
    for (const UOp* u : root->toposort()) n += u->op == op;
    return n;
  };
  // Before: every element evaluates the four expressions under gates on r0.
  EXPECT_GE(count(k.ast, Op::WHERE), 4);
  // Expanded: four stores of 16 lanes, each of its own expression, no gate left.
  const UOp* expanded = expand_kernel(k.ast);
  EXPECT_EQ(count(expanded, Op::STORE), 4);
  EXPECT_EQ(count(expanded, Op::WHERE), 0);
  EXPECT_EQ(count(expanded, Op::CMPLT), 0);
  // One load of x, shared by the copies.
  EXPECT_EQ(count(expanded, Op::LOAD), 1);
}

TEST(Opts, RangesAreRenumberedInLoopOrder) {
  Graph g;
  Plan p = matmul_plan(g, 12, 10, 16);
  OptimizedKernel k =
      apply_opts(p.programs[0].ast, {{OptKind::Tile, 1, 4}, {OptKind::Upcast, 0, 3}});
  KernelRanges kr = kernel_ranges(k.ast);
  // The tile's outer loop comes first: r0 = r1 / 4, then r0 / 3, then r1 % 4.
  ASSERT_EQ(kr.loops.size(), 3u);
  EXPECT_EQ(kr.loops[0]->src[0]->cval().i, 4);
  EXPECT_EQ(kr.loops[1]->src[0]->cval().i, 4);
  EXPECT_EQ(kr.loops[2]->src[0]->cval().i, 4);
  for (size_t i = 0; i < kr.loops.size(); ++i)
    EXPECT_EQ(kr.loops[i]->range().id, static_cast<int64_t>(i));
  ASSERT_EQ(kr.upcasts.size(), 1u);
  EXPECT_EQ(kr.upcasts[0]->src[0]->cval().i, 3);
}

}  // namespace
}  // namespace kiln
