#include "compiler/jit/jit.h"

#include <ffi.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstring>

#include "compiler/codegen/llvm/module_builder.h"
#include "compiler/jit/kernel_timer.h"
#include "compiler/schedule/extents.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
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
  impl_->types.assign(nargs + 1, &ffi_type_pointer);  // the buffers, then vars
  impl_->types.push_back(&ffi_type_uint32);
  impl_->types.push_back(&ffi_type_uint32);
  if (ffi_prep_cif(&impl_->cif, FFI_DEFAULT_ABI, static_cast<unsigned>(impl_->types.size()),
                   &ffi_type_void, impl_->types.data()) != FFI_OK)
    throw InternalError("ffi_prep_cif failed");
}
FfiKernel::~FfiKernel() = default;
FfiKernel::FfiKernel(FfiKernel&&) noexcept = default;

void FfiKernel::call(const std::vector<void*>& buffers, const int64_t* vars, uint32_t task,
                     uint32_t ntasks) const {
  std::vector<void*> values;
  std::vector<void*> ptrs = buffers;
  for (void*& p : ptrs) values.push_back(&p);
  const int64_t* v = vars;
  values.push_back(&v);
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

JitKernels::JitKernels(const std::vector<CodegenKernel>& kernels, const TargetInfo& host)
    : JitKernels(std::make_unique<llvm::LLVMContext>(), nullptr, kernels, host) {}

JitKernels::JitKernels(std::unique_ptr<llvm::LLVMContext> context,
                       std::unique_ptr<llvm::Module> module,
                       const std::vector<CodegenKernel>& kernels, const TargetInfo& host)
    : impl_(std::make_unique<Impl>()) {
  // Locals, declared context first: on an exception (a module that does not verify) the module
  // is destroyed before its context. The parameters' order of destruction is the caller's, and
  // a module outliving its context crashed `kilnc --beam` instead of reporting the error.
  std::unique_ptr<llvm::LLVMContext> ctx = std::move(context);
  std::unique_ptr<llvm::Module> m = std::move(module);
  if (!host.runs_here())
    throw OptionError(Option::Target, "code for " + host.triple() + " " + host.cpu() +
                                          " does not run on this machine (the JIT runs it here)");
  if (!m) {
    m = build_module(*ctx, kernels, host, ModuleKind::Jit);
    optimize_module(*m, host);
  }
  // The JIT compiles with a TargetMachine the target description makes (the same CPU and
  // features as everything else), not one of its own detection.
  auto machine = std::make_shared<std::unique_ptr<llvm::TargetMachine>>(host.create_machine());
  llvm::DataLayout layout = (*machine)->createDataLayout();
  llvm::orc::JITTargetMachineBuilder jtmb((llvm::Triple(host.triple())));
  impl_->jit = check(
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(jtmb))
          .setDataLayout(layout)
          .setCompileFunctionCreator(
              [machine](llvm::orc::JITTargetMachineBuilder)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                return std::make_unique<llvm::orc::TMOwningSimpleCompiler>(std::move(*machine));
              })
          .create(),
      "creating the JIT");
  if (auto err = impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw Error("JIT: " + llvm::toString(std::move(err)));
  for (const CodegenKernel& k : kernels) {
    auto addr = check(impl_->jit->lookup(k.name + ".raw"), "JIT lookup");
    impl_->kernels.emplace_back(addr.toPtr<void*>(), k.arg_dtypes.size());
  }
}

JitKernels::~JitKernels() = default;

const FfiKernel& JitKernels::kernel(size_t i) const {
  return impl_->kernels.at(i);
}

// ---------------------------------------------------------------- JitProgram

namespace {
std::vector<CodegenKernel> codegen_of(const std::vector<LoweredKernel>& kernels) {
  std::vector<CodegenKernel> out;
  for (const LoweredKernel& k : kernels) out.push_back(k.codegen);
  return out;
}
}  // namespace

JitProgram::JitProgram(const Plan& plan, const TargetInfo& host, const TuningOptions& o)
    : plan_(plan) {
  TuningOptions tuning = o;
  CandidateTimer timer;
  if (o.beam > 0 && !o.timer) {
    timer = jit_candidate_timer(host);
    tuning.timer = &timer;
  }
  std::vector<OptimizedKernel> optimized = optimize_programs(plan_, host, tuning);
  set_launch_tasks(plan_, optimized);
  for (size_t i = 0; i < plan_.programs.size(); ++i)
    kernels_.push_back(
        lower_kernel(plan_.programs[i].name, plan_.programs[i].ast, optimized[i], host));
  jit_ = std::make_unique<JitKernels>(codegen_of(kernels_), host);
}

JitProgram::JitProgram(const Plan& plan, std::unique_ptr<JitKernels> kernels)
    : plan_(plan), jit_(std::move(kernels)) {}

JitProgram::~JitProgram() = default;

