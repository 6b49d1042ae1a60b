#include "compiler/tensor/graph.h"

#include "compiler/support/error.h"

namespace kiln {

bool Graph::name_taken(const std::string& name) const {
  if (buffer_names_.count(name)) return true;
  for (const auto& o : outputs_)
    if (o.name == name) return true;
  return false;
}

std::string Graph::fresh_name(const std::string& base) const {
  if (!name_taken(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (!name_taken(n)) return n;
  }
}

const UOp* Graph::add_input(const std::string& name, DType dtype, const Shape& shape) {
  if (buffer_names_.count(name)) throw Error("input '" + name + "': the name is already used");
  for (int64_t d : shape)
    if (d < 0) throw Error("input '" + name + "': negative dimension");
  try {
    shape_numel(shape);
  } catch (const Error& e) {
    throw Error("input '" + name + "': " + e.what());
  }
  const UOp* b =
      ctx_->make(Op::BUFFER, dtype, {}, BufferArg{name, next_buffer_id_, BufferKind::Input, shape});
  buffer_names_[name] = next_buffer_id_++;
  inputs_.push_back({name, b});
  return b;
}

const UOp* Graph::add_weight(const std::string& name, NDArray data) {
  if (buffer_names_.count(name)) throw Error("weight '" + name + "': the name is already used");
  const UOp* b = ctx_->make(Op::BUFFER, data.dtype(), {},
                            BufferArg{name, next_buffer_id_, BufferKind::Weight, data.shape()});
  buffer_names_[name] = next_buffer_id_;
  weight_nodes_[next_buffer_id_] = b;
  weights_.emplace(next_buffer_id_++, std::move(data));
  return b;
}

void Graph::add_output(const std::string& name, const UOp* node) {
  for (const auto& o : outputs_)
    if (o.name == name) throw Error("output '" + name + "': the name is already used");
  if (!node->has_shape()) throw Error("output '" + name + "': not a tensor");
  outputs_.push_back({name, node});
}

const NDArray& Graph::weight(int64_t id) const {
  auto it = weights_.find(id);
  if (it == weights_.end()) throw InternalError("no weight with buffer id " + std::to_string(id));
  return it->second;
}

std::vector<const UOp*> Graph::weight_nodes() const {
  std::vector<const UOp*> out;
  for (const auto& [id, u] : weight_nodes_) out.push_back(u);
  return out;
}

const UOp* Graph::sink() const {
  std::vector<const UOp*> src;
  for (const auto& o : outputs_) src.push_back(o.node);
  return ctx_->make(Op::SINK, dtypes::void_, src);
}

}  // namespace kiln
