// The middle end's stages: import through memory_plan (stages.h).
#include <filesystem>
#include <sstream>

#include "compiler/driver/inputs.h"
#include "compiler/driver/stages.h"
#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/schedule/elementwise_through_concat.h"
#include "compiler/schedule/kernel_dedup.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/schedule/merge_loops.h"
#include "compiler/schedule/narrow_quantized_pads.h"
#include "compiler/schedule/parallel_groups.h"
#include "compiler/schedule/split_loops.h"
#include "compiler/support/error.h"
#include "compiler/support/file.h"
#include "compiler/support/sha256.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/weight_layout.h"

namespace kiln {

namespace {

bool always(Emit) {
  return true;
}

// Launches group by group, with their arguments (and, optionally, their programs' ASTs).
std::string plan_kernels_text(const Plan& plan, bool with_ast) {
  std::ostringstream os;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    for (const PlanLoop& l : plan.loops)
      if (l.first_group == static_cast<int>(g))
        os << "loop " << l.name << ": groups " << l.first_group << ".." << l.last_group
           << " per iteration, trip count "
           << (l.trips < 0 ? std::string("none") : plan.buffer(l.trips).name) << ", condition "
           << (l.cond < 0 ? std::string("none") : plan.buffer(l.cond).name) << ", at most "
           << l.max_trips << " iterations\n";
    os << "group " << g << ":\n";
    for (int li : plan.groups[g]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      const KernelProgram& p = plan.programs[static_cast<size_t>(l.program)];
      os << "  launch " << li << ": " << p.name << " computes " << l.what << "\n    args:";
      for (size_t a = 0; a < l.args.size(); ++a) {
        const PlanBuffer& b = plan.buffer(l.args[a]);
        os << " " << a << "=" << b.name << "(" << buffer_kind_name(b.kind) << ")";
      }
      os << "\n";
      if (with_ast) {
        std::istringstream ast(print_graph(p.ast));
        for (std::string line; std::getline(ast, line);) os << "    " << line << "\n";
      }
    }
  }
  return os.str();
}

// ---- import: the model file as Tensor API calls (a graph built in code arrives imported) ----

void import_run(Compilation& c) {
  if (c.model_path.empty()) return;
  ModelOptions model = c.options.model;
  model.lowering.machine_balance = c.target.machine_balance();
  model.lowering.vector_bytes = c.target.vector_bytes();
  load_model(c.model_path, *c.a.graph, model);
  std::vector<uint8_t> bytes = read_file(c.model_path);
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  c.a.model_sha256 = Sha256::hex(h.finish());
}
void import_dump(Compilation& c, std::ostream& os) {
  std::string dir = std::filesystem::absolute(c.options.dump_dir).string();
  os << write_graph_file(*c.a.graph, std::filesystem::current_path().string(), dir);
}
void import_verify(const Compilation& c) {
  verify(c.a.graph->sink(), IrStage::Tensor);
  check_inputs(*c.a.graph, c.options.inputs,
               c.options.emit == Emit::Jit ? InputsWanted::All : InputsWanted::Some);
}

// ---- const_fold ----

void const_fold_run(Compilation& c) {
  c.a.folded = fold_constants(*c.a.graph);
  c.a.folded.narrowed_pads = narrow_quantized_pads(*c.a.graph);
  c.a.folded.through_concats = elementwise_through_concat(*c.a.graph);
}
void const_fold_dump(Compilation& c, std::ostream& os) {
  os << print_graph(c.a.graph->sink()) << "folded " << c.a.folded.folded << " subgraphs ("
     << c.a.folded.folded_bytes << " bytes), " << c.a.folded.splats << " splats, "
     << c.a.folded.too_costly << " too costly to fold, " << c.a.folded.narrowed_pads
     << " quantized padded maps stored in 8 bits, " << c.a.folded.through_concats
     << " elementwise nodes moved into concatenations' parts\n";
}
void tensor_verify(const Compilation& c) {
  verify(c.a.graph->sink(), IrStage::Tensor);
}

// ---- rangeify (fusion and the kernel split) ----

void rangeify_run(Compilation& c) {
  DefaultFusionPolicy default_policy;
  const FusionPolicy& policy = c.options.policy ? *c.options.policy : default_policy;
  RangeifyResult r = rangeify(*c.a.graph, policy);
  Plan& plan = c.a.plan;
  plan.buffers = std::move(r.buffers);
  plan.inputs = std::move(r.inputs);
  plan.outputs = std::move(r.outputs);
  plan.fusion_log = std::move(r.fusion_log);
  plan.loops = std::move(r.loops);
  plan.counts = std::move(r.counts);
  plan.symbols = c.a.graph->symbols();
  plan.checks = c.a.graph->checks();
  c.a.rangeified = std::move(r.kernels);
  for (RangeifiedKernel& k : c.a.rangeified) k.ast = split_loops(merge_loops(k.ast));
  if (c.options.explain_fusion) {
    c.log << "--- fusion decisions (policy: " << policy.name() << ") ---\n";
    for (const auto& line : plan.fusion_log) c.log << line << "\n";
  }
}
void rangeify_dump(Compilation& c, std::ostream& os) {
  for (const auto& k : c.a.rangeified) os << "kernel for " << k.what << "\n" << print_graph(k.ast);
}
void rangeify_verify(const Compilation& c) {
  for (const auto& k : c.a.rangeified) verify(k.ast, IrStage::Kernel);
}

// ---- kernel_dedup ----

void kernel_dedup_run(Compilation& c) {
  dedup_kernels(c.a.rangeified, c.a.plan);
}
void kernel_dedup_dump(Compilation& c, std::ostream& os) {
  for (const KernelProgram& p : c.a.plan.programs) os << p.name << ":\n" << print_graph(p.ast);
  for (size_t i = 0; i < c.a.plan.launches.size(); ++i) {
    const Launch& l = c.a.plan.launches[i];
    os << "launch " << i << ": " << c.a.plan.programs[static_cast<size_t>(l.program)].name
       << " computes " << l.what << "\n";
  }
}

// ---- parallel_groups ----

void parallel_groups_run(Compilation& c) {
  parallel_groups(c.a.plan);
}
void parallel_groups_dump(Compilation& c, std::ostream& os) {
  os << plan_kernels_text(c.a.plan, false);
}

// ---- memory_plan ----

void memory_plan_run(Compilation& c) {
  plan_memory(c.a.plan);
}
void memory_plan_dump(Compilation& c, std::ostream& os) {
  const Plan& plan = c.a.plan;
  for (const MemorySlot& s : plan.memory.slots)
    os << "  " << plan.buffer(s.buffer).name << ": offset " << s.offset << " size " << s.size
       << " groups [" << s.first_group << "," << s.last_group << "]\n";
  os << "  arena " << plan.memory.arena_bytes << " bytes, lower bound "
     << plan.memory.lower_bound_bytes << "\n";
}
void memory_plan_verify(const Compilation& c) {
  std::string err = check_memory_plan(c.a.plan);
  if (!err.empty()) throw InternalError("memory plan: " + err);
}

}  // namespace

