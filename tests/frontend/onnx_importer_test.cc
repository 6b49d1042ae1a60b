// The ONNX importer's contract beyond single ops (which the conformance suite covers): problems
// collected over the whole model into one error, dynamic dims bound or listed, shape-computing
// subgraphs folded once dims are bound, --freeze, external data, and opsets below 7.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/tensor.h"
#include "tests/frontend/onnx_model_builder.h"

namespace kiln {
namespace {

using testing::float_init;
using testing::ints_attribute;
using testing::ModelBuilder;

std::string import_error(ModelBuilder& b, const OnnxImportOptions& o = {}) {
  Graph g;
  try {
    import_onnx_model(b.m, ".", g, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxImporter, UnsupportedOpsAreCollectedIntoOneError) {
  ModelBuilder b;
  b.input("x", {4});
  b.node("Relu", {"x"}, {"a"});
  b.node("RandomNormalLike", {"a"}, {"u"}, "first_bad");
  b.node("Abs", {"a"}, {"c"});
  b.node("RandomUniformLike", {"c"}, {"n"}, "second_bad");
  b.node("Neg", {"u"}, {"d"});  // depends on a failed node: not reported again
  b.output("d", {-1});
  b.output("n", {4});
  Graph g;
  try {
    import_onnx_model(b.m, ".", g, {});
    FAIL() << "imported a model with unsupported ops";
  } catch (const UnsupportedModel& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("2 problems"), std::string::npos) << msg;
    EXPECT_NE(msg.find("node 'first_bad' (RandomNormalLike, opset 13): unsupported op"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("node 'second_bad' (RandomUniformLike, opset 13)"), std::string::npos)
        << msg;
  }
  EXPECT_TRUE(g.outputs().empty());  // nothing is built
}

TEST(OnnxImporter, UnboundDynamicDimsAreListedByInputAndAxis) {
  ModelBuilder b;
  b.input("tokens", {-1, -1}, {"batch", "seq"});
  b.input("mask", {2, -1}, {"seq"});
  b.node("Add", {"tokens", "mask"}, {"y"});
  b.output("y", {-1, -1});
  std::string msg = import_error(b);
  EXPECT_NE(msg.find("input 'tokens' axis 0 ('batch')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input 'tokens' axis 1 ('seq')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("input 'mask' axis 1 ('seq')"), std::string::npos) << msg;
  try {
    Graph g;
    import_onnx_model(b.m, ".", g, {});
  } catch (const Error& e) {  // what would fix it, for the front end to spell
    EXPECT_EQ(e.hints(), (std::vector<Option>{Option::InputShape, Option::DimParam}));
  }

  OnnxImportOptions o;
  o.dims = {{"batch", 2}, {"seq", 5}};
  Graph g;
  import_onnx_model(b.m, ".", g, o);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0].node->shape(), (Shape{2, 5}));

  OnnxImportOptions bad;
  bad.dims = {{"batch", 2}, {"seq", 5}, {"sequence", 5}};
  EXPECT_NE(import_error(b, bad).find("no input has a dim parameter named 'sequence'"),
            std::string::npos);
  try {
    Graph g;
    import_onnx_model(b.m, ".", g, bad);
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option(), Option::DimParam);
  }
  OnnxImportOptions shapes;
  shapes.shapes = {{"tokens", {2, 5}}, {"mask", {2, 5}}};
  EXPECT_EQ(import_error(b, shapes), "");
  shapes.shapes["mask"] = {3, 5};
  EXPECT_NE(
      import_error(b, shapes).find("input 'mask': axis 0 is given as 3, the model fixes it to 2"),
      std::string::npos);
}

TEST(OnnxImporter, ShapeSubgraphsFoldOnceDimsAreBound) {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): flatten all but the dynamic batch.
  ModelBuilder b;
  b.input("x", {-1, 3, 4}, {"batch"});
  b.int64_init("zero", {0});
  b.int64_init("minus_one", {-1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"n"});
  b.node("Concat", {"n", "minus_one"}, {"shape"}).add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", {-1, -1});
  OnnxImportOptions o;
  o.dims = {{"batch", 6}};
  Graph g;
  import_onnx_model(b.m, ".", g, o);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0].node->shape(), (Shape{6, 12}));
  // The shape arithmetic is gone: the plan is at most one copy kernel.
  Plan p = plan_graph(g, {});
  EXPECT_LE(p.launches.size(), 1u);
}

