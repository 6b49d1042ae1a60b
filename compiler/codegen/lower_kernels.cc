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

OptTarget opt_target(const Target& t) {
  OptTarget ot;
  ot.vector_bytes = t.vector_bytes();
  ot.vector_registers = t.vector_registers();
  // AVX has masked loads and stores of 32/64-bit lanes (vmaskmov); NEON and SSE do not (LLVM
  // would split them into a branch per lane).
  ot.masked_vectors = t.is_x86() && t.has_feature("avx");
  return ot;
}

LoweredKernel lower_kernel(const std::string& name, const UOp* ast, const std::vector<Opt>& opts) {
  LoweredKernel k;
  k.name = name;
  k.optimized = apply_opts(ast, opts);
  k.lowered = expand_kernel(k.optimized.ast);
  k.codegen.name = name;
  k.codegen.program = linearize(k.lowered);
  k.codegen.arg_dtypes = kernel_arg_dtypes(ast);
  for (DType d : k.codegen.arg_dtypes)
    KILN_CHECK(d.scalar != ScalarKind::Void, "kernel ", name, " has an argument it never uses");
  return k;
}

std::vector<LoweredKernel> lower_kernels(const Plan& plan, const Target& t, const LowerOptions& o) {
  std::vector<LoweredKernel> out;
  OptTarget ot = opt_target(t);
  for (const KernelProgram& p : plan.programs) {
    std::vector<Opt> opts;
    if (o.tuned && o.tuned->count(p.name))
      opts = o.tuned->at(p.name);
    else if (o.opt_level > 0)
      opts = default_opts(p.ast, ot);
    out.push_back(lower_kernel(p.name, p.ast, opts));
  }
  return out;
}

}  // namespace kiln
