#include "compiler/schedule/plan_dot.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "compiler/support/error.h"

namespace kiln {

namespace {

// `s` inside a DOT double-quoted string.
std::string quoted(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return r + "\"";
}

std::string bytes_text(int64_t b) {
  const char* unit[] = {"B", "KB", "MB", "GB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1000 && u < 3) v /= 1000, ++u;
  std::ostringstream os;
  os.precision(v < 10 && u ? 2 : 3);
  os << v << " " << unit[u];
  return os.str();
}

std::string shape_text(const PlanBuffer& b) {
  std::string r = b.dtype.str() + "[";
  for (size_t i = 0; i < b.shape.size(); ++i) r += (i ? "," : "") + std::to_string(b.shape[i]);
  return r + "]";
}

}  // namespace

std::string plan_dot(const Plan& plan, const std::string& title) {
  std::ostringstream os;
  os << "digraph kernels {\n  label=" << quoted(title) << ";\n  labelloc=t;\n"
     << "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#e8f0fe\", "
        "fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
  std::map<int, int> producer;  // buffer id -> launch writing it
  for (size_t l = 0; l < plan.launches.size(); ++l)
    producer[plan.launches[l].args.at(0)] = static_cast<int>(l);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const PlanBuffer& b = plan.buffer(plan.inputs[i]);
    os << "  in" << i << " [shape=ellipse, fillcolor=\"#fef7e0\", label="
       << quoted("input " + b.name + "\n" + shape_text(b)) << "];\n";
  }
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    os << "  subgraph cluster_g" << g << " {\n    label=" << quoted(str_cat("group ", g))
       << ";\n    style=dashed;\n    color=\"#999999\";\n    fontsize=9;\n";
    for (int li : plan.groups[g]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      const std::string& program = plan.programs[static_cast<size_t>(l.program)].name;
      int weights = 0;
      int64_t weight_bytes = 0;
      for (size_t a = 1; a < l.args.size(); ++a)
        if (const PlanBuffer& b = plan.buffer(l.args[a]); b.kind == BufferKind::Weight) {
          ++weights;
          weight_bytes += b.bytes();
        }
      std::string label = l.label(program) + "\n" + str_cat("launch ", li, ": ", program) +
                          (l.ntasks > 1 ? str_cat(" x ", l.ntasks, " tasks") : "");
      if (weights)
        label += str_cat("\n", weights, weights > 1 ? " weights, " : " weight, ",
                         bytes_text(weight_bytes));
      os << "    l" << li << " [label=" << quoted(label) << "];\n";
    }
    os << "  }\n";
  }
  auto edge = [&](const std::string& from, const std::string& to, const PlanBuffer& b) {
    os << "  " << from << " -> " << to
       << " [label=" << quoted(b.name + "\n" + shape_text(b) + " " + bytes_text(b.bytes()))
       << "];\n";
  };
  for (size_t li = 0; li < plan.launches.size(); ++li) {
    const Launch& l = plan.launches[li];
    std::vector<int> seen;
    for (size_t a = 1; a < l.args.size(); ++a) {
      int id = l.args[a];
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
      seen.push_back(id);
      const PlanBuffer& b = plan.buffer(id);
      if (auto it = producer.find(id); it != producer.end())
        edge(str_cat("l", it->second), str_cat("l", li), b);
      else if (b.kind == BufferKind::Input)
        for (size_t i = 0; i < plan.inputs.size(); ++i)
          if (plan.inputs[i] == id) edge(str_cat("in", i), str_cat("l", li), b);
    }
  }
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const PlanBuffer& b = plan.buffer(plan.outputs[o]);
    os << "  out" << o << " [shape=ellipse, fillcolor=\"#e6f4ea\", label="
       << quoted("output " + b.name + "\n" + shape_text(b)) << "];\n";
    if (auto it = producer.find(plan.outputs[o]); it != producer.end())
      edge(str_cat("l", it->second), str_cat("out", o), b);
    else
      for (size_t i = 0; i < plan.inputs.size(); ++i)  // an output that is an input
        if (plan.inputs[i] == plan.outputs[o]) edge(str_cat("in", i), str_cat("out", o), b);
  }
  os << "}\n";
  return os.str();
}

}  // namespace kiln