// Pow with a constant exponent of 2 (layer norm's variance) becomes x * x: no POW is left in
// the graph (pow would cost an exp and a log per element). A runtime exponent keeps POW.
TEST(OnnxImporter, SquaringPowIsAMultiply) {
  auto has_pow = [](const Graph& g) {
    for (const UOp* u : g.outputs()[0].node->toposort())
      if (u->op == Op::POW) return true;
    return false;
  };
  for (bool constant : {true, false}) {
    ModelBuilder b;
    b.input("x", {2, 3});
    if (constant) {
      auto* t = b.g().add_initializer();
      t->set_name("e");
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_float_data(2.0f);
    } else {
      b.input("e", {});
    }
    b.node("Pow", {"x", "e"}, {"y"});
    b.output("y", {2, 3});
    Graph g;
    import_onnx_model(b.m, ".", g, {});
    EXPECT_EQ(g.outputs()[0].node->shape(), (Shape{2, 3}));
    EXPECT_EQ(has_pow(g), !constant) << (constant ? "constant exponent" : "input exponent");
  }
}

// GlobalAveragePool over a map something else reads too (a squeeze-excitation block's, which
// its scale multiplies) sums over H first and then over W, two reductions of one axis each: the
// first kernel's vector lanes run along W, contiguous, where one reduction over both ran them
// along the channels, a plane apart. A map only the pool reads keeps one reduction (its
// producer may compute it channels-last). Both give the mean.
TEST(OnnxImporter, GlobalAveragePoolOfASharedMapSumsRowsFirst) {
  auto reductions = [](const Graph& g) {
    std::vector<size_t> axes;
    for (const UOp* u : g.outputs()[0].node->toposort())
      if (u->op == Op::REDUCE_AXIS) axes.push_back(u->reduce_arg().axes.size());
    return axes;
  };
  for (bool shared : {true, false}) {
    ModelBuilder b;
    b.input("x", {1, 8, 14, 14});
    b.node("Relu", {"x"}, {"r"});
    b.node("GlobalAveragePool", {"r"}, {shared ? "p" : "y"});
    if (shared) b.node("Mul", {"r", "p"}, {"y"});
    b.output("y", {-1, -1, -1, -1});
    Graph g;
    import_onnx_model(b.m, ".", g, {});
    std::vector<size_t> want = shared ? std::vector<size_t>{1, 1} : std::vector<size_t>{2};
    EXPECT_EQ(reductions(g), want) << (shared ? "shared map" : "map only the pool reads");
    NDArray x(dtypes::float32, {1, 8, 14, 14});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, ConstValue::of_float(static_cast<double>(i % 23) - 9.0));
    EagerEvaluator ev(g, {{"x", x}});
    NDArray y = ev.eval(g.outputs()[0].node);
    for (int64_t c = 0; c < 8; ++c) {
      double mean = 0;
      for (int64_t i = 0; i < 196; ++i) mean += std::max(0.0, x.get(c * 196 + i).f) / 196.0;
      double r = std::max(0.0, x.get(c * 196 + 5).f);
      EXPECT_NEAR(shared ? y.get(c * 196 + 5).f : y.get(c).f, shared ? r * mean : mean, 1e-4)
          << "channel " << c;
    }
  }
}

// Over a map computed channels-last (a small depthwise layer summing its taps,
// compiler/tensor/depthwise_taps.h) a shared GlobalAveragePool is one mean over H and W, whose
// lanes are the contiguous channels, not the rows-first sums of an NCHW map; the values are the
// same as with the padded-map lowering (kilnc --no-depthwise-taps).
TEST(OnnxImporter, GlobalAveragePoolOfAChannelsLastMapIsOneMean) {
  ModelBuilder b;
  b.input("x", {1, 4, 14, 14});
  float_init(b, "we", {16, 4, 1, 1});
  float_init(b, "wd", {16, 1, 3, 3});
  b.node("Conv", {"x", "we"}, {"e"});
  b.node("Relu", {"e"}, {"r"});
  auto& dw = b.node("Conv", {"r", "wd"}, {"d"});
  dw.add_attribute()->CopyFrom(ints_attribute("pads", {1, 1, 1, 1}));
  onnx::AttributeProto group;
  group.set_name("group");
  group.set_type(onnx::AttributeProto::INT);
  group.set_i(16);
  dw.add_attribute()->CopyFrom(group);
  b.node("GlobalAveragePool", {"d"}, {"p"});
  b.node("Mul", {"d", "p"}, {"y"});
  b.output("y", {-1, -1, -1, -1});
  NDArray x(dtypes::float32, {1, 4, 14, 14});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, ConstValue::of_float(static_cast<double>(i % 23) - 9.0));
  std::vector<NDArray> outputs;
  for (bool taps : {true, false}) {
    Graph g;
    g.lowering().depthwise_taps = taps;
    import_onnx_model(b.m, ".", g, {});
    std::vector<size_t> axes;  // the pool's reductions: 4-D, H reduced
    for (const UOp* u : g.outputs()[0].node->toposort())
      if (u->op == Op::REDUCE_AXIS && u->shape().size() == 4 && u->shape()[2] == 1)
        axes.push_back(u->reduce_arg().axes.size());
    std::vector<size_t> want = taps ? std::vector<size_t>{2} : std::vector<size_t>{1, 1};
    EXPECT_EQ(axes, want) << (taps ? "taps" : "padded map");
    outputs.push_back(EagerEvaluator(g, {{"x", x}}).eval(g.outputs()[0].node));
  }
  for (int64_t i = 0; i < outputs[0].numel(); ++i)
    ASSERT_NEAR(outputs[0].get(i).f, outputs[1].get(i).f, 1e-5) << "element " << i;
}

