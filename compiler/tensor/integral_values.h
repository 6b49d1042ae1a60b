// Whether a float expression holds integers only: what a quantize-dequantize pair's clamped value
// is made of (rounded values, integers converted, their sums), the test that lets the ONNX
// frontend fold the pair's round trip through the integer type and lets the compiler store such
// a value in 8 bits (schedule/narrow_quantized_pads.h).
#pragma once

#include <functional>
#include <optional>

#include "compiler/ir/uop.h"

namespace kiln {

// True if every value of u is an integer. A BUFFER counts when `value_of` gives it one integer
// value (a zero point folded into a weight); without `value_of`, buffers do not count.
bool integral_values(const UOp* u,
                     const std::function<std::optional<double>(const UOp*)>& value_of = {});

}  // namespace kiln
