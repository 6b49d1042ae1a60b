#include "compiler/driver/pipeline.h"

#include <iostream>
#include <sstream>

#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/schedule/const_fold.h"
#include "compiler/schedule/kernel_dedup.h"
#include "compiler/schedule/memory_plan.h"
#include "compiler/schedule/parallel_groups.h"
#include "compiler/schedule/rangeify.h"
#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

const std::vector<std::string>& middle_end_stages() {
  static const std::vector<std::string> s = {"import",       "const_fold",      "rangeify",
                                             "kernel_dedup", "parallel_groups", "memory_plan"};
  return s;
}

namespace {

bool wants(const PipelineOptions& o, const std::string& stage) {
  return o.dump_ir.count(stage) || o.dump_ir.count("all");
}

std::string plan_kernels_text(const Plan& plan, bool with_ast) {
  std::ostringstream os;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
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

}  // namespace

Plan plan_graph(Graph& g, const PipelineOptions& opts) {
  std::ostream& log = opts.log ? *opts.log : std::cerr;
  DefaultFusionPolicy default_policy;
  const FusionPolicy& policy = opts.policy ? *opts.policy : default_policy;
  auto dump_graph = [&](const std::string& stage) {
    if (wants(opts, stage)) log << "--- " << stage << " ---\n" << print_graph(g.sink());
  };
  if (opts.verify) verify(g.sink(), IrStage::Tensor);

  ConstFoldStats cf;
  {
    ScopedPass t(opts.times, "const_fold");
    cf = fold_constants(g);
  }
  if (opts.verify) verify(g.sink(), IrStage::Tensor);
  dump_graph("const_fold");
  if (wants(opts, "const_fold"))
    log << "folded " << cf.folded << " subgraphs (" << cf.folded_bytes << " bytes), " << cf.splats
        << " splats\n";

  RangeifyResult r;
  {
    ScopedPass t(opts.times, "rangeify");
    r = rangeify(g, policy);
  }
  Plan plan;
  plan.buffers = std::move(r.buffers);
  plan.inputs = std::move(r.inputs);
  plan.outputs = std::move(r.outputs);
  plan.fusion_log = std::move(r.fusion_log);
  if (opts.explain_fusion) {
    log << "--- fusion decisions (policy: " << policy.name() << ") ---\n";
    for (const auto& line : plan.fusion_log) log << line << "\n";
  }
  if (wants(opts, "rangeify")) {
    log << "--- rangeify ---\n";
    for (const auto& k : r.kernels) log << "kernel for " << k.what << "\n" << print_graph(k.ast);
  }

  {
    ScopedPass t(opts.times, "kernel_dedup");
    dedup_kernels(r.kernels, plan);
  }
  {
    ScopedPass t(opts.times, "parallel_groups");
    parallel_groups(plan);
  }
  if (wants(opts, "kernel_dedup") || wants(opts, "parallel_groups"))
    log << "--- parallel_groups ---\n" << plan_kernels_text(plan, wants(opts, "kernel_dedup"));

  {
    ScopedPass t(opts.times, "memory_plan");
    plan_memory(plan);
  }
  if (opts.verify) {
    std::string err = check_memory_plan(plan);
    if (!err.empty()) throw InternalError("memory plan: " + err);
  }
  if (wants(opts, "memory_plan")) {
    log << "--- memory_plan ---\n";
    for (const MemorySlot& s : plan.memory.slots)
      log << "  " << plan.buffer(s.buffer).name << ": offset " << s.offset << " size " << s.size
          << " groups [" << s.first_group << "," << s.last_group << "]\n";
    log << "  arena " << plan.memory.arena_bytes << " bytes, lower bound "
        << plan.memory.lower_bound_bytes << "\n";
  }
  return plan;
}

std::string plan_summary(const Plan& plan, bool json) {
  std::ostringstream os;
  if (json) {
    os << "{\"kernels\": " << plan.launches.size() << ", \"programs\": " << plan.programs.size()
       << ", \"groups\": " << plan.groups.size() << ", \"arena_bytes\": " << plan.memory.arena_bytes
       << ", \"arena_lower_bound_bytes\": " << plan.memory.lower_bound_bytes
       << ", \"constant_bytes\": " << plan.constant_bytes() << ", \"group_sizes\": [";
    for (size_t g = 0; g < plan.groups.size(); ++g) os << (g ? ", " : "") << plan.groups[g].size();
    os << "]}";
    return os.str();
  }
  os << "kernels: " << plan.launches.size() << " (" << plan.programs.size() << " unique)\n";
  os << "groups: " << plan.groups.size() << "\n";
  os << "arena: " << plan.memory.arena_bytes << " bytes (lower bound "
     << plan.memory.lower_bound_bytes << ")\n";
  os << "constants: " << plan.constant_bytes() << " bytes\n";
  os << plan_kernels_text(plan, false);
  for (const KernelProgram& p : plan.programs) {
    os << p.name << ":";
    for (const UOp* r : p.ast->ranges())
      os << " r" << r->range().id << "[" << r->src[0]->cval().i << "]";
    for (const UOp* n : p.ast->toposort())
      if (n->op == Op::REDUCE) {
        os << " reduce(" << op_name(n->op_arg());
        for (size_t i = 1; i < n->src.size(); ++i)
          os << " r" << n->src[i]->range().id << "[" << n->src[i]->src[0]->cval().i << "]";
        os << ")";
      }
    os << "\n";
  }
  return os.str();
}

}  // namespace kiln
