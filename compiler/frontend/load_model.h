// Loads a model file into a Graph, choosing the frontend by extension (.kg, .onnx). Input shapes
// given in the options are checked against (or, for dynamic dims, bind) the model's.
#pragma once

#include <map>
#include <string>

#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

struct ModelOptions {
  std::map<std::string, Shape> shapes;  // input shapes by name
  std::map<std::string, int64_t> dims;  // values of ONNX dim parameters by name
  // Per input given a shape, per axis: the symbol it takes (`--shape ids=1,seq`), or "".
  std::map<std::string, std::vector<std::string>> shape_symbols;
  // ONNX dim parameters kept symbolic (`--dim seq=1..512`): name -> [min, max].
  std::map<std::string, std::pair<int64_t, int64_t>> dim_ranges;
  std::map<std::string, NDArray> frozen;  // ONNX inputs made constants, with their values
  LoweringOptions lowering;               // the tensor layer's choices (Winograd convolutions)
};

void load_model(const std::string& path, Graph& g, const ModelOptions& opts);

}  // namespace kiln
