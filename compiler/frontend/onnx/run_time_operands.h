// Checks for shape operands fed at run time (NodeContext::run_time_ints): the node is compiled
// for the output shape the model declares, and these refuse run-time values that give another.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_context.h"

namespace kiln::onnxfe {

// Postfix words of a check (extent_program's form), to keep each within a package's limit
// (KILN_ABI_MAX_CHECK_PROGRAM).
size_t program_words(const UOp* u);

// The run fails unless every element v[j] is one of allowed[j]; `what` completes "input 'x' ...".
void require_values(NodeContext& n, size_t operand, const std::vector<const UOp*>& v,
                    const std::vector<std::vector<int64_t>>& allowed, const std::string& what);

// A float32 value symbol (run_time_float_bits: the element's bit pattern) lies in [lo, hi], both
// positive: a range of the bit patterns, so the check stays integer.
const UOp* float_between(const UOp* bits, float lo, float hi);

// Integer operand `operand` (or a float one cast to an integer, as OneHot's depth): its values when
// it is a compile-time constant; read at run time, the values `from_declared` derives from output
// `out`'s declared shape, and the run fails unless the input holds exactly those (`what` names
// them, completing "input 'x' must give ...").
std::vector<int64_t> ints_or_declared(
    NodeContext& n, size_t operand, size_t out,
    const std::function<std::vector<int64_t>(const Shape&)>& from_declared,
    const std::string& what);

// Slice (opset 10 on) with starts, ends, axes or steps read at run time (run_time_slice.cc).
Tensor run_time_slice(NodeContext& n);

// Axes of a rank-`rank` tensor read at run time (Unsqueeze's, Squeeze's, a reduction's): the
// sorted sets of v.size() axes for which `gives_declared` holds, the first being the one to
// compile; the run fails unless the run-time axes (negative ones counting from the end) are
// distinct members of their union. Refused when that union admits a set that is not a candidate.
std::vector<std::vector<int64_t>> run_time_axes(
    NodeContext& n, size_t operand, const std::vector<const UOp*>& v, int64_t rank,
    const std::function<bool(const std::vector<int64_t>&)>& gives_declared,
    const std::string& what);

}  // namespace kiln::onnxfe
