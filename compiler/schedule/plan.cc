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

}  // namespace kiln
