// The back end's stages: optimize through package (stages.h).
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>
#include <random>

#include "compiler/codegen/expander.h"
#include "compiler/codegen/late_lower.h"
#include "compiler/codegen/linearizer.h"
#include "compiler/codegen/llvm/link.h"
#include "compiler/codegen/llvm/module_builder.h"
#include "compiler/codegen/llvm/static_archive.h"
#include "compiler/driver/stages.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/jit/jit.h"
#include "compiler/jit/kernel_timer.h"
#include "compiler/opt/cross_core_traffic.h"
#include "compiler/opt/thread_affine_arena.h"
#include "compiler/package/package_reader.h"
#include "compiler/package/package_writer.h"
#include "compiler/package/static_library.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/support/error.h"

namespace kiln {

namespace {

bool kernels(Emit e) {
  return e != Emit::Plan;
}
bool machine_code(Emit e) {
  return e != Emit::Plan && e != Emit::LlvmIr;
}
bool linked(Emit e) {
  return e == Emit::SharedObject || e == Emit::Package || e == Emit::StaticLibrary;
}
bool packaged(Emit e) {
  return e == Emit::Package || e == Emit::StaticLibrary;
}

// ---- optimize: each kernel's opts (opt/choose_opts.h); task counts into the launches ----

void optimize_run(Compilation& c) {
  TuningOptions o = c.options.tuning;
  CandidateTimer timer;
  if (o.beam > 0 && !o.timer) {
    timer = jit_candidate_timer(c.target);
    o.timer = &timer;
  }
  if (!o.times) o.times = c.options.times;
  o.threads = c.a.graph->lowering().threads;
  c.a.optimized = optimize_programs(c.a.plan, c.target, o, &c.a.tuning);
  set_launch_tasks(c.a.plan, c.a.optimized);
  if (o.threads > 1) {
    ArenaPlacement moved =
        place_arena_for_threads(c.a.plan, c.a.optimized, static_cast<int>(o.threads));
    if (moved.slots_moved > 0) {
      std::string err = check_memory_plan(c.a.plan);
      if (!err.empty()) throw InternalError("memory plan after thread-affine offsets: " + err);
      c.log << "arena for " << o.threads << " threads: " << moved.slots_moved << " of "
            << c.a.plan.memory.slots.size() << " buffers moved, lines between cores per run "
            << moved.lines_before << " -> " << moved.lines_after << "\n";
    }
  }
  if (int t = c.options.cross_core_threads; t > 0)
    c.log << cross_core_report(c.a.plan, cross_core_traffic(c.a.plan, c.a.optimized, t), t);
  c.a.kernels.resize(c.a.plan.programs.size());
  for (size_t i = 0; i < c.a.kernels.size(); ++i) c.a.kernels[i].name = c.a.plan.programs[i].name;
}
void optimize_dump(Compilation& c, std::ostream& os) {
  for (size_t i = 0; i < c.a.optimized.size(); ++i) {
    const OptimizedKernel& k = c.a.optimized[i];
    os << c.a.plan.programs[i].name << " (" << k.ntasks << " tasks;";
    for (const Opt& o : k.opts) os << " " << o.str();
    os << "):\n" << print_graph(k.ast);
  }
}
void optimize_verify(const Compilation& c) {
  for (const OptimizedKernel& k : c.a.optimized) verify(k.ast, IrStage::Kernel);
}

// ---- expand, late_lower, linearize ----

void expand_run(Compilation& c) {
  for (size_t i = 0; i < c.a.kernels.size(); ++i)
    c.a.kernels[i].expanded = expand_kernel(c.a.optimized[i].ast);
}
void expand_dump(Compilation& c, std::ostream& os) {
  for (const LoweredKernel& k : c.a.kernels) os << k.name << ":\n" << print_graph(k.expanded);
}

void late_lower_run(Compilation& c) {
  for (LoweredKernel& k : c.a.kernels) k.lowered = late_lower(k.expanded, c.target);
}
void late_lower_dump(Compilation& c, std::ostream& os) {
  for (const LoweredKernel& k : c.a.kernels) os << k.name << ":\n" << print_graph(k.lowered);
}
void late_lower_verify(const Compilation& c) {
  for (const LoweredKernel& k : c.a.kernels) verify(k.lowered, IrStage::Lowered);
}

void linearize_run(Compilation& c) {
  for (size_t i = 0; i < c.a.kernels.size(); ++i) {
    LoweredKernel& k = c.a.kernels[i];
    k.codegen = codegen_kernel(k.name, c.a.plan.programs[i].ast, k.lowered, c.target);
  }
}
void linearize_dump(Compilation& c, std::ostream& os) {
  for (const LoweredKernel& k : c.a.kernels)
    os << k.name << " (i" << k.codegen.index_bits << " indices):\n"
       << print_linear(k.codegen.program);
}

// ---- llvm_ir, llvm_opt ----

// A launch writing its output in place of an input (the memory plan's in-place pairs) passes
// one buffer twice: its program's two arguments are not noalias (LLVM could otherwise assume
// the store and the load never touch the same bytes).
std::vector<CodegenKernel> codegen_kernels(const Compilation& c) {
  std::vector<CodegenKernel> ck;
  for (const LoweredKernel& k : c.a.kernels) ck.push_back(k.codegen);
  const Plan& plan = c.a.plan;
  std::vector<int> in_place_of(plan.buffers.size(), -1);
  for (const MemorySlot& s : plan.memory.slots)
    in_place_of[static_cast<size_t>(s.buffer)] = s.in_place_of;
  for (const Launch& l : plan.launches) {
    int source = in_place_of[static_cast<size_t>(l.args[0])];
    if (source < 0 || l.program < 0 || static_cast<size_t>(l.program) >= ck.size()) continue;
    CodegenKernel& k = ck[static_cast<size_t>(l.program)];
    k.may_alias.resize(l.args.size(), false);
    for (size_t a = 0; a < l.args.size(); ++a)
      if (a == 0 || l.args[a] == source) k.may_alias[a] = true;
  }
  return ck;
}

void llvm_ir_run(Compilation& c) {
  c.a.llvm_context = std::make_unique<llvm::LLVMContext>();
  std::vector<CodegenKernel> ck = codegen_kernels(c);
  if (c.options.emit == Emit::Jit)
    c.a.module = build_module(*c.a.llvm_context, ck, c.target, ModuleKind::Jit);
  else if (c.options.emit == Emit::StaticLibrary) {
    // The id binding the code-less package to this table: from the model's digest (known since
    // import) and the flags.
    c.a.static_id = static_kernels_id(c.a.model_sha256, c.options.provenance_flags);
    c.a.module = build_module(*c.a.llvm_context, ck, c.target, ModuleKind::Static,
                              c.a.static_symbol + "_kernels", c.a.static_id);
  } else
    c.a.module = build_module(*c.a.llvm_context, ck, c.target, ModuleKind::Package);
}
void module_dump(Compilation& c, std::ostream& os) {
  os << module_ir(*c.a.module);
}
void module_verify(const Compilation& c) {
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*c.a.module, &es))
    throw InternalError("LLVM module does not verify: " + err);
}

