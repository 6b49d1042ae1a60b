// The const_fold pass: what folds into a weight at compile time, what stays a run-time kernel,
// and that the folded graph computes what the unfolded one did.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/schedule/const_fold.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/linalg.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

NDArray ramp(const Shape& s, double step) {
  NDArray a(dtypes::float32, s);
  for (int64_t i = 0; i < a.numel(); ++i)
    a.set(i, ConstValue::of_float(step * static_cast<double>(i % 13) - 0.3));
  return a;
}

// Folds the graph's constants and checks that its outputs did not change.
ConstFoldStats fold_and_check(Graph& g) {
  auto inputs = testing::random_inputs(g, 3);
  std::map<std::string, NDArray> before;
  {
    EagerEvaluator ev(g, inputs);
    for (const auto& o : g.outputs()) before.emplace(o.name, ev.eval(o.node));
  }
  ConstFoldStats s = fold_constants(g);
  EagerEvaluator ev(g, inputs);
  for (const auto& o : g.outputs())
    EXPECT_TRUE(testing::arrays_close(before.at(o.name), ev.eval(o.node))) << o.name;
  return s;
}

// Whether some reduction in the graph reads weights only (a weight product left to run time).
bool reduces_weights_at_run_time(const Graph& g) {
  for (const UOp* r : g.sink()->toposort()) {
    if (r->op != Op::REDUCE_AXIS) continue;
    bool weights_only = true;
    for (const UOp* x : r->toposort()) weights_only &= !(x->op == Op::BUFFER && !g.is_weight(x));
    if (weights_only) return true;
  }
  return false;
}

bool reads_weight(const Graph& g, const UOp* n, const std::string& name) {
  for (const UOp* x : n->toposort())
    if (g.is_weight(x) && x->buffer().name == name) return true;
  return false;
}

TEST(ConstFold, ATransposedWeightBecomesOneNewWeight) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {2, 8});
  Tensor w = Tensor::weight(g, "w", ramp({6, 8}, 0.1));
  g.add_output(
      "y",
      matmul(x,
             w.mul(Tensor::scalar(g, ConstValue::of_float(2.0), dtypes::float32)).permute({1, 0}))
          .uop());
  ConstFoldStats s = fold_and_check(g);
  EXPECT_EQ(s.folded, 1);
  EXPECT_EQ(s.too_costly, 0);
  EXPECT_FALSE(reads_weight(g, g.outputs()[0].node, "w"));
}

// The evaluator moves a weight's elements through its views (permute, flip, shrink, window,
// expand) as strided byte copies, for every element width, and takes a folded value out of its
// cache without holding the intermediates of earlier folds; each element checked against its
// index formula here, not against the evaluator.
TEST(ConstFold, WeightViewsCopyTheElementsTheirIndexFormulasName) {
  for (DType dt : {dtypes::int8, dtypes::int16, dtypes::float32, dtypes::int64}) {
    Graph g;
    NDArray wv(dt, {2, 3, 4});
    for (int64_t i = 0; i < wv.numel(); ++i) wv.set(i, ConstValue::of_int(i));
    Tensor w = Tensor::weight(g, "w", std::move(wv));
    NDArray cv(dt, {2, 1, 4});
    for (int64_t i = 0; i < cv.numel(); ++i) cv.set(i, ConstValue::of_int(100 + i));
    Tensor c = Tensor::weight(g, "c", std::move(cv));
    auto at = [](int64_t a, int64_t b, int64_t k) { return a * 12 + b * 4 + k; };
    EagerEvaluator ev(g);
    auto expect = [&](const Tensor& t, const std::function<int64_t(const std::vector<int64_t>&)>& f,
                      const char* what) {
      NDArray v = ev.take(t.uop());
      ASSERT_EQ(v.shape(), t.shape()) << what;
      std::vector<int64_t> idx(v.shape().size(), 0);
      for (int64_t i = 0; i < v.numel(); ++i) {
        ASSERT_EQ(v.get(i).as_int(), f(idx)) << what << " " << dt.str() << " element " << i;
        for (size_t d = idx.size(); d-- > 0;) {
          if (++idx[d] < v.shape()[d]) break;
          idx[d] = 0;
        }
      }
    };
    expect(w.permute({2, 0, 1}), [&](const auto& i) { return at(i[1], i[2], i[0]); }, "permute");
    expect(w.flip({1, 2}), [&](const auto& i) { return at(i[0], 2 - i[1], 3 - i[2]); }, "flip");
    expect(
        w.shrink({{1, 2}, {0, 3}, {1, 3}}),
        [&](const auto& i) { return at(i[0] + 1, i[1], i[2] + 1); }, "shrink");
    // Windows of 2x2 at strides 1 and 2: (2, 2, 2, 2, 2), position (p, q), offset (r, s).
    expect(
        w.window({2, 2}, {1, 2}, {1, 1}),
        [&](const auto& i) { return at(i[0], i[1] + i[3], 2 * i[2] + i[4]); }, "window");
    expect(c.expand({2, 3, 4}), [&](const auto& i) { return 100 + i[0] * 4 + i[2]; }, "expand");
    expect(
        w.permute({2, 0, 1}).contiguous().flip({0}),
        [&](const auto& i) { return at(i[1], i[2], 3 - i[0]); }, "a view of a view");
  }
}

