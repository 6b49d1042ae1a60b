// Stages 8-10 of the pipeline: kernel optimization, late lowering, LLVM (IR, optimization,
// object code) and linking into one shared object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/lower_kernels.h"
#include "compiler/driver/pipeline.h"

namespace kiln {

class Target;

struct CodegenArtifacts {
  std::vector<LoweredKernel> kernels;  // by program
  std::string llvm_ir;                 // after optimization (when requested)
  std::string assembly;                // when requested
  std::vector<uint8_t> object;         // relocatable object
  std::vector<uint8_t> shared_object;  // the linked, freestanding kernels (when requested)
};

struct CodegenRequest {
  bool llvm_ir = false;
  bool assembly = false;
  bool shared_object = true;
  // A static library's object (--emit static-lib): the entry table is named `static_table`
  // and carries `static_id`; no shared object is linked.
  std::string static_table;
  uint32_t static_id = 0;
};

// The codegen stage names, in order (what --dump-ir accepts after the middle end's).
const std::vector<std::string>& codegen_stages();

CodegenArtifacts generate_code(const Plan& plan, const Target& t, const LowerOptions& lo,
                               const CodegenRequest& req, const PipelineOptions& opts);

}  // namespace kiln
