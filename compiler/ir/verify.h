// IR verifiers, one per stage of the pipeline. They run between stages in debug and test
// builds (and on demand); a failure throws kiln::Error naming the stage, the rule broken and
// the offending node.
#pragma once

#include "compiler/ir/uop.h"

namespace kiln {

enum class IrStage : uint8_t {
  Tensor,   // the lazy tensor graph: buffers, constants, movement, ALU, REDUCE_AXIS
  Kernel,   // kernel ASTs after rangeify: SINK/STORE/LOAD/INDEX/RANGE/REDUCE + scalar ALU
  Lowered,  // after late lowering: adds vectors (VECTORIZE, GEP, VCONST) and TASK
};

const char* ir_stage_name(IrStage s);

void verify(const UOp* root, IrStage stage);

}  // namespace kiln