// An int8 weight widened to int32 for an integer dot-product kernel folds below the widening
// (its packed layout, still int8): the kernel reads the bytes; an int32 copy would be 4x larger.
TEST(ConstFold, AWidenedInt8WeightStaysBytes) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::uint8, {4, 32});
  NDArray w(dtypes::int8, {32, 16});
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = static_cast<uint8_t>(i * 7);
  g.add_output("y", matmul_u8s8(a, Tensor::weight(g, "w", std::move(w))).uop());
  ConstFoldStats s = fold_and_check(g);
  EXPECT_EQ(s.folded, 1);  // the packed copy
  EXPECT_EQ(s.folded_bytes, 32 * 16);
  int widened = 0;
  for (const UOp* x : g.sink()->toposort())
    if (x->op == Op::CAST && x->dtype == dtypes::int32 && x->src[0]->dtype == dtypes::int8)
      ++widened;
  EXPECT_EQ(widened, 1);
}

// A weight packed in panels whose stride is a multiple of 4 KiB (K = 128 rows of 8 floats) is
// stored one cache line further apart per panel, so a tile's panel streams do not share an L1
// set; the view still reads the weight (outputs unchanged). K = 96 needs no skew.
TEST(ConstFold, APanelStrideOfFourKiBIsSkewedByACacheLine) {
  for (int64_t k : {128, 96}) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {2, k});
    g.add_output("y", matmul(x, Tensor::weight(g, "w", ramp({k, 32}, 0.01))).uop());
    ConstFoldStats s = fold_and_check(g);
    EXPECT_EQ(s.folded, 1) << k;
    int64_t skew_rows = k == 128 ? 2 : 0;  // 2 rows of 8 floats = 64 bytes
    EXPECT_EQ(s.folded_bytes, 4 * (k + skew_rows) * 8 * 4) << k;
  }
}

// The product of two weight matrices computes n^3 elements for 2n^2 read (160^3 here, past the
// 2^22 elements any fold may compute): folding it would make
// compile time grow with the cube of the model (fuzz_graph_file found a 1024^2 pair that took
// 4 GiB), so it stays a kernel.
TEST(ConstFold, AProductOfTwoWeightMatricesIsTooCostlyAndStaysAKernel) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {2, 160});
  Tensor a = Tensor::weight(g, "a", ramp({160, 160}, 0.01));
  Tensor b = Tensor::weight(g, "b", ramp({160, 160}, 0.02));
  g.add_output("y", matmul(x, matmul(a, b)).uop());
  ConstFoldStats s = fold_and_check(g);
  EXPECT_GE(s.too_costly, 1);
  EXPECT_TRUE(reduces_weights_at_run_time(g));
}

