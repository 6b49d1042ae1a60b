// A model as a lazy tensor graph: named inputs, weights (with their data) and named outputs.
// Nodes live in the Graph's Context; weights are BUFFER nodes whose bytes live here, keyed by
// the buffer id.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/uop.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

struct GraphInput {
  std::string name;
  const UOp* buffer;
};

struct GraphOutput {
  std::string name;
  const UOp* node;
};

class Graph {
 public:
  Graph() : ctx_(std::make_unique<Context>()) {}

  Context& ctx() { return *ctx_; }

  // A new model input. Throws kiln::Error if the name is taken.
  const UOp* add_input(const std::string& name, DType dtype, const Shape& shape);
  // A new weight holding `data`. Throws kiln::Error if the name is taken.
  const UOp* add_weight(const std::string& name, NDArray data);
  // Names an output. Throws kiln::Error if the name is taken or the node has no tensor shape.
  void add_output(const std::string& name, const UOp* node);

  const std::vector<GraphInput>& inputs() const { return inputs_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  std::vector<GraphOutput>& mutable_outputs() { return outputs_; }
  const NDArray& weight(int64_t id) const;
  bool is_weight(const UOp* u) const {
    return u->op == Op::BUFFER && u->buffer().kind == BufferKind::Weight;
  }
  const std::map<int64_t, NDArray>& weights() const { return weights_; }
  // The BUFFER node of every weight, in id order.
  std::vector<const UOp*> weight_nodes() const;

  // All outputs under one SINK (for whole-graph rewrites, toposorts and dumps).
  const UOp* sink() const;
  // A unique name for a new weight derived from `base` ("base", "base_1", ...).
  std::string fresh_name(const std::string& base) const;

 private:
  bool name_taken(const std::string& name) const;

  std::unique_ptr<Context> ctx_;
  std::vector<GraphInput> inputs_;
  std::vector<GraphOutput> outputs_;
  std::map<int64_t, NDArray> weights_;
  std::map<int64_t, const UOp*> weight_nodes_;
  std::map<std::string, int64_t> buffer_names_;
  int64_t next_buffer_id_ = 0;
};

}  // namespace kiln
