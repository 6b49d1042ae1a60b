#include "compiler/codegen/lower_kernel.h"

#include "compiler/codegen/expander.h"
#include "compiler/codegen/late_lower.h"
#include "compiler/codegen/linearizer.h"
#include "compiler/codegen/weight_prefetch.h"
#include "compiler/ir/verify.h"
#include "compiler/schedule/plan.h"
#include "compiler/support/error.h"

namespace kiln {

CodegenKernel codegen_kernel(const std::string& name, const UOp* ast, const UOp* lowered,
                             const TargetInfo& t) {
  CodegenKernel c;
  c.name = name;
  c.program = linearize(lowered);
  c.arg_dtypes = kernel_arg_dtypes(ast);
  c.accesses = kernel_arg_accesses(ast);
  c.index_bits = index_bits(lowered);
  c.prefetch = plan_weight_prefetch(lowered, t);
  for (DType d : c.arg_dtypes)
    KILN_CHECK(d.scalar != ScalarKind::Void, "kernel ", name, " has an argument it never uses");
  return c;
}

LoweredKernel lower_kernel(const std::string& name, const UOp* ast, const OptimizedKernel& k,
                           const TargetInfo& t) {
  LoweredKernel out;
  out.name = name;
  out.expanded = expand_kernel(k.ast);
  out.lowered = late_lower(out.expanded, t);
  verify(out.lowered, IrStage::Lowered);
  out.codegen = codegen_kernel(name, ast, out.lowered, t);
  return out;
}

}  // namespace kiln