// Small products are cheap in absolute terms and still fold.
TEST(ConstFold, ASmallProductOfWeightsStillFolds) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {2, 8});
  Tensor a = Tensor::weight(g, "a", ramp({8, 8}, 0.01));
  Tensor b = Tensor::weight(g, "b", ramp({8, 8}, 0.02));
  g.add_output("y", matmul(x, matmul(a, b)).uop());
  ConstFoldStats s = fold_and_check(g);
  EXPECT_EQ(s.folded, 1);
  EXPECT_EQ(s.too_costly, 0);
  EXPECT_FALSE(reduces_weights_at_run_time(g));
}

// An outer product of two vectors is far larger than what it reads: its sources fold, it does not.
TEST(ConstFold, AnOuterProductLargerThanItsWeightsIsNotStored) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {256, 256});
  Tensor u = Tensor::weight(g, "u", ramp({256, 1}, 0.1));
  Tensor v = Tensor::weight(g, "v", ramp({1, 256}, 0.1));
  g.add_output("y", x.add(u.mul(v)).uop());
  ConstFoldStats s = fold_and_check(g);
  EXPECT_EQ(s.folded, 0);
  EXPECT_EQ(s.folded_bytes, 0);
  EXPECT_TRUE(reads_weight(g, g.outputs()[0].node, "u"));
}

TEST(ConstFold, ABroadcastOfOneConstantValueBecomesASplat) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 4});
  Tensor c = Tensor::scalar(g, ConstValue::of_float(3.0), dtypes::float32).expand({4, 4});
  g.add_output("y", x.add(c.exp()).uop());
  ConstFoldStats s = fold_and_check(g);
  EXPECT_EQ(s.splats, 1);
  EXPECT_EQ(s.folded, 0);
}

// A weight of one element (an ONNX Constant scalar: attention's divisor sqrt(64)), broadcast
// over its operand, becomes a constant: the kernel sees 8.0 where it loaded it, and no weight
// is left to read.
TEST(ConstFold, AOneElementWeightBecomesASplat) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 4});
  NDArray eight(dtypes::float32, {});
  eight.set(0, ConstValue::of_float(8.0));
  Tensor d = Tensor::weight(g, "divisor", std::move(eight));
  g.add_output("y", x.div(d.reshape({1, 1}).expand({4, 4})).uop());
  ConstFoldStats s = fold_and_check(g);
  EXPECT_EQ(s.splats, 1);
  EXPECT_EQ(s.folded, 0);
  EXPECT_FALSE(reads_weight(g, g.outputs()[0].node, "divisor"));
  bool eight_seen = false;
  for (const UOp* u : g.outputs()[0].node->toposort())
    eight_seen |= u->op == Op::CONST && u->cval().f == 8.0;
  EXPECT_TRUE(eight_seen);
}

// A constant chain tens of thousands of nodes deep (an unrolled loop over constants) is folded
// without recursing through it.
TEST(ConstFold, AVeryDeepConstantChainFolds) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4});
  Tensor w = Tensor::weight(g, "w", ramp({4}, 0.1));
  Tensor one = Tensor::scalar(g, ConstValue::of_float(1.0), dtypes::float32);
  Tensor s = Tensor::scalar(g, ConstValue::of_float(0.5), dtypes::float32);
  for (int i = 0; i < 30000; ++i) {
    w = w.mul(one);
    s = s.mul(one);
  }
  g.add_output("y", x.add(w).add(s.expand({4})).uop());
  ConstFoldStats st = fold_and_check(g);
  EXPECT_GE(st.folded + st.splats, 1);
  EXPECT_FALSE(reads_weight(g, g.outputs()[0].node, "w"));
}

}  // namespace
}  // namespace kiln