std::vector<Stage> middle_end_stages() {
  return {
      {"import", "the graph as .kg text (weights as .npy files under the dump directory)", always,
       import_run, import_dump, import_verify},
      {"const_fold", "the graph, and what was folded", always, const_fold_run, const_fold_dump,
       tensor_verify},
      {"rangeify", "each kernel's AST, before deduplication", always, rangeify_run, rangeify_dump,
       rangeify_verify},
      {"kernel_dedup", "the unique programs' ASTs and the launches", always, kernel_dedup_run,
       kernel_dedup_dump, nullptr},
      {"parallel_groups", "the groups and their launches with arguments", always,
       parallel_groups_run, parallel_groups_dump, nullptr},
      {"memory_plan", "each arena slot: offset, size, lifetime; the arena and its lower bound",
       always, memory_plan_run, memory_plan_dump, memory_plan_verify},
  };
}

std::string plan_summary(const Plan& plan, bool json) {
  std::ostringstream os;
  if (json) {
    os << "{\"kernels\": " << plan.launches.size() << ", \"programs\": " << plan.programs.size()
       << ", \"groups\": " << plan.groups.size() << ", \"arena_bytes\": " << plan.memory.arena_bytes
       << ", \"arena_lower_bound_bytes\": " << plan.memory.lower_bound_bytes
       << ", \"constant_bytes\": " << plan.constant_bytes() << ", \"group_sizes\": [";
    for (size_t g = 0; g < plan.groups.size(); ++g) os << (g ? ", " : "") << plan.groups[g].size();
    os << "], \"symbols\": [";
    for (size_t i = 0; i < plan.symbols.size(); ++i)
      os << (i ? ", " : "") << "{\"name\": \"" << plan.symbols[i].name
         << "\", \"min\": " << plan.symbols[i].min << ", \"max\": " << plan.symbols[i].max << "}";
    os << "], \"loops\": [";
    for (size_t i = 0; i < plan.loops.size(); ++i)
      os << (i ? ", " : "") << "{\"name\": \"" << plan.loops[i].name
         << "\", \"first_group\": " << plan.loops[i].first_group
         << ", \"last_group\": " << plan.loops[i].last_group
         << ", \"max_trips\": " << plan.loops[i].max_trips << "}";
    os << "]}";
    return os.str();
  }
  os << "kernels: " << plan.launches.size() << " (" << plan.programs.size() << " unique)\n";
  os << "groups: " << plan.groups.size() << "\n";
  os << "arena: " << plan.memory.arena_bytes << " bytes (lower bound "
     << plan.memory.lower_bound_bytes << ")\n";
  os << "constants: " << plan.constant_bytes() << " bytes\n";
  for (const Symbol& sy : plan.symbols)
    os << "symbol " << sy.name << ": [" << sy.min << ", " << sy.max
       << "] (buffers and the arena are planned at the maximum)\n";
  os << plan_kernels_text(plan, false);
  for (const KernelProgram& p : plan.programs) {
    os << p.name << ":";
    for (const UOp* r : p.ast->ranges())
      os << " r" << r->range().id << "[" << render(r->src[0]) << "]";
    for (const UOp* n : p.ast->toposort())
      if (n->op == Op::REDUCE) {
        os << " reduce(" << op_name(n->op_arg());
        for (size_t i = 1; i < n->src.size(); ++i)
          os << " r" << n->src[i]->range().id << "[" << render(n->src[i]->src[0]) << "]";
        os << ")";
      }
    os << "\n";
  }
  return os.str();
}

}  // namespace kiln
