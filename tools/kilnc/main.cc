// kilnc: the kiln compiler's command line.
//
//   kilnc plan MODEL [--shape NAME=D0,D1,...]... [--json] [--dump-ir=STAGE[,STAGE]]
//   [--explain-fusion]
//
// Errors print "kilnc: error: ..." and exit with status 1; usage errors exit with status 2.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/pipeline.h"
#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/frontend/load_model.h"
#include "compiler/support/error.h"

namespace {

const char* kUsage =
    "usage: kilnc plan MODEL [options]\n"
    "\n"
    "  plan MODEL          plan the model (a .kg graph file) and print the plan summary\n"
    "\n"
    "options:\n"
    "  --shape NAME=D0,D1,...   input shape (repeatable)\n"
    "  --json                   print the summary as one JSON object\n"
    "  --dump-ir=STAGE[,...]    print the IR after stages: import, const_fold, rangeify,\n"
    "                           kernel_dedup, parallel_groups, memory_plan, or all\n"
    "  --dump-dir DIR           where --dump-ir=import writes weight .npy files (default "
    "kiln-dump)\n"
    "  --explain-fusion         log every fusion decision\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command, model;
  kiln::ModelOptions model_opts;
  kiln::PipelineOptions pipeline;
  bool json = false;
  std::string dump_dir = "kiln-dump";
};

kiln::Shape parse_dims(const std::string& s, const std::string& flag) {
  kiln::Shape dims;
  std::stringstream ss(s);
  for (std::string tok; std::getline(ss, tok, ',');) {
    try {
      size_t used = 0;
      long long v = std::stoll(tok, &used);
      if (used != tok.size() || v < 0) throw std::invalid_argument(tok);
      dims.push_back(v);
    } catch (const std::exception&) {
      throw UsageError(flag + ": '" + tok + "' is not a dimension");
    }
  }
  return dims;
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (s.size() > flag.size() && s[flag.size()] == '=') return s.substr(flag.size() + 1);
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    auto is = [&](const std::string& flag) { return s == flag || s.rfind(flag + "=", 0) == 0; };
    if (is("--shape")) {
      std::string v = value("--shape");
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError("--shape wants NAME=D0,D1,..., got '" + v + "'");
      a.model_opts.shapes[v.substr(0, eq)] = parse_dims(v.substr(eq + 1), "--shape");
    } else if (s == "--json") {
      a.json = true;
    } else if (is("--dump-ir")) {
      std::stringstream ss(value("--dump-ir"));
      for (std::string st; std::getline(ss, st, ',');) {
        const auto& stages = kiln::middle_end_stages();
        if (st != "all" && std::find(stages.begin(), stages.end(), st) == stages.end())
          throw UsageError("--dump-ir: unknown stage '" + st + "'");
        a.pipeline.dump_ir.insert(st);
      }
    } else if (is("--dump-dir")) {
      a.dump_dir = value("--dump-dir");
    } else if (s == "--explain-fusion") {
      a.pipeline.explain_fusion = true;
    } else if (s == "-h" || s == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (!s.empty() && s[0] == '-') {
      throw UsageError("unknown option '" + s + "'");
    } else {
      pos.push_back(s);
    }
  }
  if (pos.empty()) throw UsageError("missing command");
  a.command = pos[0];
  if (a.command != "plan") throw UsageError("unknown command '" + a.command + "'");
  if (pos.size() != 2) throw UsageError(a.command + " takes one MODEL");
  a.model = pos[1];
  return a;
}

int run(const Args& a) {
  kiln::Graph g;
  kiln::load_model(a.model, g, a.model_opts);
  if (a.pipeline.dump_ir.count("import") || a.pipeline.dump_ir.count("all")) {
    std::string dir = std::filesystem::absolute(a.dump_dir).string();
    std::cerr << "--- import ---\n"
              << kiln::write_graph_file(g, std::filesystem::current_path().string(), dir);
  }
  kiln::Plan plan = kiln::plan_graph(g, a.pipeline);
  std::cout << kiln::plan_summary(plan, a.json) << (a.json ? "\n" : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "kilnc: %s\n\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    return run(args);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kilnc: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kilnc: error: %s\n", e.what());
    return 1;
  }
}
