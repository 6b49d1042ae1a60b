// LLVM IR for one kernel, from its linearized program.
//
// Two functions per kernel:
//   <name>.raw(ptr noalias a0, ..., ptr noalias aN, i32 task, i32 ntasks)   natural signature
//   <name>(ptr args, ptr vars, i32 task, i32 ntasks)                        the uniform ABI
// The entry loads its buffer pointers from `args` and calls the raw function (always inlined).
// A kernel split into `ntasks` tasks computes only its share of the Parallel loop for `task`.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/linearizer.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace kiln {

class Target;

struct KernelFunctions {
  llvm::Function* raw = nullptr;
  llvm::Function* entry = nullptr;
};

// `arg_dtypes[i]` is the element dtype of DEFINE_GLOBAL i.
KernelFunctions emit_kernel(llvm::Module& m, const std::string& name,
                            const std::vector<LinearOp>& program,
                            const std::vector<DType>& arg_dtypes, const Target& target);

}  // namespace kiln
