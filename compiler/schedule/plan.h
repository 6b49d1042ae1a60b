// The planned program: everything the middle end decides before code generation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/uop.h"
#include "compiler/tensor/graph.h"

namespace kiln {

struct PlanBuffer {
  int id = 0;
  std::string name;
  BufferKind kind = BufferKind::Intermediate;
  DType dtype;
  Shape shape;
  int64_t weight_id = -1;  // for weights: the Graph's buffer id (its data)
  // Inputs and outputs with a symbolic axis: each axis's extent (an index expression over the
  // plan's symbols; docs/symbolic-shapes.md). Empty: the buffer is static.
  std::vector<const UOp*> extents;
  // An input whose values are sizes read at run time: per element, its symbol (GraphInput).
  std::vector<int> value_symbols;
  int64_t numel() const;
  int64_t bytes() const { return numel() * dtype.itemsize(); }
};

// A unique kernel AST (identical kernels share one): SINK(STORE(INDEX(DEFINE_GLOBAL 0, ...), ...)).
// DEFINE_GLOBAL i is the kernel's argument i; argument 0 is the output.
struct KernelProgram {
  std::string name;
  const UOp* ast = nullptr;
  Digest digest;
};

// The element dtype of each argument of a kernel AST (DEFINE_GLOBAL 0..n-1).
std::vector<DType> kernel_arg_dtypes(const UOp* ast);

// The floating-point operations one run of a kernel AST performs (for profiles: GFLOP/s and the
// share of the FMA peak): every float ALU op once per iteration of the ranges it depends on,
// MULACC twice, a REDUCE's accumulation once per iteration of its value's ranges; integer index
// arithmetic and casts are not counted. A gated (padded) iteration is counted like any other.
int64_t kernel_flops(const UOp* ast);

// The bytes a kernel may touch in one argument, [begin, end), and how.
struct ArgAccess {
  int64_t begin = 0, end = 0;
  bool read = false, written = false;
};
// Per argument of a kernel AST: the union over its loads and stores of the index bounds (vmin,
// vmax) in bytes. A gated index touches memory only where its gate holds, which keeps it in the
// buffer: its bounds are clipped to the buffer. An ungated index whose bounds leave the buffer is
// a compiler bug (InternalError naming the argument).
std::vector<ArgAccess> kernel_arg_accesses(const UOp* ast);

// One execution of a program on concrete buffers.
struct Launch {
  int program = 0;
  std::vector<int> args;  // buffer ids by argument index; args[0] is written
  std::string what;       // the tensor node it computes, for messages and --explain-fusion
  int64_t ntasks = 1;     // the program's task split, set by the optimize stage
  std::vector<std::string> origins;  // the model nodes it fuses, producers first
  // A launch of loop group `loop`'s body (Plan::loops), run once per iteration; -1: none.
  // `carry`: it copies a state's next value into the state, after the rest of the body.
  int loop = -1;
  bool carry = false;
  // "conv1+relu1": the origins joined (at most 200 characters, "(+N more)" past that), or the
  // program's name when no model node is known (a copy, a graph built in code).
  std::string label(const std::string& program_name) const;
};

struct MemorySlot {
  int buffer = 0;
  int64_t offset = 0;
  int64_t size = 0;  // bytes, rounded up to the alignment
  int first_group = 0;
  int last_group = 0;
  // The buffer whose memory this one takes in place (in_place_sources), or -1: the same offset
  // and size, its lifetime starting in the group where that buffer's ends.
  int in_place_of = -1;
};

struct MemoryPlan {
  int64_t alignment = 64;
  int64_t arena_bytes = 0;
  int64_t lower_bound_bytes = 0;  // the peak of simultaneously-live bytes: no plan can do better
  std::vector<MemorySlot> slots;  // one per intermediate buffer
};

// A loop group (GraphLoop, ARCHITECTURE §8): the groups [first_group, last_group] run once per
// iteration while the iteration number is below the trip count and the condition holds
// (kiln_abi_loop_continues: one rule for the runtime, the JIT and the interpreter).
struct PlanLoop {
  std::string name;  // the model node, for messages
  int trips = -1;    // the buffer holding the trip count (an int64 scalar), or -1: none
  int cond = -1;     // the buffer holding the condition (a bool scalar), or -1: none
  int64_t max_trips = 0;
  int iteration = -1;  // symbol set to the iteration number before each iteration
  int count = -1;      // symbol set to the number of iterations run when the loop ends
  int first_group = -1, last_group = -1;  // set by parallel_groups
};

// A size computed from data (GraphCount): the runtime reads `buffer` (an int64 scalar) into
// symbol `symbol` after group `group` (set by parallel_groups: the group of its writer), checked
// against the symbol's bounds; every launch that reads the symbol runs after it.
struct PlanCount {
  std::string name;  // the model node, for messages
  int symbol = -1;
  int buffer = -1;
  int group = -1;
};

struct Plan {
  std::vector<PlanBuffer> buffers;
  std::vector<int> inputs;   // buffer ids in model input order
  std::vector<int> outputs;  // buffer ids in model output order
  std::vector<KernelProgram> programs;
  std::vector<Launch> launches;          // in an order that respects dependencies
  std::vector<std::vector<int>> groups;  // launch indices per parallel group, in execution order
  MemoryPlan memory;
  std::vector<std::string> fusion_log;  // --explain-fusion
  // The symbolic dims (`--dim NAME=LO..HI`), by slot: kernels read symbol i's run-time value
  // from vars[i]. Empty for a static plan.
  std::vector<Symbol> symbols;
  // Conditions on the symbols' run-time values (Graph::checks), checked before each run.
  std::vector<GraphCheck> checks;
  std::vector<PlanLoop> loops;    // none nested
  std::vector<PlanCount> counts;  // by GraphCount index
  // The loop whose body group `g` is in, or nullptr.
  const PlanLoop* loop_of_group(int g) const;

  int64_t constant_bytes() const;
  const PlanBuffer& buffer(int id) const { return buffers.at(static_cast<size_t>(id)); }
};

// Runs `plan`'s groups in order, a loop's groups once per iteration while
// kiln_abi_loop_continues says so (the runtime's rule), setting its iteration and count symbols
// in `vars`: run_group(g) runs group g, read_scalar(buffer) reads a trip count or condition.
// Throws kiln::Error naming the loop when it would run past its bound.
void run_schedule(const Plan& plan, std::vector<int64_t>& vars,
                  const std::function<int64_t(int)>& read_scalar,
                  const std::function<void(int)>& run_group);

}  // namespace kiln
