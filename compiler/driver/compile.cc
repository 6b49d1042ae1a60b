#include "compiler/driver/compile.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <filesystem>
#include <iostream>

#include "compiler/driver/stages.h"
#include "compiler/jit/jit.h"
#include "compiler/package/static_library.h"
#include "compiler/support/error.h"

namespace kiln {

Artifacts::Artifacts() = default;
Artifacts::~Artifacts() = default;
Artifacts::Artifacts(Artifacts&&) noexcept = default;
Artifacts& Artifacts::operator=(Artifacts&&) noexcept = default;

namespace {

const char* emit_name(Emit e) {
  switch (e) {
    case Emit::Plan:
      return "a plan";
    case Emit::Jit:
      return "kernels run in process";
    case Emit::LlvmIr:
      return "LLVM IR";
    case Emit::Assembly:
      return "assembly";
    case Emit::Object:
      return "an object file";
    case Emit::SharedObject:
      return "a shared object";
    case Emit::Package:
      return "a package";
    case Emit::StaticLibrary:
      return "a static library";
  }
  return "?";
}

// Every stage asked for is a stage of this compile.
void check_dump_stages(const CompileOptions& o) {
  for (const std::string& name : o.dump_ir) {
    if (name == "all") continue;
    const Stage* found = nullptr;
    for (const Stage& s : stages())
      if (name == s.name) found = &s;
    if (!found) {
      std::string list;
      for (const std::string& n : stage_names()) list += " " + n;
      throw OptionError(Option::DumpIr,
                        "unknown stage '" + name + "' (the stages:" + list + ", or all)");
    }
    if (!found->runs_for(o.emit))
      throw OptionError(Option::DumpIr,
                        "stage '" + name + "' does not run when producing " + emit_name(o.emit));
  }
}

void run_stages(Artifacts& a, const std::string& model_path, const CompileOptions& o) {
  check_dump_stages(o);
  const TargetInfo& target = o.target ? *o.target : TargetInfo::host();
  if (o.emit == Emit::Jit && !target.runs_here())
    throw OptionError(Option::Target, "running a model needs the host target, not " +
                                          target.triple() + " " + target.cpu());
  if (o.emit == Emit::StaticLibrary) {
    a.static_prefix = static_library_prefix(o.static_output);
    a.static_symbol = static_library_symbol(a.static_prefix);
  }
  a.model_sha256 = o.model_sha256;
  std::ostream& log = o.log ? *o.log : std::cerr;
  Compilation c{model_path, o, target, log, a};
  for (const Stage& s : stages()) {
    if (!s.runs_for(o.emit)) continue;
    {
      ScopedPass t(o.times, s.name);
      s.run(c);
    }
    if (o.dumps(s.name)) {
      log << "--- " << s.name << " ---\n";
      s.dump(c, log);
    }
    if (o.verify && s.verify) s.verify(c);
  }
}

}  // namespace

Artifacts compile(const std::string& model_path, const CompileOptions& o) {
  Artifacts a;
  if (!o.variant_targets.empty()) {
    if (o.emit != Emit::Package)
      throw OptionError(Option::Cpu, std::string("several CPUs make a package of variants, not ") +
                                         emit_name(o.emit) + " (pass one CPU)");
    const TargetInfo& first = o.target ? *o.target : TargetInfo::host();
    std::set<std::string> cpus = {first.cpu()};
    for (const TargetInfo* t : o.variant_targets) {
      if (t->triple() != first.triple())
        throw OptionError(Option::Cpu, "the variants of a package share one target: " + t->cpu() +
                                           " is " + t->triple() + ", " + first.cpu() + " is " +
                                           first.triple());
      if (!cpus.insert(t->cpu()).second)
        throw OptionError(Option::Cpu, "CPU " + t->cpu() + " is listed twice");
    }
    // Variants 1.. through link, each for its own target; variant 0 is this compile.
    for (size_t i = 0; i < o.variant_targets.size(); ++i) {
      CompileOptions vo = o;
      vo.target = o.variant_targets[i];
      vo.variant_targets.clear();
      vo.emit = Emit::SharedObject;
      vo.embed_selftest = false;
      if (o.times)
        o.times->starting("variant", std::to_string(i + 2) + " of " +
                                         std::to_string(o.variant_targets.size() + 1) + ", " +
                                         vo.target->cpu());
      a.variants.push_back(compile(model_path, vo));
    }
  }
  a.owned_graph = std::make_unique<Graph>();
  a.graph = a.owned_graph.get();
  run_stages(a, model_path, o);
  return a;
}

Artifacts compile(Graph& g, const CompileOptions& o) {
  if (!o.variant_targets.empty())
    throw OptionError(Option::Cpu, "variants are compiled from a model file");
  Artifacts a;
  a.graph = &g;
  run_stages(a, "", o);
  return a;
}

Plan plan_graph(Graph& g, const CompileOptions& o) {
  CompileOptions plan_only = o;
  plan_only.emit = Emit::Plan;
  return compile(g, plan_only).plan;
}

}  // namespace kiln
