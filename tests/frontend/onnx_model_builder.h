// A small builder of ONNX models for the frontend's tests (onnx_importer_test.cc,
// resize_windows_test.cc).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace kiln::testing {

struct ModelBuilder {
  onnx::ModelProto m;
  explicit ModelBuilder(int opset = 13) {
    m.set_ir_version(7);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    m.mutable_graph()->set_name("test");
  }
  onnx::GraphProto& g() { return *m.mutable_graph(); }
  // dims: >= 0 fixed, else a dim parameter named by `params`.
  void input(const std::string& name, std::vector<int64_t> dims,
             std::vector<std::string> params = {}, int type = onnx::TensorProto::FLOAT) {
    auto* vi = g().add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    size_t p = 0;
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0)
        dim->set_dim_value(d);
      else
        dim->set_dim_param(params.at(p++));
    }
  }
  // dims: -1 is an unknown dim.
  void output(const std::string& name, std::vector<int64_t> dims,
              int type = onnx::TensorProto::FLOAT) {
    auto* vi = g().add_output();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
    }
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> in,
                        std::vector<std::string> out, const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? out.at(0) + "_node" : name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return *n;
  }
  onnx::TensorProto& int64_init(const std::string& name, std::vector<int64_t> v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return *t;
  }
};

// A float initializer of `dims` holding 0.01 * ((i % 7) - 3).
inline void float_init(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& dims) {
  auto* t = b.g().add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t->add_float_data(0.01f * static_cast<float>(i % 7 - 3));
}

inline onnx::AttributeProto ints_attribute(const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

}  // namespace kiln::testing
