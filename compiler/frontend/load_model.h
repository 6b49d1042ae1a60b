// Loads a model file into a Graph, choosing the frontend by extension (.kg; .onnx with the ONNX
// issue). Input shapes given with --shape are checked against (or, for dynamic dims, bind) the
// model's.
#pragma once

#include <map>
#include <string>

#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

struct ModelOptions {
  std::map<std::string, Shape> shapes;  // --shape NAME=D0,D1,...
  std::map<std::string, int64_t> dims;  // --dim PARAM=N (ONNX dim parameters)
  std::map<std::string, NDArray> frozen;  // --freeze NAME=FILE.npy (ONNX inputs made constants)
};

void load_model(const std::string& path, Graph& g, const ModelOptions& opts);

}  // namespace kiln
