#include "compiler/ir/dot_product.h"

namespace kiln {

std::pair<const UOp*, const UOp*> byte_product_factors(const UOp* p) {
  if (p->op != Op::MUL) return {nullptr, nullptr};
  auto widened = [](const UOp* x, DType from) {
    return x->op == Op::CAST && x->dtype == dtypes::int32 && x->src[0]->dtype == from ? x->src[0]
                                                                                      : nullptr;
  };
  for (int i = 0; i < 2; ++i) {
    const UOp* u = widened(p->src[static_cast<size_t>(i)], dtypes::uint8);
    const UOp* s = widened(p->src[static_cast<size_t>(1 - i)], dtypes::int8);
    if (u && s) return {u, s};
  }
  return {nullptr, nullptr};
}

}  // namespace kiln
