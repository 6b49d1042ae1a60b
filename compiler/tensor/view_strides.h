// The strides of a view: how far, in elements of the buffer below it, one step along each of a
// tensor's axes moves, where the tensor is a chain of reshapes, permutes, expands and shrinks
// over a computed node (stored in C order of its shape). The tensor layer's view of what a
// kernel's loads will walk, before rangeify turns the views into index math: lets an operation
// choose to read a view from a copy in its own layout (matmul: a transposed operand).
#pragma once

#include <optional>
#include <vector>

#include "compiler/tensor/tensor.h"

namespace kiln {

// Per axis of t, the elements of the node below its views that one step from index 0 along
// that axis moves (0 along a broadcast axis); nullopt when a view other than a reshape, permute,
// expand or shrink (a pad, a flip, a window, a gather) lies between t and that node. A reshape
// that splits or merges axes gives the step at index 0, which is what a kernel's first lane or
// iteration sees.
std::optional<std::vector<int64_t>> view_strides(const Tensor& t);

}  // namespace kiln
