// A kernel from its optimized AST to the emitter's input, through the pipeline stages expand
// (vectors and accumulators), late_lower (target rewrites) and linearize.
#pragma once

#include <string>

#include "compiler/codegen/llvm/kernel_emitter.h"
#include "compiler/opt/opts.h"

namespace kiln {

class TargetInfo;

struct LoweredKernel {
  std::string name;
  const UOp* expanded = nullptr;  // after the expander
  const UOp* lowered = nullptr;   // after late lowering
  CodegenKernel codegen;          // linearized
};

// The emitter's input for a lowered kernel: its linear program, the argument dtypes of its
// original AST `ast` (what the package records), its index width and its weight-prefetch plan
// for target `t`. Throws InternalError for an argument the kernel never uses.
CodegenKernel codegen_kernel(const std::string& name, const UOp* ast, const UOp* lowered,
                             const TargetInfo& t);

// All three stages for one kernel (the JIT's and the tuner's path).
LoweredKernel lower_kernel(const std::string& name, const UOp* ast, const OptimizedKernel& k,
                           const TargetInfo& t);

}  // namespace kiln
