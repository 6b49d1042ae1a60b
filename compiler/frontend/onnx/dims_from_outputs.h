// Static dims of intermediate values that ONNX shape inference leaves unknown but the model's
// declared outputs decide (onnx_importer.cc runs it after shape inference).
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln::onnxfe {

// A value whose length is read at run time (a Range to a size fed as an input, as the expanded
// window functions have) gets an unknown dim from shape inference, and so does every elementwise
// value computed from it. This names each such dim, follows it forward through elementwise ops
// (a broadcast against 1 or a missing axis keeps it), and where it reaches a graph output of a
// declared static shape, writes that size into every value_info the dim went through. Only dims
// the outputs decide are written; the importer's checks still refuse run-time values that
// disagree.
void complete_dims_from_outputs(onnx::GraphProto& g);

}  // namespace kiln::onnxfe
