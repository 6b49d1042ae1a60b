// complete_dims_from_outputs (dims_from_outputs.h).
#include "compiler/frontend/onnx/dims_from_outputs.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::onnxfe {

namespace {

// A dim: a static size (>= 0), an unknown one this pass follows (a name: -1, -2, ...), or
// kUnknown (one it cannot follow).
constexpr int64_t kUnknown = INT64_MIN;
using Dims = std::vector<int64_t>;

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> s = {
      "Abs",      "Acos", "Acosh", "Asin", "Asinh",      "Atan", "Atanh",
      "Cast",     "Ceil", "Cos",   "Cosh", "Erf",        "Exp",  "Floor",
      "Identity", "Log",  "Neg",   "Not",  "Reciprocal", "Relu", "Round",
      "Sigmoid",  "Sign", "Sin",   "Sinh", "Sqrt",       "Tan",  "Tanh"};
  return s;
}

const std::set<std::string>& binary_ops() {
  static const std::set<std::string> s = {"Add", "Sub",   "Mul",  "Div",     "Pow", "And", "Or",
                                          "Xor", "Equal", "Less", "Greater", "Max", "Min"};
  return s;
}

}  // namespace

void complete_dims_from_outputs(onnx::GraphProto& g) {
  std::map<std::string, onnx::TypeProto_Tensor*> info;
  for (auto& vi : *g.mutable_value_info())
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      info[vi.name()] = vi.mutable_type()->mutable_tensor_type();
  std::map<std::string, Dims> dims;
  int64_t next = -1;
  auto dims_of = [](const onnx::TypeProto_Tensor& t) {
    Dims d;
    for (const auto& x : t.shape().dim())
      d.push_back(x.has_dim_value() && x.dim_value() >= 0 ? x.dim_value() : kUnknown);
    return d;
  };
  for (const auto& vi : g.input())
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      dims[vi.name()] = dims_of(vi.type().tensor_type());
  for (const auto& t : g.initializer()) dims[t.name()] = Dims(t.dims().begin(), t.dims().end());
  std::map<std::string, Dims> names;  // per value: the names its dims carry
  std::map<std::string, const onnx::TypeProto_Tensor*> declared(info.begin(), info.end());
  for (const auto& o : g.output())
    if (o.type().has_tensor_type() && o.type().tensor_type().has_shape())
      declared[o.name()] = &o.type().tensor_type();
  // A name's size, from the first static dim it reaches (the declared outputs; an inferred one).
  std::map<int64_t, int64_t> size;
  std::set<int64_t> contradicted;
  for (const auto& node : g.node()) {
    if (node.output_size() != 1 || !declared.count(node.output(0))) continue;
    const std::string& out = node.output(0);
    const Dims d = dims_of(*declared[out]);
    Dims p(d.size(), kUnknown);  // what the inputs give
    bool unary = unary_ops().count(node.op_type()) && node.input_size() >= 1;
    bool binary = binary_ops().count(node.op_type()) && node.input_size() == 2;
    auto known = [&](int i) { return dims.count(node.input(i)) != 0; };
    if (unary && known(0) && dims[node.input(0)].size() == d.size()) {
      p = dims[node.input(0)];
    } else if (binary && known(0) && known(1)) {
      const Dims &a = dims[node.input(0)], &b = dims[node.input(1)];
      size_t r = std::max(a.size(), b.size());
      for (size_t k = 0; r == d.size() && k < r; ++k) {
        int64_t x = k + a.size() >= r ? a[k + a.size() - r] : 1;
        int64_t y = k + b.size() >= r ? b[k + b.size() - r] : 1;
        p[k] = x == 1 ? y : y == 1 || y == x ? x : kUnknown;
      }
    } else {
      // Any other op: an unknown dim of its output becomes a name to follow (a Range's length).
      for (size_t k = 0; k < d.size(); ++k) p[k] = d[k] == kUnknown ? next-- : d[k];
    }
    Dims merged = d;
    for (size_t k = 0; k < d.size(); ++k) {
      bool named = p[k] < 0 && p[k] != kUnknown;
      if (named && d[k] >= 0) {
        auto [it, fresh] = size.emplace(p[k], d[k]);
        if (!fresh && it->second != d[k]) contradicted.insert(p[k]);
      }
      merged[k] = d[k] >= 0 ? d[k] : p[k];
    }
    dims[out] = merged;
    names[out] = p;
  }
  for (auto& [name, t] : info) {
    auto it = names.find(name);
    if (it == names.end()) continue;
    for (int k = 0; k < t->shape().dim_size(); ++k) {
      int64_t x = it->second[static_cast<size_t>(k)];
      auto s = size.find(x);
      if (x < 0 && x != kUnknown && s != size.end() && !contradicted.count(x))
        t->mutable_shape()->mutable_dim(k)->set_dim_value(s->second);
    }
  }
}

}  // namespace kiln::onnxfe
