// From planned kernel ASTs to linearized programs: kernel optimization (opts chosen by the
// heuristics, or none at --opt-level 0), expansion into vectors and accumulators, linearization.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/linearizer.h"
#include "compiler/codegen/llvm/module_builder.h"
#include "compiler/opt/heuristics.h"
#include "compiler/opt/opts.h"
#include "compiler/schedule/plan.h"

namespace kiln {

class Target;

struct LoweredKernel {
  std::string name;
  OptimizedKernel optimized;  // the AST after opts, with its task count
  const UOp* lowered = nullptr;
  CodegenKernel codegen;
};

struct LowerOptions {
  int opt_level = 2;  // 0: no opts (scalar loops); >= 1: default heuristics
  // Opts chosen by the tuner (--beam, --tuning-cache), by program name; they take precedence.
  const std::map<std::string, std::vector<Opt>>* tuned = nullptr;
};

// The heuristics' view of a target (vector width, registers).
OptTarget opt_target(const Target& t);

// One kernel: opts applied, expanded, linearized.
LoweredKernel lower_kernel(const std::string& name, const UOp* ast, const std::vector<Opt>& opts);

// One LoweredKernel per program of the plan, in program order.
std::vector<LoweredKernel> lower_kernels(const Plan& plan, const Target& t, const LowerOptions& o);

// The element dtypes of a kernel's arguments (DEFINE_GLOBAL 0..n-1).
std::vector<DType> kernel_arg_dtypes(const UOp* ast);

}  // namespace kiln
