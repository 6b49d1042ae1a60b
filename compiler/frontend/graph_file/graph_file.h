// The kiln graph file (.kg): a line-oriented text format for models, specified in
// docs/graph-file.md. `load_graph_file` builds a Graph through the Tensor API; `write_graph_file`
// prints any Graph (from either frontend) as .kg text that re-imports to the same graph.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/tensor/graph.h"

namespace kiln {

// Parses `path` (weights' .npy paths are relative to its folder). Throws kiln::Error with
// "file:line:col: ..." on bad input.
void load_graph_file(const std::string& path, Graph& g);
// The most bytes a file's zeros(), random() and values() weights may build, in all.
constexpr int64_t kMaxGeneratedWeightBytes = int64_t{1} << 30;

// Parses `text` as if it were the file `name` in folder `dir`.
void parse_graph_text(const std::string& text, const std::string& name, const std::string& dir,
                      Graph& g, int64_t max_generated_bytes = kMaxGeneratedWeightBytes);

// The graph as .kg text, primitive ops only. Weights are written as .npy files into
// `weights_dir` (created if missing) and referenced relative to `kg_dir`.
std::string write_graph_file(const Graph& g, const std::string& kg_dir,
                             const std::string& weights_dir);

}  // namespace kiln
