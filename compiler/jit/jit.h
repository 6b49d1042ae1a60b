// In-process execution: kernels compiled for the host with ORC LLJIT (with the TargetMachine the
// target description makes), raw kernels (natural typed signatures) called through libffi. This
// serves `kilnc run`, the self-test's reference outputs, beam search's timing and the tests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/lower_kernel.h"
#include "compiler/opt/choose_opts.h"
#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace kiln {

class TargetInfo;

// A raw kernel: void f(void* a0, ..., void* aN, const int64_t* vars, uint32_t task,
// uint32_t ntasks), called via libffi. `vars` holds the symbols' values (slot order).
class FfiKernel {
 public:
  FfiKernel(void* fn, size_t nargs);
  ~FfiKernel();
  FfiKernel(const FfiKernel&) = delete;
  FfiKernel& operator=(const FfiKernel&) = delete;
  FfiKernel(FfiKernel&&) noexcept;
  void call(const std::vector<void*>& buffers, const int64_t* vars, uint32_t task,
            uint32_t ntasks) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Kernels compiled for the host in one LLJIT module; kernel(i) is kernels[i]'s raw entry.
class JitKernels {
 public:
  // Builds and optimizes the module itself.
  JitKernels(const std::vector<CodegenKernel>& kernels, const TargetInfo& host);
  // From a module already built (ModuleKind::Jit) and optimized for `host` (the pipeline's
  // llvm_ir and llvm_opt stages).
  JitKernels(std::unique_ptr<llvm::LLVMContext> ctx, std::unique_ptr<llvm::Module> module,
             const std::vector<CodegenKernel>& kernels, const TargetInfo& host);
  ~JitKernels();
  const FfiKernel& kernel(size_t i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A plan's kernels compiled for the host and runnable.
class JitProgram {
 public:
  // Optimizes (choose_opts with `o`), lowers and compiles every program of `plan`.
  JitProgram(const Plan& plan, const TargetInfo& host, const TuningOptions& o = {});
  // Kernels already compiled, one per program; `plan`'s launches carry their task counts.
  JitProgram(const Plan& plan, std::unique_ptr<JitKernels> kernels);
  ~JitProgram();
  // Runs the plan on `inputs` (by name; weights from `g`), sequentially, every task of every
  // launch in order. Throws kiln::Error for a missing or mis-shaped input.
  std::map<std::string, NDArray> run(const Graph& g,
                                     const std::map<std::string, NDArray>& inputs) const;
  // The lowered kernels (first constructor only; empty otherwise).
  const std::vector<LoweredKernel>& kernels() const { return kernels_; }

 private:
  Plan plan_;
  std::vector<LoweredKernel> kernels_;
  std::unique_ptr<JitKernels> jit_;
};

}  // namespace kiln
