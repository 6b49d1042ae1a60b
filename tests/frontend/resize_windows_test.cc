// Linear Resize as windows over the input (compiler/frontend/onnx/resize_windows.cc): by an
// integer factor up or down and by 5 / 4 the graph has no gather of a tap table; the values match
// linear interpolation computed here from the ONNX definition, along both resized axes. (The
// conformance suite runs ONNX's own Resize cases, cubic ones too, through compiled kernels.)
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/tensor/eager.h"
#include "tests/frontend/onnx_model_builder.h"

namespace kiln {
namespace {

using testing::ModelBuilder;

struct Case {
  const char* transform;
  int64_t in_h, in_w, out_h, out_w;
};

// Where output o of `out` samples an axis of `in` (ONNX's coordinate transforms).
double source(const std::string& transform, int64_t o, int64_t in, int64_t out) {
  double scale = static_cast<double>(out) / static_cast<double>(in);
  if (transform == "align_corners")
    return out == 1 ? 0.0 : static_cast<double>(o * (in - 1)) / static_cast<double>(out - 1);
  if (transform == "asymmetric") return static_cast<double>(o) / scale;
  return (static_cast<double>(o) + 0.5) / scale - 0.5;  // half_pixel
}

// Linear interpolation of `row` (stride apart) at x, the taps clamped to the axis.
double interpolate(const NDArray& a, int64_t base, int64_t stride, int64_t in, double x) {
  double x0 = std::floor(x), f = x - x0;
  auto at = [&](double i) {
    int64_t k = std::clamp<int64_t>(static_cast<int64_t>(i), 0, in - 1);
    return a.get(base + k * stride).f;
  };
  return (1 - f) * at(x0) + f * at(x0 + 1);
}

TEST(ResizeWindows, LinearResizeHasNoGather) {
  const Case cases[] = {
      {"half_pixel", 6, 8, 12, 16}, {"align_corners", 6, 8, 12, 16}, {"asymmetric", 6, 8, 18, 24},
      {"half_pixel", 12, 16, 6, 8}, {"align_corners", 8, 8, 10, 10},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.transform) + " " + std::to_string(c.in_h) + "x" +
                 std::to_string(c.in_w) + " -> " + std::to_string(c.out_h) + "x" +
                 std::to_string(c.out_w));
    ModelBuilder b;
    b.input("x", {1, 2, c.in_h, c.in_w});
    b.int64_init("sizes", {1, 2, c.out_h, c.out_w});
    auto& n = b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "up");
    auto* mode = n.add_attribute();
    mode->set_name("mode");
    mode->set_type(onnx::AttributeProto::STRING);
    mode->set_s("linear");
    auto* tr = n.add_attribute();
    tr->set_name("coordinate_transformation_mode");
    tr->set_type(onnx::AttributeProto::STRING);
    tr->set_s(c.transform);
    b.output("y", {1, 2, c.out_h, c.out_w});
    Graph g;
    import_onnx_model(b.m, ".", g, {});

    int gathers = 0;
    for (const UOp* u : g.outputs()[0].node->toposort()) gathers += u->op == Op::GATHER;
    EXPECT_EQ(gathers, 0);

    NDArray x(dtypes::float32, {1, 2, c.in_h, c.in_w});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, ConstValue::of_float(std::sin(0.37 * static_cast<double>(i)) * 4.0));
    EagerEvaluator ev(g, {{"x", x}});
    NDArray y = ev.eval(g.outputs()[0].node);
    ASSERT_EQ(y.numel(), 2 * c.out_h * c.out_w);
    // Along W for every input row, then along H.
    NDArray rows(dtypes::float64, {2, c.in_h, c.out_w});
    for (int64_t ch = 0; ch < 2; ++ch)
      for (int64_t h = 0; h < c.in_h; ++h)
        for (int64_t o = 0; o < c.out_w; ++o)
          rows.set((ch * c.in_h + h) * c.out_w + o,
                   ConstValue::of_float(interpolate(x, (ch * c.in_h + h) * c.in_w, 1, c.in_w,
                                                    source(c.transform, o, c.in_w, c.out_w))));
    double worst = 0;
    for (int64_t ch = 0; ch < 2; ++ch)
      for (int64_t o = 0; o < c.out_h; ++o)
        for (int64_t w = 0; w < c.out_w; ++w) {
          double want = interpolate(rows, ch * c.in_h * c.out_w + w, c.out_w, c.in_h,
                                    source(c.transform, o, c.in_h, c.out_h));
          double got = y.get((ch * c.out_h + o) * c.out_w + w).f;
          worst = std::max(worst, std::abs(got - want));
        }
    EXPECT_LT(worst, 1e-5);
  }
}

}  // namespace
}  // namespace kiln