namespace {

// Copies the box [0, box) between two row-major arrays of one rank (a symbolic input into its
// buffer laid out at the bounds, or an output's valid region out of it).
void copy_box(const uint8_t* src, const Shape& src_shape, uint8_t* dst, const Shape& dst_shape,
              const Shape& box, size_t item) {
  size_t rank = box.size();
  if (shape_numel(box) == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  std::vector<int64_t> ss(rank, 1), ds(rank, 1);
  for (size_t i = rank - 1; i-- > 0;) {
    ss[i] = ss[i + 1] * src_shape[i + 1];
    ds[i] = ds[i + 1] * dst_shape[i + 1];
  }
  size_t row = static_cast<size_t>(box[rank - 1]) * item;
  std::vector<int64_t> at(rank, 0);
  while (true) {
    int64_t so = 0, d = 0;
    for (size_t i = 0; i + 1 < rank; ++i) {
      so += at[i] * ss[i];
      d += at[i] * ds[i];
    }
    std::memcpy(dst + static_cast<size_t>(d) * item, src + static_cast<size_t>(so) * item, row);
    size_t i = rank - 1;
    while (i-- > 0) {
      if (++at[i] < box[i]) break;
      at[i] = 0;
    }
    if (i == SIZE_MAX) return;
  }
}

}  // namespace

std::map<std::string, NDArray> JitProgram::run(const Graph& g,
                                               const std::map<std::string, NDArray>& inputs) const {
  const Plan& plan = plan_;
  // The arena, 64-byte aligned.
  // Filled with 0xff (NaN for floats): a kernel that reads a slot before it is written, or past
  // a symbolic extent, shows in the outputs rather than reading zeros.
  std::vector<uint8_t> arena_store(static_cast<size_t>(plan.memory.arena_bytes + 64), 0xff);
  uint8_t* arena =
      arena_store.data() + (64 - reinterpret_cast<uintptr_t>(arena_store.data()) % 64) % 64;
  std::vector<void*> ptr(plan.buffers.size(), nullptr);
  std::vector<NDArray> in_copies;
  in_copies.reserve(plan.inputs.size());
  std::vector<std::string> names;
  std::vector<Shape> static_shapes, shapes;
  std::vector<std::vector<const UOp*>> extents;
  for (int id : plan.inputs) {
    const PlanBuffer& b = plan.buffer(id);
    auto it = inputs.find(b.name);
    if (it == inputs.end()) throw Error("no value for input '" + b.name + "'");
    if (it->second.dtype() != b.dtype || (plan.symbols.empty() && it->second.shape() != b.shape))
      throw Error("input '" + b.name + "' is " + it->second.dtype().str() +
                  shape_str(it->second.shape()) + ", the model wants " + b.dtype.str() +
                  shape_str(b.shape));
    names.push_back(b.name);
    static_shapes.push_back(b.shape);
    shapes.push_back(it->second.shape());
    extents.push_back(b.extents);
  }
  // Symbolic sizes: bound from the inputs' shapes, each input copied into its buffer laid out at
  // the bounds (the rest filled with 0xff, as the arena is).
  std::vector<int64_t> vars = bind_symbols(plan.symbols, names, static_shapes, extents, shapes);
  bind_value_symbols(plan, inputs, vars);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const PlanBuffer& b = plan.buffer(plan.inputs[i]);
    const NDArray& given = inputs.at(b.name);
    if (given.shape() == b.shape) {
      in_copies.push_back(given);
    } else {
      in_copies.emplace_back(b.dtype, b.shape);
      std::memset(in_copies.back().data(), 0xff, static_cast<size_t>(in_copies.back().nbytes()));
      copy_box(given.data(), given.shape(), in_copies.back().data(), b.shape, given.shape(),
               static_cast<size_t>(b.dtype.itemsize()));
    }
    ptr[static_cast<size_t>(b.id)] = in_copies.back().data();
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
  vars.push_back(0);  // never empty: data() is a valid pointer
  for (const MemorySlot& s : plan.memory.slots)
    ptr[static_cast<size_t>(s.buffer)] = arena + s.offset;
  auto read_scalar = [&](int buffer) {
    const PlanBuffer& b = plan.buffer(buffer);
    return NDArray(b.dtype, {},
                   std::vector<uint8_t>(static_cast<uint8_t*>(ptr[static_cast<size_t>(buffer)]),
                                        static_cast<uint8_t*>(ptr[static_cast<size_t>(buffer)]) +
                                            b.dtype.itemsize()))
        .get(0)
        .as_int();
  };
  run_schedule(plan, vars, read_scalar, [&](int g) {
    for (int li : plan.groups[static_cast<size_t>(g)]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      std::vector<void*> args;
      for (int b : l.args) args.push_back(ptr[static_cast<size_t>(b)]);
      uint32_t n = static_cast<uint32_t>(l.ntasks);
      for (uint32_t t = 0; t < n; ++t)
        jit_->kernel(static_cast<size_t>(l.program)).call(args, vars.data(), t, n);
    }
  });
  // A symbolic output: its valid region, at the shape its extents give.
  for (int id : plan.outputs) {
    const PlanBuffer& b = plan.buffer(id);
    if (b.extents.empty()) continue;
    Shape shape;
    for (const UOp* e : b.extents) shape.push_back(eval_extent(e, vars));
    NDArray out(b.dtype, shape);
    copy_box(outputs.at(b.name).data(), b.shape, out.data(), shape, shape,
             static_cast<size_t>(b.dtype.itemsize()));
    outputs.at(b.name) = std::move(out);
  }
  return outputs;
}

}  // namespace kiln
