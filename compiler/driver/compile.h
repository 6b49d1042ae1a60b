// The compiler as one function: compile(model, options) -> artifacts, running the stage table
// (stages.h) from import to package. What to produce (Emit) decides how far it goes; every stage
// is timed (--time-passes), reports progress, is verified and can be dumped by name
// (--dump-ir=STAGE), all from the one table.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/lower_kernel.h"
#include "compiler/frontend/load_model.h"
#include "compiler/opt/choose_opts.h"
#include "compiler/schedule/const_fold.h"
#include "compiler/schedule/fusion_policy.h"
#include "compiler/schedule/plan.h"
#include "compiler/schedule/rangeify.h"
#include "compiler/support/pass_timer.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace kiln {

class JitProgram;
class TuningCache;
struct SigningKey;

// What a compile produces, and so which stages run.
enum class Emit : uint8_t {
  Plan,           // through memory_plan (kilnc plan)
  Jit,            // kernels compiled in process for the host (kilnc run)
  LlvmIr,         // through llvm_opt
  Assembly,       // through codegen
  Object,         // through codegen
  SharedObject,   // through link
  Package,        // everything (the default)
  StaticLibrary,  // an archive, its header and a code-less package
};

struct CompileOptions {
  Emit emit = Emit::Package;
  ModelOptions model;                  // input shapes, dim parameters, frozen inputs
  const TargetInfo* target = nullptr;  // nullptr: the host
  // More kernel variants in the package (Emit::Package, compile(path) only): the model is compiled
  // for each of these targets too, each planned and optimized for its own TargetInfo, and the
  // package holds them all after `target`'s, in this order (the runtime runs the last one the CPU
  // can: list them from the most portable to the most capable).
  std::vector<const TargetInfo*> variant_targets;
  TuningOptions tuning;  // opt level, beam search, tuning cache (timer: the JIT's)
  // Values for model inputs, by name, checked against the model right after import. Emit::Jit
  // runs them and wants every input; the self-test uses them and fills the rest with seeded
  // random values (floats in [-1, 1], integers and booleans 0).
  std::map<std::string, NDArray> inputs;
  bool embed_selftest = false;  // Package, StaticLibrary: inputs and this machine's outputs
  std::vector<std::string> provenance_flags;  // recorded in the package: what decided it
  std::string model_sha256;  // of the source; compile(path) computes it from the file
  const SigningKey* signing_key = nullptr;  // sign the package (package/package_signing.h)
  // StaticLibrary: the output path (NAME or NAME.a; the C symbol derives from NAME), and whether
  // the package goes inside the archive.
  std::string static_output;
  bool embed_package = false;
  // Diagnostics.
  std::set<std::string> dump_ir;         // stage names (stage_names()), or "all"
  std::string dump_dir = "kiln-dump";    // where the import dump writes weights as .npy
  bool explain_fusion = false;           // log every fusion decision
  int cross_core_threads = 0;            // > 0: log the lines launches move between cores
  bool verify = true;                    // run each stage's verifier
  const FusionPolicy* policy = nullptr;  // nullptr: DefaultFusionPolicy
  std::ostream* log = nullptr;           // dumps and explanations (nullptr: std::cerr)
  PassTimes* times = nullptr;            // --time-passes and progress lines

  // Whether the stage named `stage` is to be dumped.
  bool dumps(const std::string& stage) const {
    return dump_ir.count(stage) || dump_ir.count("all");
  }
};

struct Artifacts {
  Artifacts();
  ~Artifacts();
  Artifacts(Artifacts&&) noexcept;
  Artifacts& operator=(Artifacts&&) noexcept;

  Graph* graph = nullptr;  // the model (owned, or the caller's)
  std::string model_sha256;
  ConstFoldStats folded;
  std::vector<RangeifiedKernel> rangeified;  // before kernel_dedup
  Plan plan;
  std::vector<OptimizedKernel> optimized;  // by program
  TuneStats tuning;
  std::vector<LoweredKernel> kernels;  // by program
  std::string llvm_ir;                 // after llvm_opt (Emit::LlvmIr, or dumped)
  std::string assembly;                // Emit::Assembly, or dumped
  std::vector<uint8_t> object;         // the kernels' relocatable object
  std::vector<uint8_t> shared_object;  // the linked, freestanding kernels
  std::vector<uint8_t> package;        // the .kiln bytes
  // Emit::StaticLibrary: write `archive` to <static_prefix>.a, `header` to <static_prefix>.h and,
  // unless embedded, `package` to <static_prefix>.kiln.
  std::string static_prefix, static_symbol;
  uint32_t static_id = 0;  // binds the code-less package to the archive's entry table
  std::vector<uint8_t> archive;
  std::string header;
  std::unique_ptr<JitProgram> jit;  // Emit::Jit
  // CompileOptions::variant_targets' compiles (through link), in order.
  std::vector<Artifacts> variants;

  // Between stages: the LLVM module of llvm_ir and llvm_opt.
  std::unique_ptr<llvm::LLVMContext> llvm_context;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<Graph> owned_graph;
};

// Loads the model file (.kg or .onnx) and compiles it.
Artifacts compile(const std::string& model_path, const CompileOptions& o);
// Compiles a graph built in code; `g` is modified (constant folding) and must outlive the result.
Artifacts compile(Graph& g, const CompileOptions& o);
// The plan of `g` (stages const_fold .. memory_plan); `g` is modified.
Plan plan_graph(Graph& g, const CompileOptions& o = {});

// The plan summary that `kilnc plan` prints (text or one JSON object).
std::string plan_summary(const Plan& plan, bool json);

}  // namespace kiln
