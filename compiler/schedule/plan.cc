#include "compiler/schedule/plan.h"

namespace kiln {

int64_t PlanBuffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Plan::constant_bytes() const {
  int64_t total = 0;
  for (const auto& b : buffers)
    if (b.kind == BufferKind::Weight) total += b.bytes();
  return total;
}

std::vector<DType> kernel_arg_dtypes(const UOp* ast) {
  std::vector<DType> out;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::DEFINE_GLOBAL) continue;
    size_t i = static_cast<size_t>(u->iarg());
    if (out.size() <= i) out.resize(i + 1);
    out[i] = u->dtype.base();
  }
  return out;
}

}  // namespace kiln