void llvm_opt_run(Compilation& c) {
  optimize_module(*c.a.module, c.target);
  if (c.options.emit == Emit::LlvmIr) c.a.llvm_ir = module_ir(*c.a.module);
}

// ---- codegen: an object file, or the JIT ----

void codegen_run(Compilation& c) {
  if (c.options.emit == Emit::Assembly || c.options.dumps("codegen"))
    c.a.assembly = emit_assembly(*c.a.module, c.target);
  if (c.options.emit == Emit::Jit) {
    auto jit = std::make_unique<JitKernels>(std::move(c.a.llvm_context), std::move(c.a.module),
                                            codegen_kernels(c), c.target);
    c.a.jit = std::make_unique<JitProgram>(c.a.plan, std::move(jit));
    return;
  }
  if (c.options.emit != Emit::Assembly) c.a.object = emit_object(*c.a.module, c.target);
}
void codegen_dump(Compilation& c, std::ostream& os) {
  os << c.a.assembly;
}

// ---- link: the shared object, or the static library's archive ----

void link_run(Compilation& c) {
  if (c.options.emit == Emit::StaticLibrary) {
    c.a.archive = static_archive(c.a.static_symbol, c.a.object, nullptr, c.target);
    return;
  }
  c.a.shared_object = link_shared_object(c.a.object, c.target);
}
void link_dump(Compilation& c, std::ostream& os) {
  if (c.options.emit == Emit::StaticLibrary) {
    os << "static library " << c.a.static_symbol << ".a: " << c.a.archive.size()
       << " bytes, entry table " << c.a.static_symbol << "_kernels (" << c.a.kernels.size()
       << " kernels)\n";
    return;
  }
  os << shared_object_symbols(c.a.shared_object);
}
void link_verify(const Compilation& c) {
  if (c.options.emit == Emit::StaticLibrary) return;
  std::string err = check_shared_object(c.a.shared_object, c.target);
  if (!err.empty()) throw InternalError("the linked kernels are not freestanding: " + err);
}

