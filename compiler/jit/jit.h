// In-process execution: kernels compiled for the host with ORC LLJIT, raw kernels (natural
// typed signatures) called through libffi. This serves `kilnc run`, the differential tests and
// (later) tuning.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/lower_kernels.h"
#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

class Target;

// A raw kernel: void f(void* a0, ..., void* aN, uint32_t task, uint32_t ntasks), called via libffi.
class FfiKernel {
 public:
  FfiKernel(void* fn, size_t nargs);
  ~FfiKernel();
  FfiKernel(const FfiKernel&) = delete;
  FfiKernel& operator=(const FfiKernel&) = delete;
  FfiKernel(FfiKernel&&) noexcept;
  void call(const std::vector<void*>& buffers, uint32_t task, uint32_t ntasks) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Lowered kernels compiled for the host in one LLJIT module; kernel(i) is kernels[i]'s raw entry.
class JitKernels {
 public:
  JitKernels(const std::vector<LoweredKernel>& kernels, const Target& host);
  ~JitKernels();
  const FfiKernel& kernel(size_t i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The kernels of a plan, compiled for the host and runnable.
class JitProgram {
 public:
  JitProgram(const Plan& plan, const Target& host, const LowerOptions& o);
  ~JitProgram();
  // Runs the plan on `inputs` (by name; weights from `g`), sequentially, every task of every
  // launch in order. Throws kiln::Error for a missing or mis-shaped input.
  std::map<std::string, NDArray> run(const Graph& g,
                                     const std::map<std::string, NDArray>& inputs) const;
  const std::vector<LoweredKernel>& kernels() const { return kernels_; }

 private:
  const Plan& plan_;
  std::vector<LoweredKernel> kernels_;
  JitKernels jit_;
};

}  // namespace kiln
