// libFuzzer target: bytes as an ONNX model, imported (the checker, shape inference, every op
// handler) and, when that succeeds, planned (constant folding, rangeify, fusion, the memory
// plan). Bad input must end in a kiln::Error: any other exception, crash or sanitizer report is
// a finding.
#include <onnx/onnx_pb.h>

#include <cstdint>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return 0;
  kiln::Graph g;
  kiln::OnnxImportOptions o;
  o.dims = {};
  // Control flow unrolls to at most 16384 nodes (a compile allows 2^20): a 4096-step Loop of a
  // 16-node body took 28 s under ASan, past the 20 s a unit may take; the limit's error path is
  // still reached.
  o.max_unrolled_nodes = 16384;
  try {
    // External data is refused: the folder does not exist.
    kiln::import_onnx_model(model, "/nonexistent-kiln-fuzz", g, o);
    kiln::plan_graph(g);
  } catch (const kiln::Error&) {
  }
  return 0;
}
