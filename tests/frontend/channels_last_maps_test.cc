// channels_last_maps: which maps of an ONNX model are stored channels-last for the whole graph
// (compiler/frontend/onnx/channels_last_maps.h), and that the importer's graph computes the same
// values with them as without.
#include "compiler/frontend/onnx/channels_last_maps.h"

#include <gtest/gtest.h>
#include <onnx/shape_inference/implementation.h>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/tensor/channels_last.h"
#include "compiler/tensor/eager.h"
#include "tests/frontend/onnx_model_builder.h"

namespace kiln {
namespace {

using testing::float_init;
using testing::ints_attribute;
using testing::ModelBuilder;

onnx::AttributeProto int_attribute(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

// A Conv of a (co, ci / group, k, k) weight named after its output, padded to keep the size.
void add_conv(ModelBuilder& b, const std::string& in, const std::string& out, int64_t ci,
              int64_t co, int64_t k, int64_t group = 1) {
  float_init(b, out + "_w", {co, ci / group, k, k});
  auto& n = b.node("Conv", {in, out + "_w"}, {out});
  int64_t p = k / 2;
  n.add_attribute()->CopyFrom(ints_attribute("pads", {p, p, p, p}));
  if (group != 1) n.add_attribute()->CopyFrom(int_attribute("group", group));
}

// A ResNet's shape in small: a stem, its max pool, one bottleneck block (1x1, 3x3, 1x1 and the
// residual sum), and a global average pool; `ending` replaces the pool and what follows.
enum class Ending { GlobalPool, GraphOutput, DepthwiseLayer };

ModelBuilder bottleneck_model(Ending ending) {
  ModelBuilder b;
  b.input("x", {1, 3, 16, 16});
  add_conv(b, "x", "stem", 3, 32, 3);
  b.node("Relu", {"stem"}, {"s"});
  b.node("MaxPool", {"s"}, {"p"}).add_attribute()->CopyFrom(ints_attribute("kernel_shape", {2, 2}));
  b.g()
      .mutable_node(b.g().node_size() - 1)
      ->add_attribute()
      ->CopyFrom(ints_attribute("strides", {2, 2}));
  add_conv(b, "p", "a", 32, 16, 1);
  b.node("Relu", {"a"}, {"r1"});
  add_conv(b, "r1", "c3", 16, 16, 3);
  b.node("Relu", {"c3"}, {"r2"});
  add_conv(b, "r2", "c", 16, 32, 1);
  b.node("Add", {"c", "p"}, {"sum"});
  switch (ending) {
    case Ending::GlobalPool:
      b.node("Relu", {"sum"}, {"o"});
      b.node("GlobalAveragePool", {"o"}, {"g"});
      b.node("Flatten", {"g"}, {"y"});
      b.output("y", {1, 32});
      break;
    case Ending::GraphOutput:
      b.node("Relu", {"sum"}, {"y"});
      b.output("y", {1, 32, 8, 8});
      break;
    case Ending::DepthwiseLayer:
      b.node("Relu", {"sum"}, {"o"});
      add_conv(b, "o", "y", 32, 32, 3, 32);
      b.output("y", {1, 32, 8, 8});
      break;
  }
  onnx::shape_inference::InferShapes(b.m);
  return b;
}

// From the stem's pool to the global average pool the maps are one chain: the pool's output
// (read by the block's first 1x1 layer and by the residual sum) and the two maps inside the
// block are stored channels-last. The stem's own map, which the max pool reads, is not (the
// pool ends a chain where it reads); nor is the block's output, which only the global pool reads.
TEST(ChannelsLastMaps, ABottleneckChainIsChannelsLastFromItsPoolToItsGlobalPool) {
  ModelBuilder b = bottleneck_model(Ending::GlobalPool);
  EXPECT_EQ(channels_last_maps(b.g()), (std::set<std::string>{"p", "r1", "r2"}));
}

// A chain that ends in a graph output or a depthwise layer is not taken at all: the block's
// last 1x1 layer would read channels-last and store NCHW, transposing its stores, and that
// removal reaches back along the chain to the pool.
TEST(ChannelsLastMaps, AGraphOutputOrADepthwiseLayerEndsNoChain) {
  for (Ending ending : {Ending::GraphOutput, Ending::DepthwiseLayer}) {
    ModelBuilder b = bottleneck_model(ending);
    EXPECT_TRUE(channels_last_maps(b.g()).empty()) << static_cast<int>(ending);
  }
}

// Channels of fewer than a 16-lane vector, or a map read by a concatenation, keep NCHW.
TEST(ChannelsLastMaps, NarrowMapsAndConcatenatedOnesStayNchw) {
  ModelBuilder b;
  b.input("x", {1, 3, 16, 16});
  add_conv(b, "x", "a", 3, 8, 3);
  b.node("Relu", {"a"}, {"r"});  // 8 channels
  add_conv(b, "r", "c", 8, 32, 1);
  b.node("Relu", {"c"}, {"r2"});
  add_conv(b, "r2", "d", 32, 32, 1);
  b.node("Concat", {"d", "r2"}, {"cat"}).add_attribute()->CopyFrom(int_attribute("axis", 1));
  b.node("GlobalAveragePool", {"cat"}, {"y"});
  b.output("y", {1, 64, 1, 1});
  onnx::shape_inference::InferShapes(b.m);
  EXPECT_TRUE(channels_last_maps(b.g()).empty());
}

// The importer stores the chosen maps channels-last (every reader reads the one buffer), and
// the graph computes what the NCHW graph computes (kilnc --no-channels-last-chains).
TEST(ChannelsLastMaps, TheImportedChainComputesWhatNchwComputes) {
  ModelBuilder b = bottleneck_model(Ending::GlobalPool);
  NDArray x(dtypes::float32, {1, 3, 16, 16});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, ConstValue::of_float(static_cast<double>(i % 29) * 0.25 - 3.0));
  std::vector<NDArray> outputs;
  for (bool chains : {true, false}) {
    Graph g;
    g.lowering().channels_last_chains = chains;
    import_onnx_model(b.m, ".", g, {});
    int stored = 0;
    for (const UOp* u : g.outputs()[0].node->toposort()) stored += is_stored_channels_last(u);
    // The stem's map (for its pool) and the pool's (for the 1x1 layer: nn.cc's local choices),
    // and with chains the block's two maps.
    EXPECT_EQ(stored, chains ? 4 : 2) << (chains ? "chains" : "NCHW");
    outputs.push_back(EagerEvaluator(g, {{"x", x}}).eval(g.outputs()[0].node));
  }
  ASSERT_EQ(outputs[0].numel(), 32);
  for (int64_t i = 0; i < outputs[0].numel(); ++i)
    ASSERT_NEAR(outputs[0].get(i).f, outputs[1].get(i).f, 1e-5) << "element " << i;
}

}  // namespace
}  // namespace kiln
