#include "compiler/driver/codegen_driver.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <iostream>

#include "compiler/codegen/llvm/link.h"
#include "compiler/codegen/llvm/module_builder.h"
#include "compiler/codegen/llvm/target.h"
#include "compiler/ir/printer.h"
#include "compiler/support/error.h"

namespace kiln {

const std::vector<std::string>& codegen_stages() {
  static const std::vector<std::string> s = {"optimize", "expand", "linearize", "llvm", "asm"};
  return s;
}

namespace {
bool wants(const PipelineOptions& o, const std::string& stage) {
  return o.dump_ir.count(stage) || o.dump_ir.count("all");
}
}  // namespace

CodegenArtifacts generate_code(const Plan& plan, const Target& t, const LowerOptions& lo,
                               const CodegenRequest& req, const PipelineOptions& opts) {
  std::ostream& log = opts.log ? *opts.log : std::cerr;
  CodegenArtifacts out;
  {
    ScopedPass pt(opts.times, "optimize+lower", str_cat(plan.programs.size(), " kernels"));
    out.kernels = lower_kernels(plan, t, lo);
  }
  for (const LoweredKernel& k : out.kernels) {
    if (wants(opts, "optimize")) {
      log << "--- optimize: " << k.name << " (" << k.optimized.ntasks << " tasks;";
      for (const Opt& o : k.optimized.opts) log << " " << o.str();
      log << ") ---\n" << print_graph(k.optimized.ast);
    }
    if (wants(opts, "expand"))
      log << "--- expand: " << k.name << " ---\n" << print_graph(k.lowered);
    if (wants(opts, "linearize"))
      log << "--- linearize: " << k.name << " ---\n" << print_linear(k.codegen.program);
  }
  llvm::LLVMContext ctx;
  std::vector<CodegenKernel> ck;
  for (const LoweredKernel& k : out.kernels) ck.push_back(k.codegen);
  std::unique_ptr<llvm::Module> m;
  {
    ScopedPass pt(opts.times, "llvm_ir");
    m = req.static_table.empty()
            ? build_module(ctx, ck, t, ModuleKind::Package)
            : build_module(ctx, ck, t, ModuleKind::Static, req.static_table, req.static_id);
  }
  {
    ScopedPass pt(opts.times, "llvm_opt");
    optimize_module(*m, t);
  }
  if (req.llvm_ir || wants(opts, "llvm")) out.llvm_ir = module_ir(*m);
  if (wants(opts, "llvm")) log << "--- llvm ---\n" << out.llvm_ir;
  if (req.assembly || wants(opts, "asm")) out.assembly = emit_assembly(*m, t);
  if (wants(opts, "asm")) log << "--- asm ---\n" << out.assembly;
  {
    ScopedPass pt(opts.times, "llvm_codegen");
    out.object = emit_object(*m, t);
  }
  if (req.shared_object && req.static_table.empty()) {
    ScopedPass pt(opts.times, "link");
    out.shared_object = link_shared_object(out.object, t);
  }
  return out;
}

}  // namespace kiln
