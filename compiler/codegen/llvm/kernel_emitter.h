// LLVM IR for one kernel, from its linearized program: emission only, one LinearOp at a time.
// What depends on the target was decided before (late_lower.h: division, rounding, 16-bit
// floats; the index width), so the emitter needs no target description.
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
#include "compiler/codegen/weight_prefetch.h"
#include "compiler/schedule/plan.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace kiln {

struct CodegenKernel {
  std::string name;  // symbol of the entry; the raw kernel is "<name>.raw"
  std::vector<LinearOp> program;
  std::vector<DType> arg_dtypes;    // element dtype of each argument buffer, as the package has it
  std::vector<ArgAccess> accesses;  // the bytes each argument may touch (the entry table has them)
  int index_bits = 64;              // 32 when every index value fits (late_lower.h: index_bits)
  // Arguments that may share memory with another (a launch writes its output in place of an
  // input: memory_plan.h's in_place_sources): not marked noalias. Empty: none.
  std::vector<bool> may_alias;
  // Prefetches of the next task's weight panel (weight_prefetch.h); empty: none.
  WeightPrefetch prefetch;
};

struct KernelFunctions {
  llvm::Function* raw = nullptr;
  llvm::Function* entry = nullptr;
};

KernelFunctions emit_kernel(llvm::Module& m, const CodegenKernel& kernel);

}  // namespace kiln
