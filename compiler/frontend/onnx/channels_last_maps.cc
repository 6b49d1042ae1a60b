#include "compiler/frontend/onnx/channels_last_maps.h"

#include <unordered_map>
#include <vector>

namespace kiln {

namespace {

// Nodes that compute each element of their map from the same element of their inputs (and
// broadcast vectors of per-channel values): a chain's layout passes through them unchanged.
bool elementwise(const std::string& op) {
  static const std::set<std::string> ops = {
      "Relu",
      "LeakyRelu",
      "Clip",
      "Sigmoid",
      "HardSigmoid",
      "HardSwish",
      "Tanh",
      "Elu",
      "Selu",
      "Add",
      "Sub",
      "Mul",
      "Div",
      "Identity",
      "Erf",
      "Softplus",
      "Mish",
      "PRelu",
      "BatchNormalization",
  };
  return ops.count(op) > 0;
}

int64_t group_of(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.name() == "group") return a.i();
  return 1;
}

}  // namespace

std::set<std::string> channels_last_maps(const onnx::GraphProto& graph) {
  // Each value's shape as far as shape inference knows it (-1: unknown dim).
  std::unordered_map<std::string, std::vector<int64_t>> shapes;
  for (const auto* list : {&graph.input(), &graph.value_info(), &graph.output()})
    for (const auto& vi : *list) {
      if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
      std::vector<int64_t> dims;
      for (const auto& d : vi.type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      shapes[vi.name()] = dims;
    }
  std::set<std::string> constants, outputs;
  for (const auto& t : graph.initializer()) constants.insert(t.name());
  for (const auto& o : graph.output()) outputs.insert(o.name());

  std::unordered_map<std::string, const onnx::NodeProto*> producer;
  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> readers;
  for (const auto& node : graph.node()) {
    for (const auto& out : node.output()) producer[out] = &node;
    for (const auto& in : node.input()) readers[in].push_back(&node);
  }

  auto is_map = [&](const std::string& v) {
    auto it = shapes.find(v);
    return it != shapes.end() && it->second.size() == 4 && it->second[1] > 0 &&
           it->second[1] % 16 == 0 && it->second[2] > 0 && it->second[3] > 0;
  };
  // The candidates: maps a dense convolution, a max pool or an elementwise node computes.
  std::set<std::string> chosen;
  for (const auto& [v, p] : producer) {
    if (!is_map(v) || outputs.count(v) || constants.count(v) || p->output_size() != 1) continue;
    bool dense_conv = p->op_type() == "Conv" && group_of(*p) == 1;
    if (dense_conv || p->op_type() == "MaxPool" || elementwise(p->op_type())) chosen.insert(v);
  }

  // A map stays while each reader keeps the chain going or ends it in one reduction, and
  // (elementwise) its producer reads no NCHW map of its size; removals propagate until none
  // is left to make.
  auto keeps = [&](const std::string& v) {
    auto r = readers.find(v);
    if (r == readers.end()) return false;  // read by nothing: nothing gains
    for (const onnx::NodeProto* n : r->second) {
      const std::string& op = n->op_type();
      if (op == "GlobalAveragePool") continue;
      bool through = (op == "Conv" && group_of(*n) == 1 && n->input(0) == v) || elementwise(op);
      if (!through || n->output_size() != 1 || !chosen.count(n->output(0))) return false;
    }
    const onnx::NodeProto* p = producer.at(v);
    if (elementwise(p->op_type()))
      for (const auto& in : p->input())
        if (!constants.count(in) && !chosen.count(in) && shapes.count(in) &&
            shapes.at(in) == shapes.at(v))
          return false;
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = chosen.begin(); it != chosen.end();)
      if (keeps(*it)) {
        ++it;
      } else {
        it = chosen.erase(it);
        changed = true;
      }
  }

  // Only the maps a convolution reads are stored as such; the others (a convolution's sum
  // before its activation) stay inside the kernels that compute them.
  std::set<std::string> stored;
  for (const std::string& v : chosen)
    for (const onnx::NodeProto* n : readers.at(v))
      if (n->op_type() == "Conv") stored.insert(v);
  return stored;
}

}  // namespace kiln
