// Kernel deduplication: kernels with the same AST (same structural digest) share one program;
// each kernel becomes a launch of its program on its own buffers.
#pragma once

#include "compiler/schedule/plan.h"
#include "compiler/schedule/rangeify.h"

namespace kiln {

void dedup_kernels(const std::vector<RangeifiedKernel>& kernels, Plan& plan);

}  // namespace kiln
