// The compiler pipeline as one readable function per phase. Every stage has a name; those names
// are what --dump-ir accepts and what --time-passes reports.
#pragma once

#include <iosfwd>
#include <set>
#include <string>

#include "compiler/schedule/fusion_policy.h"
#include "compiler/support/pass_timer.h"
#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"

namespace kiln {

struct PipelineOptions {
  std::set<std::string> dump_ir;         // stage names, or "all"
  bool explain_fusion = false;           // log every fusion decision
  bool verify = true;                    // run the IR verifiers between stages
  const FusionPolicy* policy = nullptr;  // nullptr: DefaultFusionPolicy
  std::ostream* log = nullptr;           // where dumps and explanations go (nullptr: std::cerr)
  PassTimes* times = nullptr;            // --time-passes and progress lines (nullptr: none)
};

// The middle-end stage names, in order.
const std::vector<std::string>& middle_end_stages();

// Stages 3-7 of the pipeline: constant folding, rangeify (fusion + kernel split), kernel dedup,
// parallel groups, memory plan. `g` is modified (folded constants).
Plan plan_graph(Graph& g, const PipelineOptions& opts);

// The plan summary that `kilnc plan` prints (text or one JSON object).
std::string plan_summary(const Plan& plan, bool json);

}  // namespace kiln
