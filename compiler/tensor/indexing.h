// Indexing composites built from Tensor primitives.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/tensor/tensor.h"

namespace kiln {

// Joins tensors along `axis` (every other axis equal): each part is padded to the full size and
// the parts are added (for bool: or-ed).
Tensor concat(const std::vector<Tensor>& parts, int64_t axis);
// What concat() built, read back from node `s`: a tree of ADD (OR for bool) nodes of s's shape
// over PADs with zero, each padding one axis, the same for all, whose regions tile it exactly.
// `taken(n)` may refuse an inner join node or a PAD (one that something else reads too); it is
// not asked about s. Only for at least two parts.
struct ConcatParts {
  size_t axis = 0;
  std::vector<std::pair<int64_t, const UOp*>> parts;  // (offset along axis, part), in order
};
std::optional<ConcatParts> concat_parts(const UOp* s,
                                        const std::function<bool(const UOp*)>& taken = {});
// Splits along `axis` into parts of the given sizes (which must add up to the axis size).
std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes);
// numpy-style slicing per listed axis: start/end are clamped like Python's, steps may be negative.
Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
// Repeats the tensor `repeats[i]` times along axis i.
Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats);
// [start, start + step, ...) below `stop`, as a constant (weight) tensor.
Tensor arange(Graph& g, double start, double stop, double step, DType dtype);
// An index expression over symbols (an axis's extent: `seq`, `(w + 3) / 4`) as an int64 scalar
// tensor, its value computed when the package runs. Throws kiln::InternalError for an op other
// than the extents' (+, *, /, %, min, max).
Tensor index_value(Graph& g, const UOp* e);
// Running sum along `axis` (a windowed sum: O(n^2) work along the axis).
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false);

}  // namespace kiln