// Dropout's training_mode is a bool: a constant false is inference (the input passes through),
// a constant true is refused as random dropout (as a vision transformer's export has it).
TEST(OnnxImporter, DropoutTakesABoolTrainingMode) {
  for (bool training : {false, true}) {
    ModelBuilder b;
    b.input("x", {2, 3});
    auto* t = b.g().add_initializer();
    t->set_name("mode");
    t->set_data_type(onnx::TensorProto::BOOL);
    t->add_int32_data(training ? 1 : 0);
    b.node("Dropout", {"x", "", "mode"}, {"y"}, "drop");
    b.output("y", {2, 3});
    std::string msg = import_error(b);
    if (training)
      EXPECT_NE(msg.find("node 'drop' (Dropout, opset 13): a training-mode Dropout with a nonzero "
                         "ratio is random"),
                std::string::npos)
          << msg;
    else
      EXPECT_EQ(msg, "");
  }
}

TEST(OnnxImporter, ResizeWithBothScalesAndSizesIsRefused) {
  ModelBuilder b;
  b.input("x", {1, 1, 2, 2});
  auto* sc = b.g().add_initializer();
  sc->set_name("scales");
  sc->set_data_type(onnx::TensorProto::FLOAT);
  sc->add_dims(4);
  for (float v : {1.0f, 1.0f, 2.0f, 2.0f}) sc->add_float_data(v);
  b.int64_init("sizes", {1, 1, 4, 4});
  b.node("Resize", {"x", "", "scales", "sizes"}, {"y"}, "up");
  b.output("y", {1, 1, 4, 4});
  std::string msg = import_error(b);
  EXPECT_NE(msg.find("node 'up' (Resize, opset 13): both scales and sizes are given"),
            std::string::npos)
      << msg;
}

TEST(OnnxImporter, FreezeMakesACompileTimeInputAConstant) {
  ModelBuilder b;
  b.input("x", {2, 6});
  b.input("shape", {2}, {}, onnx::TensorProto::INT64);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", {-1, -1});
  Graph g;
  try {
    import_onnx_model(b.m, ".", g, {});
    FAIL() << "imported a Reshape whose shape is a model input";
  } catch (const UnsupportedModel& e) {
    EXPECT_NE(std::string(e.what()).find("freezing 'shape', giving its value at compile time"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.hints(), std::vector<Option>{Option::Freeze});
  }
  OnnxImportOptions o;
  NDArray shape(dtypes::int64, {2});
  shape.set(0, ConstValue::of_int(3));
  shape.set(1, ConstValue::of_int(4));
  o.frozen.emplace("shape", shape);
  Graph g2;
  import_onnx_model(b.m, ".", g2, o);
  EXPECT_EQ(g2.inputs().size(), 1u);  // the frozen input is gone
  EXPECT_EQ(g2.outputs()[0].node->shape(), (Shape{3, 4}));

  OnnxImportOptions wrong;
  wrong.frozen.emplace("shape", NDArray(dtypes::int32, {2}));
  EXPECT_NE(
      import_error(b, wrong).find("frozen input 'shape': the value is int32, the input is int64"),
      std::string::npos);
}

TEST(OnnxImporter, ExternalDataIsReadFromTheModelsFolder) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "kiln_onnx_external_test";
  fs::create_directories(dir);
  std::vector<float> w = {1.5f, -2.0f, 3.25f, 4.0f};
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f.write("pad!", 4);
    f.write(reinterpret_cast<const char*>(w.data()), 16);
  }
  auto model = [&](const std::string& location) {
    ModelBuilder b;
    b.input("x", {4});
    auto* t = b.g().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(4);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    add("offset", "4");
    add("length", "16");
    b.node("Mul", {"x", "w"}, {"y"});
    b.output("y", {4});
    return b;
  };
  ModelBuilder good = model("weights.bin");
  Graph g;
  OnnxImportOptions o;
  o.run_checker = false;  // the checker wants the data file beside the process's folder
  import_onnx_model(good.m, dir.string(), g, o);
  ASSERT_EQ(g.weight_nodes().size(), 1u);
  const NDArray& got = g.weight(g.weight_nodes()[0]->buffer().id);
  ASSERT_EQ(got.numel(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.get(i).as_double(), w[static_cast<size_t>(i)]);

  ModelBuilder escape = model("../../etc/passwd");
  Graph g2;
  try {
    import_onnx_model(escape.m, dir.string(), g2, o);
    FAIL() << "external data outside the model's folder was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leaves the model's folder"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(OnnxImporter, OpsBelowOpset7AreBuiltWhenTheirDefinitionIsOpset7s) {
  ModelBuilder b(6);
  b.input("x", {4});
  b.node("Elu", {"x"}, {"y"});  // Elu-6 is also opset 7's definition
  b.output("y", {4});
  EXPECT_EQ(import_error(b), "");

  ModelBuilder old(4);
  old.input("x", {2, 2});
  old.node("Reshape", {"x"}, {"y"}).add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;  // Reshape-1 took the shape as an attribute; opset 5 changed it
    a.set_name("shape");
    a.set_type(onnx::AttributeProto::INTS);
    a.add_ints(4);
    return a;
  }());
  old.output("y", {4});
  OnnxImportOptions o;
  o.run_checker = false;
  std::string msg = import_error(old, o);
  EXPECT_NE(msg.find("(Reshape, opset 4): kiln implements this op from its opset-7 definition"),
            std::string::npos)
      << msg;
}

