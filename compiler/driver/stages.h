// The stage table: every stage of the pipeline, in order, with what it dumps. --dump-ir,
// --time-passes, the progress lines and the verifiers all read this table, so a name that one
// of them prints is a name the others accept.
//
//   import          the model as Tensor API calls           dump: the graph as .kg text
//   const_fold      weight-only subgraphs evaluated          dump: the graph, what was folded
//   rangeify        movement ops as index math, fusion       dump: each kernel's AST
//   kernel_dedup    equal kernels share a program            dump: launches with their ASTs
//   parallel_groups Kahn levels of the launch DAG            dump: groups and launches
//   memory_plan     arena offsets and lifetimes              dump: the slots
//   optimize        each kernel's opts (choose_opts)         dump: opts, tasks, optimized AST
//   expand          vectors and accumulators                 dump: expanded AST
//   late_lower      target rewrites (late_lower.h)           dump: lowered AST
//   linearize       block-structured op lists                dump: the linear programs
//   llvm_ir         LLVM IR from the linear programs         dump: the module as built
//   llvm_opt        LLVM's O3, freestanding                  dump: the optimized module
//   codegen         machine code (object, or the JIT)        dump: assembly
//   link            the shared object (lld) or the archive   dump: sections and symbols
//   package         the .kiln package                        dump: its description
#pragma once

#include <string>
#include <vector>

#include "compiler/driver/compile.h"

namespace kiln {

// The state a compile threads through the stages.
struct Compilation {
  const std::string& model_path;  // "" for a graph built in code
  const CompileOptions& options;
  const TargetInfo& target;
  std::ostream& log;
  Artifacts& a;
};

struct Stage {
  const char* name;
  const char* dumps;            // what --dump-ir=<name> prints
  bool (*runs_for)(Emit emit);  // part of a compile producing `emit`
  void (*run)(Compilation& c);
  void (*dump)(Compilation& c, std::ostream& os);
  void (*verify)(const Compilation& c);  // nullptr: nothing to check
};

// All stages, in pipeline order.
const std::vector<Stage>& stages();
std::vector<std::string> stage_names();

// The middle end's stages (stages_middle.cc) and the back end's (stages_backend.cc).
std::vector<Stage> middle_end_stages();
std::vector<Stage> back_end_stages();

}  // namespace kiln
