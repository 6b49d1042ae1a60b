#include "compiler/jit/jit.h"

#include <ffi.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Module.h>

#include <cstring>

#include "compiler/codegen/llvm/module_builder.h"
#include "compiler/codegen/llvm/target.h"
#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

// ---------------------------------------------------------------- libffi

struct FfiKernel::Impl {
  void* fn;
  ffi_cif cif;
  std::vector<ffi_type*> types;
};

FfiKernel::FfiKernel(void* fn, size_t nargs) : impl_(std::make_unique<Impl>()) {
  impl_->fn = fn;
  impl_->types.assign(nargs, &ffi_type_pointer);
  impl_->types.push_back(&ffi_type_uint32);
  impl_->types.push_back(&ffi_type_uint32);
  if (ffi_prep_cif(&impl_->cif, FFI_DEFAULT_ABI, static_cast<unsigned>(impl_->types.size()),
                   &ffi_type_void, impl_->types.data()) != FFI_OK)
    throw InternalError("ffi_prep_cif failed");
}
FfiKernel::~FfiKernel() = default;
FfiKernel::FfiKernel(FfiKernel&&) noexcept = default;

void FfiKernel::call(const std::vector<void*>& buffers, uint32_t task, uint32_t ntasks) const {
  std::vector<void*> values;
  std::vector<void*> ptrs = buffers;
  for (void*& p : ptrs) values.push_back(&p);
  values.push_back(&task);
  values.push_back(&ntasks);
  ffi_call(const_cast<ffi_cif*>(&impl_->cif), FFI_FN(impl_->fn), nullptr, values.data());
}

// ---------------------------------------------------------------- JitKernels

struct JitKernels::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<FfiKernel> kernels;
};

namespace {
template <typename T>
T check(llvm::Expected<T> e, const char* what) {
  if (!e) throw Error(std::string(what) + ": " + llvm::toString(e.takeError()));
  return std::move(*e);
}
}  // namespace

JitKernels::JitKernels(const std::vector<LoweredKernel>& kernels, const Target& host)
    : impl_(std::make_unique<Impl>()) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::vector<CodegenKernel> ck;
  for (const LoweredKernel& k : kernels) ck.push_back(k.codegen);
  std::unique_ptr<llvm::Module> m = build_module(*ctx, ck, host, ModuleKind::Jit);
  optimize_module(*m, host);
  auto jtmb = llvm::orc::JITTargetMachineBuilder(llvm::Triple(host.triple()));
  jtmb.setCPU(host.cpu());
  llvm::SubtargetFeatures features;
  for (const std::string& f : host.features()) features.AddFeature(f);
  jtmb.addFeatures(features.getFeatures());
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  impl_->jit = check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(),
                     "creating the JIT");
  if (auto err = impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw Error("JIT: " + llvm::toString(std::move(err)));
  for (const LoweredKernel& k : kernels) {
    auto addr = check(impl_->jit->lookup(k.name + ".raw"), "JIT lookup");
    impl_->kernels.emplace_back(addr.toPtr<void*>(), k.codegen.arg_dtypes.size());
  }
}

JitKernels::~JitKernels() = default;

const FfiKernel& JitKernels::kernel(size_t i) const {
  return impl_->kernels.at(i);
}

// ---------------------------------------------------------------- JitProgram

JitProgram::JitProgram(const Plan& plan, const Target& host, const LowerOptions& o)
    : plan_(plan), kernels_(lower_kernels(plan, host, o)), jit_(kernels_, host) {}

JitProgram::~JitProgram() = default;

std::map<std::string, NDArray> JitProgram::run(const Graph& g,
                                               const std::map<std::string, NDArray>& inputs) const {
  const Plan& plan = plan_;
  // The arena, 64-byte aligned.
  std::vector<uint8_t> arena_store(static_cast<size_t>(plan.memory.arena_bytes + 64));
  uint8_t* arena =
      arena_store.data() + (64 - reinterpret_cast<uintptr_t>(arena_store.data()) % 64) % 64;
  std::vector<void*> ptr(plan.buffers.size(), nullptr);
  std::vector<NDArray> in_copies;
  in_copies.reserve(plan.inputs.size());
  for (int id : plan.inputs) {
    const PlanBuffer& b = plan.buffer(id);
    auto it = inputs.find(b.name);
    if (it == inputs.end()) throw Error("no value for input '" + b.name + "'");
    if (it->second.shape() != b.shape || it->second.dtype() != b.dtype)
      throw Error("input '" + b.name + "' is " + it->second.dtype().str() +
                  shape_str(it->second.shape()) + ", the model wants " + b.dtype.str() +
                  shape_str(b.shape));
    in_copies.push_back(it->second);
    ptr[static_cast<size_t>(id)] = in_copies.back().data();
  }
  std::map<std::string, NDArray> outputs;
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind == BufferKind::Weight)
      ptr[static_cast<size_t>(b.id)] = const_cast<uint8_t*>(g.weight(b.weight_id).data());
    if (b.kind == BufferKind::Output) {
      outputs.emplace(b.name, NDArray(b.dtype, b.shape));
      ptr[static_cast<size_t>(b.id)] = outputs.at(b.name).data();
    }
  }
  for (const MemorySlot& s : plan.memory.slots)
    ptr[static_cast<size_t>(s.buffer)] = arena + s.offset;
  for (const auto& group : plan.groups)
    for (int li : group) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      std::vector<void*> args;
      for (int b : l.args) args.push_back(ptr[static_cast<size_t>(b)]);
      const LoweredKernel& k = kernels_[static_cast<size_t>(l.program)];
      uint32_t n = static_cast<uint32_t>(k.optimized.ntasks);
      for (uint32_t t = 0; t < n; ++t)
        jit_.kernel(static_cast<size_t>(l.program)).call(args, t, n);
    }
  return outputs;
}

}  // namespace kiln
