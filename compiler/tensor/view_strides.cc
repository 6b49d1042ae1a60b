#include "compiler/tensor/view_strides.h"

#include <cstddef>

namespace kiln {

namespace {

// The C-order flat position of idx in shape, and back.
int64_t flat_of(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + idx[i];
  return flat;
}

std::vector<int64_t> index_of(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = shape[i] > 0 ? flat % shape[i] : 0;
    flat = shape[i] > 0 ? flat / shape[i] : 0;
  }
  return idx;
}

// The flat position in the node below n's views that n's element idx reads; nullopt through a
// view that is not a plain relabelling of positions.
std::optional<int64_t> position_below(const UOp* n, std::vector<int64_t> idx) {
  for (;;) {
    switch (n->op) {
      case Op::RESHAPE:
        idx = index_of(flat_of(idx, n->shape()), n->src[0]->shape());
        break;
      case Op::PERMUTE: {
        std::vector<int64_t> si(idx.size());
        const std::vector<int64_t>& p = n->varg();
        for (size_t i = 0; i < p.size(); ++i) si[static_cast<size_t>(p[i])] = idx[i];
        idx = std::move(si);
        break;
      }
      case Op::EXPAND: {
        const Shape& in = n->src[0]->shape();
        for (size_t i = 0; i < in.size(); ++i)
          if (in[i] == 1) idx[i] = 0;
        break;
      }
      case Op::SHRINK: {
        const std::vector<int64_t>& p = n->varg();
        for (size_t i = 0; i < idx.size(); ++i) idx[i] += p[2 * i];
        break;
      }
      case Op::PAD:
      case Op::FLIP:
      case Op::WINDOW:
      case Op::GATHER:
        return std::nullopt;
      default:
        return flat_of(idx, n->shape());
    }
    n = n->src[0];
  }
}

}  // namespace

std::optional<std::vector<int64_t>> view_strides(const Tensor& t) {
  const Shape& shape = t.shape();
  std::vector<int64_t> zero(shape.size(), 0);
  std::optional<int64_t> origin = position_below(t.uop(), zero);
  if (!origin) return std::nullopt;
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] < 2) continue;
    std::vector<int64_t> step = zero;
    step[a] = 1;
    std::optional<int64_t> at = position_below(t.uop(), step);
    if (!at) return std::nullopt;
    strides[a] = *at - *origin;
  }
  return strides;
}

}  // namespace kiln
