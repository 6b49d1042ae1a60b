// late_lower: the target rewrites before linearization, checked on the IR for named CPUs (x86-64
// baseline: no SSE4.1, no F16C; znver3: both), without executing anything. The values these
// rewrites compute are checked by the JIT differential tests (baseline x86-64 runs on any x86-64
// host) and the round trip through the runtime.
#include <gtest/gtest.h>

#include "compiler/codegen/expander.h"
#include "compiler/codegen/late_lower.h"
#include "compiler/driver/compile.h"
#include "compiler/ir/verify.h"
#include "compiler/opt/opts.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/tensor.h"

namespace kiln {
namespace {

const TargetInfo& cpu(const std::string& name) {
  static std::map<std::string, TargetInfo> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, TargetInfo::create({"x86_64-linux-gnu", name})).first;
  return it->second;
}

// The one kernel of `g`, expanded (no opts) and late-lowered for `t`.
const UOp* lowered(Graph& g, const TargetInfo& t) {
  Plan p = plan_graph(g);
  EXPECT_EQ(p.programs.size(), 1u);
  const UOp* ast = late_lower(expand_kernel(apply_opts(p.programs[0].ast, {}).ast), t);
  verify(ast, IrStage::Lowered);
  return ast;
}

int count(const UOp* ast, Op op) {
  int n = 0;
  for (const UOp* u : ast->toposort()) n += u->op == op;
  return n;
}

bool has_scalar(const UOp* ast, ScalarKind s) {
  for (const UOp* u : ast->toposort())
    if (u->dtype.scalar == s) return true;
  return false;
}

TEST(LateLower, IntegerDivisionIsGuardedUnlessTheDivisorIsSafe) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::int32, {64});
  Tensor b = Tensor::input(g, "b", dtypes::int32, {64});
  g.add_output("q", a.div(b).uop());
  const UOp* ast = lowered(g, cpu("znver3"));
  // x / y becomes where(y == 0, 0, where(y == -1, -x, x / where(y == 0 | y == -1, 1, y))).
  const UOp* div = nullptr;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::IDIV) div = u;
  ASSERT_NE(div, nullptr);
  EXPECT_EQ(div->src[1]->op, Op::WHERE) << "the divisor is not guarded";
  EXPECT_TRUE(div->src[1]->src[1]->is_const(1));
  EXPECT_GE(count(ast, Op::WHERE), 3);

  Graph h;  // a constant divisor needs no guard
  Tensor c = Tensor::input(h, "c", dtypes::int32, {64});
  h.add_output("q", c.div(c.like(7)).add(c.mod(c.like(-3))).uop());
  const UOp* ast2 = lowered(h, cpu("znver3"));
  EXPECT_EQ(count(ast2, Op::WHERE), 0);
  EXPECT_EQ(count(ast2, Op::IDIV), 1);
  EXPECT_EQ(count(ast2, Op::MOD), 1);
}

TEST(LateLower, RoundingWithoutSse41IsAddAndSubtract) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {64});
  g.add_output("y", x.floor().add(x.ceil()).add(x.trunc()).add(x.round()).uop());
  const UOp* sse2 = lowered(g, cpu("x86-64"));
  for (Op op : {Op::FLOOR, Op::CEIL, Op::TRUNC, Op::ROUND})
    EXPECT_EQ(count(sse2, op), 0) << op_name(op);
  EXPECT_GT(count(sse2, Op::BITCAST), 0);  // copysign on the bits
  Graph h;
  Tensor y = Tensor::input(h, "x", dtypes::float32, {64});
  h.add_output("y", y.floor().add(y.ceil()).add(y.trunc()).add(y.round()).uop());
  const UOp* avx2 = lowered(h, cpu("znver3"));
  for (Op op : {Op::FLOOR, Op::CEIL, Op::TRUNC, Op::ROUND})
    EXPECT_EQ(count(avx2, op), 1) << op_name(op);
}

TEST(LateLower, FloatModIsAFusedMultiplyAdd) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {64});
  g.add_output("y", x.mod(x.abs().add(0.5)).uop());
  const UOp* ast = lowered(g, cpu("znver3"));
  EXPECT_EQ(count(ast, Op::MOD), 0);
  EXPECT_EQ(count(ast, Op::MULACC), 1);
  EXPECT_EQ(count(ast, Op::TRUNC), 1);
}

TEST(LateLower, HalfFloatsComputeInFloat32) {
  for (const char* name : {"x86-64", "znver3"}) {
    Graph g;
    Tensor h = Tensor::input(g, "h", dtypes::float16, {64});
    Tensor b = h.cast(dtypes::bfloat16);
    g.add_output("y", h.add(h).mul(b.add(b).cast(dtypes::float16)).uop());
    const TargetInfo& t = cpu(name);
    const UOp* ast = lowered(g, t);
    EXPECT_FALSE(has_scalar(ast, ScalarKind::BFloat16)) << name << ": bfloat16 is always emulated";
    for (const UOp* u : ast->toposort()) {
      if (alu_arity(u->op) && u->op != Op::WHERE) {
        EXPECT_NE(u->dtype.scalar, ScalarKind::Float16)
            << name << ": " << op_name(u->op) << " on float16";
      }
    }
    if (t.native_f16()) {
      // Loads, stores and conversions stay float16 (vcvtph2ps / vcvtps2ph).
      EXPECT_TRUE(has_scalar(ast, ScalarKind::Float16)) << name;
    } else {
      // Integer code on the bits: the buffers are read and written as uint16.
      EXPECT_FALSE(has_scalar(ast, ScalarKind::Float16)) << name;
      int u16_buffers = 0;
      for (const UOp* u : ast->toposort())
        u16_buffers += u->op == Op::DEFINE_GLOBAL && u->dtype.scalar == ScalarKind::UInt16;
      EXPECT_EQ(u16_buffers, 2) << name;
    }
  }
}

TEST(LateLower, IndexWidthFollowsTheBounds) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1024});
  g.add_output("y", x.exp().uop());
  EXPECT_EQ(index_bits(lowered(g, cpu("znver3"))), 32);
  Context ctx;
  const UOp* big = ctx.range(int64_t{1} << 33, 0);
  EXPECT_EQ(index_bits(big->mul(int64_t{2})), 64);
}

}  // namespace
}  // namespace kiln