TEST(OnnxImporter, MalformedModelsGetClearErrors) {
  ModelBuilder noop(18);
  noop.input("x", {1});
  noop.node("Relu", {"x"}, {"y"});
  noop.output("y", {1});
  EXPECT_NE(import_error(noop).find("opset 18; kiln imports opsets up to 17"), std::string::npos);

  ModelBuilder dangling;
  dangling.input("x", {1});
  dangling.node("Relu", {"nowhere"}, {"y"});
  dangling.output("y", {1});
  EXPECT_NE(import_error(dangling).find("the ONNX checker rejects the model"), std::string::npos);

  // Ranks the spatial and gather ops cannot work with (found by fuzz_onnx: each once indexed
  // past a shape or sized a vector from a negative rank).
  ModelBuilder flat_conv;
  flat_conv.input("x", {1, 3});
  flat_conv.input("w", {4, 3});
  flat_conv.node("Conv", {"x", "w"}, {"y"}, "conv1");
  flat_conv.output("y", {-1});
  EXPECT_NE(import_error(flat_conv).find(
                "node 'conv1' (Conv, opset 13): weight (4,3) does not match input"),
            std::string::npos)
      << import_error(flat_conv);
  // A weight of more axes than the input: ONNX's own shape inference crashed on it (fuzz_onnx).
  ModelBuilder deep_weight;
  deep_weight.input("x", {1, 8});
  deep_weight.input("w", {4, 3, 3, 3});
  deep_weight.node("Conv", {"x", "w"}, {"y"}, "conv2");
  deep_weight.output("y", {-1});
  EXPECT_NE(import_error(deep_weight)
                .find("node 'conv2' (Conv, opset 13): weight 'w' has rank 4 and input 'x' rank 2"),
            std::string::npos)
      << import_error(deep_weight);
  ModelBuilder flat_pool;
  flat_pool.input("x", {8});
  flat_pool.node("GlobalAveragePool", {"x"}, {"y"}, "gap");
  flat_pool.output("y", {-1});
  EXPECT_NE(import_error(flat_pool).find("input must be (N, C, spatial...), got (8)"),
            std::string::npos)
      << import_error(flat_pool);
  ModelBuilder gather;
  gather.input("x", {2, 3});
  gather.input("i", {2, 1}, {}, onnx::TensorProto::INT64);
  gather.node("GatherND", {"x", "i"}, {"y"}, "gnd").add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("batch_dims");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(-1);
    return a;
  }());
  gather.output("y", {-1});
  EXPECT_NE(import_error(gather).find("batch_dims=-1 for data (2,3) and indices (2,1)"),
            std::string::npos)
      << import_error(gather);

  namespace fs = std::filesystem;
  fs::path junk = fs::temp_directory_path() / "kiln_junk_model.onnx";
  {
    std::ofstream f(junk, std::ios::binary);
    f << "\xff\xff\xff this is not a protobuf";
  }
  Graph g;
  try {
    import_onnx(junk.string(), g, {});
    FAIL() << "a junk file imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a valid ONNX model"), std::string::npos)
        << e.what();
  }
  fs::remove(junk);
}

}  // namespace
}  // namespace kiln
