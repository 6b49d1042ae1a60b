#include "compiler/codegen/lower_kernels.h"

#include "compiler/codegen/expander.h"
#include "compiler/codegen/llvm/target.h"
#include "compiler/opt/heuristics.h"
#include "compiler/support/error.h"

namespace kiln {

std::vector<DType> kernel_arg_dtypes(const UOp* ast) {
  std::vector<DType> out;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::DEFINE_GLOBAL) continue;
    size_t i = static_cast<size_t>(u->iarg());
    if (out.size() <= i) out.resize(i + 1);
    out[i] = u->dtype.base();
  }
  return out;
}

std::vector<LoweredKernel> lower_kernels(const Plan& plan, const Target& t, const LowerOptions& o) {
  std::vector<LoweredKernel> out;
  OptTarget ot;
  ot.vector_bytes = t.vector_bytes();
  ot.vector_registers = t.vector_registers();
  for (const KernelProgram& p : plan.programs) {
    LoweredKernel k;
    k.name = p.name;
    std::vector<Opt> opts = o.opt_level > 0 ? default_opts(p.ast, ot) : std::vector<Opt>{};
    k.optimized = apply_opts(p.ast, opts);
    k.lowered = expand_kernel(k.optimized.ast);
    k.codegen.name = p.name;
    k.codegen.program = linearize(k.lowered);
    k.codegen.arg_dtypes = kernel_arg_dtypes(p.ast);
    for (DType d : k.codegen.arg_dtypes)
      KILN_CHECK(d.scalar != ScalarKind::Void, "kernel ", p.name, " has an argument it never uses");
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace kiln
