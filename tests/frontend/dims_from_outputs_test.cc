// complete_dims_from_outputs: unknown dims that elementwise ops carry to a declared static output
// get its size; dims the outputs do not decide stay unknown.
#include "compiler/frontend/onnx/dims_from_outputs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln::onnxfe {
namespace {

// dims: >= 0 static, -1 unknown.
void typed(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

void node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& in,
          const std::string& out) {
  auto* n = g.add_node();
  n->set_op_type(op);
  for (const auto& i : in) n->add_input(i);
  n->add_output(out);
}

const onnx::TensorShapeProto& shape_of(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& vi : g.value_info())
    if (vi.name() == name) return vi.type().tensor_type().shape();
  throw std::runtime_error("no value_info " + name);
}

// A Range to a run-time length, scaled by a scalar and a [1]-shaped value, then a cosine: the
// declared output [10] gives the length of every value between.
TEST(CompleteDimsFromOutputs, ElementwiseChainsTakeTheDeclaredSize) {
  onnx::GraphProto g;
  typed(g.add_input(), "limit", {});
  typed(g.add_input(), "scale", {});
  typed(g.add_input(), "bias", {1});
  node(g, "Range", {"zero", "limit", "one"}, "r");
  node(g, "Mul", {"r", "scale"}, "scaled");
  node(g, "Add", {"bias", "scaled"}, "shifted");
  node(g, "Cos", {"shifted"}, "y");
  typed(g.add_value_info(), "r", {-1});
  typed(g.add_value_info(), "scaled", {-1});
  typed(g.add_value_info(), "shifted", {-1});
  typed(g.add_output(), "y", {10});
  complete_dims_from_outputs(g);
  for (const char* v : {"r", "scaled", "shifted"}) {
    ASSERT_EQ(shape_of(g, v).dim_size(), 1) << v;
    EXPECT_EQ(shape_of(g, v).dim(0).dim_value(), 10) << v;
  }
}

// Two run-time lengths added: either may be 1, so the output's size decides neither; a chain
// that reaches no static output stays unknown too.
TEST(CompleteDimsFromOutputs, DimsTheOutputsDoNotDecideStayUnknown) {
  onnx::GraphProto g;
  typed(g.add_input(), "a", {});
  typed(g.add_input(), "b", {});
  node(g, "Range", {"zero", "a", "one"}, "ra");
  node(g, "Range", {"zero", "b", "one"}, "rb");
  node(g, "Add", {"ra", "rb"}, "y");
  node(g, "Neg", {"ra"}, "z");
  typed(g.add_value_info(), "ra", {-1});
  typed(g.add_value_info(), "rb", {-1});
  typed(g.add_output(), "y", {10});
  typed(g.add_output(), "z", {-1});
  complete_dims_from_outputs(g);
  EXPECT_FALSE(shape_of(g, "ra").dim(0).has_dim_value());
  EXPECT_FALSE(shape_of(g, "rb").dim(0).has_dim_value());
}

// One length reaching two outputs that disagree: the model contradicts itself, nothing is written
// (the importer's checks then report it).
TEST(CompleteDimsFromOutputs, ContradictingOutputsWriteNothing) {
  onnx::GraphProto g;
  typed(g.add_input(), "a", {});
  node(g, "Range", {"zero", "a", "one"}, "r");
  node(g, "Neg", {"r"}, "y");
  node(g, "Abs", {"r"}, "z");
  typed(g.add_value_info(), "r", {-1});
  typed(g.add_output(), "y", {10});
  typed(g.add_output(), "z", {12});
  complete_dims_from_outputs(g);
  EXPECT_FALSE(shape_of(g, "r").dim(0).has_dim_value());
}

}  // namespace
}  // namespace kiln::onnxfe
