// The ONNX frontend: libonnx parses the model, runs the checker and shape inference, and every
// node becomes Tensor API calls (compiler/frontend/onnx/ops_*.cc, one file per op family).
//
// - Initializers (external-data tensors too, relative to the model's folder) become weights.
// - Opsets 7 through 17 of the default domain; each op's handler knows the opset it implements.
// - Dynamic dims are bound with `shapes` (by input name) or `dims` (by dim parameter name); an
//   unbound one is an error listing every unbound dim by input name and axis.
// - Values that must be known at compile time (a Reshape's shape, a Slice's starts, ...) are
//   evaluated from the constant subgraph that computes them (Shape -> Gather -> Concat -> ...).
// - Unsupported ops, attributes or dtypes are collected over the whole model and reported in one
//   error, each with node name, op type and opset; nothing is built.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "compiler/support/error.h"
#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace onnx {
class ModelProto;
}

namespace kiln {

// The model is valid but uses ops, attributes or dtypes kiln does not implement (every problem
// the importer found is of that kind).
class UnsupportedModel : public Error {
 public:
  explicit UnsupportedModel(const std::string& msg, std::vector<Option> hints = {})
      : Error(msg, std::move(hints)) {}
};

struct OnnxImportOptions {
  std::map<std::string, Shape> shapes;  // input shapes by name
  std::map<std::string, int64_t> dims;  // values of dim parameters
  // Per input given a shape, per axis: the symbol it takes, or "" (`--shape ids=1,seq`).
  std::map<std::string, std::vector<std::string>> shape_symbols;
  // Dim parameters that stay symbolic: name -> [min, max] (the graph's symbols, in name order).
  std::map<std::string, std::pair<int64_t, int64_t>> dim_ranges;
  // Frozen inputs: each becomes a constant with this value (for inputs that must be known at
  // compile time, such as a Reshape's shape fed by a model input); the package does not have
  // that input.
  std::map<std::string, NDArray> frozen;
  bool run_checker = true;
  // The most nodes If, Scan and Loop bodies may add when built inline (a Loop's body once per
  // iteration, nested bodies included), in all: bounds the compile time of a model whose
  // control flow unrolls too far (a Loop of 4096 steps inside another).
  int64_t max_unrolled_nodes = int64_t{1} << 20;
};

void import_onnx(const std::string& path, Graph& g, const OnnxImportOptions& o);
// `dir` resolves external data.
void import_onnx_model(onnx::ModelProto& model, const std::string& dir, Graph& g,
                       const OnnxImportOptions& o);

}  // namespace kiln