// ---- package ----

// The self-test's data: the given inputs, or seeded random values (floats uniform in [-1, 1];
// integers and booleans 0, which are valid indices), and this machine's outputs for them.
SelfTestData make_selftest(const Compilation& c) {
  const Plan& plan = c.a.plan;
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::map<std::string, NDArray> inputs;
  SelfTestData st;
  for (int id : plan.inputs) {
    const PlanBuffer& b = plan.buffer(id);
    NDArray arr(b.dtype, b.shape);
    if (auto it = c.options.inputs.find(b.name); it != c.options.inputs.end()) {
      arr = it->second;  // (checked against the model after import)
    } else if (b.dtype.is_float()) {
      for (int64_t i = 0; i < arr.numel(); ++i) arr.set(i, ConstValue::of_float(uni(rng)));
    }
    st.inputs.push_back(arr.bytes());
    inputs.emplace(b.name, std::move(arr));
  }
  TuningOptions host_opts;
  host_opts.opt_level = c.options.tuning.opt_level;
  auto outputs = JitProgram(plan, TargetInfo::host(), host_opts).run(*c.a.graph, inputs);
  for (int id : plan.outputs) st.outputs.push_back(outputs.at(plan.buffer(id).name).bytes());
  return st;
}

void package_run(Compilation& c) {
  std::optional<SelfTestData> selftest;
  if (c.options.embed_selftest) selftest = make_selftest(c);
  bool is_static = c.options.emit == Emit::StaticLibrary;
  PackageProvenance prov{c.options.provenance_flags, c.a.model_sha256};
  std::vector<PackageVariant> variants = {{&c.a.plan, c.a.graph, &c.a.shared_object, &c.target}};
  for (size_t i = 0; i < c.a.variants.size(); ++i) {
    const Artifacts& v = c.a.variants[i];
    variants.push_back({&v.plan, v.graph, &v.shared_object, c.options.variant_targets.at(i)});
  }
  c.a.package = write_package(variants, prov, selftest ? &*selftest : nullptr, c.a.static_id,
                              c.options.signing_key);
  if (!is_static) return;
  std::string package_file = std::filesystem::path(c.a.static_prefix + ".kiln").filename().string();
  if (c.options.embed_package)
    c.a.archive = static_archive(c.a.static_symbol, c.a.object, &c.a.package, c.target);
  c.a.header = static_library_header(c.a.static_symbol, c.a.kernels.size(), c.options.embed_package,
                                     package_file);
}
void package_dump(Compilation& c, std::ostream& os) {
  os << describe_package(c.a.package, false);
}
void package_verify(const Compilation& c) {
  describe_package(c.a.package, false);  // the FlatBuffers verifier and the checksum
}

}  // namespace

std::vector<Stage> back_end_stages() {
  return {
      {"optimize", "each kernel's opts, task count and optimized AST", kernels, optimize_run,
       optimize_dump, optimize_verify},
      {"expand", "each kernel's AST with vectors and accumulators", kernels, expand_run,
       expand_dump, nullptr},
      {"late_lower", "each kernel's AST after the target's rewrites", kernels, late_lower_run,
       late_lower_dump, late_lower_verify},
      {"linearize", "each kernel's linear program and index width", kernels, linearize_run,
       linearize_dump, nullptr},
      {"llvm_ir", "the LLVM module as built", kernels, llvm_ir_run, module_dump, module_verify},
      {"llvm_opt", "the LLVM module after optimization", kernels, llvm_opt_run, module_dump,
       module_verify},
      {"codegen", "the assembly", machine_code, codegen_run, codegen_dump, nullptr},
      {"link", "the shared object's sections and exported symbols (or the archive)", linked,
       link_run, link_dump, link_verify},
      {"package", "the package's description (as kilnc inspect prints it)", packaged, package_run,
       package_dump, package_verify},
  };
}

}  // namespace kiln
