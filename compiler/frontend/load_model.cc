#include "compiler/frontend/load_model.h"

#include <filesystem>

#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

void load_model(const std::string& path, Graph& g, const ModelOptions& opts) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (!std::filesystem::exists(path)) throw Error("model file '" + path + "' does not exist");
  g.lowering() = opts.lowering;
  if (ext == ".kg") {
    if (!opts.dims.empty() || !opts.dim_ranges.empty() || !opts.shape_symbols.empty())
      throw OptionError(Option::DimParam, "dim parameters are ONNX's; graph files have none");
    if (!opts.frozen.empty())
      throw OptionError(Option::Freeze, "inputs can be frozen in ONNX models only");
    load_graph_file(path, g);
    for (const auto& [name, shape] : opts.shapes) {
      bool found = false;
      for (const GraphInput& in : g.inputs()) {
        if (in.name != name) continue;
        found = true;
        if (in.buffer->buffer().shape != shape)
          throw OptionError(Option::InputShape, "input '" + name + "' given shape " +
                                                    shape_str(shape) +
                                                    ": the graph file declares " +
                                                    shape_str(in.buffer->buffer().shape) +
                                                    " (graph-file shapes are fixed)");
      }
      if (!found)
        throw OptionError(Option::InputShape, "the model has no input named '" + name + "'");
    }
    return;
  }
  if (ext == ".onnx") {
    OnnxImportOptions o;
    o.shapes = opts.shapes;
    o.dims = opts.dims;
    o.dim_ranges = opts.dim_ranges;
    o.shape_symbols = opts.shape_symbols;
    o.frozen = opts.frozen;
    import_onnx(path, g, o);
    return;
  }
  throw Error("'" + path + "': unknown model format '" + ext + "' (expected .kg or .onnx)");
}

}  // namespace kiln
