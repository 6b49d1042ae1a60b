// kilnc: the kiln compiler's command line. See `kilnc --help`.
//
// Errors print "kilnc: error: ..." and exit with status 1; usage errors exit with status 2.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/llvm/target.h"
#include "compiler/driver/codegen_driver.h"
#include "compiler/driver/pipeline.h"
#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/frontend/load_model.h"
#include "compiler/jit/jit.h"
#include "compiler/jit/tuner.h"
#include "compiler/opt/tuning_cache.h"
#include "compiler/package/package_reader.h"
#include "compiler/package/package_writer.h"
#include "compiler/package/static_library.h"
#include "compiler/support/error.h"
#include "compiler/support/npy.h"
#include "compiler/support/sha256.h"
#include "compiler/tensor/tensor.h"

namespace {

const char* kUsage =
    "usage: kilnc COMMAND MODEL [options]\n"
    "\n"
    "commands:\n"
    "  plan MODEL          plan the model and print the plan summary\n"
    "  run MODEL           compile in memory (JIT) and run: --input NAME=FILE.npy ... --output-dir "
    "DIR\n"
    "  compile MODEL -o OUT.kiln [--emit KIND]\n"
    "                      write the package (default), or llvm-ir, asm, object, shared-object\n"
    "  inspect PACKAGE     describe a package (--json for one JSON object)\n"
    "\n"
    "options:\n"
    "  --shape NAME=D0,D1,...   input shape (repeatable)\n"
    "  --dim PARAM=N            bind an ONNX dim parameter (e.g. batch=1) on every input\n"
    "  --freeze NAME=FILE.npy   make an ONNX input a constant (inputs that must be known at\n"
    "                           compile time, e.g. a Reshape's shape); the package lacks it\n"
    "  --json                   plan: print the summary as one JSON object\n"
    "  --target TRIPLE          x86_64-linux-gnu, aarch64-linux-gnu (default: the host)\n"
    "  --cpu NAME               CPU for the target (default: the host CPU, or generic)\n"
    "  --opt-level N            0: no kernel optimizations (scalar loops); 2: default\n"
    "  --input NAME=FILE.npy    run: an input (repeatable)\n"
    "  --output-dir DIR         run: where outputs are written as NAME.npy\n"
    "  --dump-ir=STAGE[,...]    print the IR after stages: import, const_fold, rangeify, "
    "kernel_dedup,\n"
    "                           parallel_groups, memory_plan, optimize, expand, linearize, llvm, "
    "asm, all\n"
    "  --dump-dir DIR           where --dump-ir=import writes weight .npy files (default "
    "kiln-dump)\n"
    "  --explain-fusion         log every fusion decision\n"
    "  --embed-data             --emit static-lib: put the package in the archive as a C array\n"
    "  --embed-selftest         compile: store inputs (--input files, or seeded random values)\n"
    "                           and this machine's outputs for kiln_model_selftest / kiln-run --selftest\n"
    "  --beam N                 tune contraction kernels: time candidates on this machine,\n"
    "                           keep the N fastest tiles per round (host target only)\n"
    "  --tuning-cache PATH      reuse (and, with --beam, extend) tuning results kept in PATH\n"
    "  --time-passes            print the wall time of every pass at the end\n"
    "  --quiet                  no progress lines (printed once a compile runs over 2 s)\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command, model, output, emit, output_dir;
  kiln::ModelOptions model_opts;
  kiln::PipelineOptions pipeline;
  kiln::TargetOptions target;
  int opt_level = 2;
  bool json = false;
  std::string dump_dir = "kiln-dump";
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::string> frozen_files;  // as given, for the package's provenance
  bool time_passes = false;
  bool quiet = false;
  int beam = 0;
  std::string tuning_cache;
  bool embed_selftest = false;
  bool embed_data = false;  // --emit static-lib: the package inside the archive
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

std::pair<std::string, std::string> name_value(const std::string& v, const std::string& flag) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(flag + " wants NAME=VALUE, got '" + v + "'");
  return {v.substr(0, eq), v.substr(eq + 1)};
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
      auto [n, v] = name_value(value("--shape"), "--shape");
      a.model_opts.shapes[n] = parse_dims(v, "--shape");
    } else if (is("--dim")) {
      auto [n, v] = name_value(value("--dim"), "--dim");
      kiln::Shape d = parse_dims(v, "--dim");
      if (d.size() != 1) throw UsageError("--dim wants PARAM=N, got '" + v + "'");
      a.model_opts.dims[n] = d[0];
    } else if (is("--freeze")) {
      auto [n, file] = name_value(value("--freeze"), "--freeze");
      kiln::NpyArray arr = kiln::read_npy(file);
      a.model_opts.frozen.emplace(n, kiln::NDArray(arr.dtype, arr.shape, std::move(arr.data)));
      a.frozen_files.push_back("--freeze=" + n + "=" + file);
    } else if (s == "--json") {
      a.json = true;
    } else if (is("--dump-ir")) {
      std::stringstream ss(value("--dump-ir"));
      for (std::string st; std::getline(ss, st, ',');) {
        const auto& me = kiln::middle_end_stages();
        const auto& cg = kiln::codegen_stages();
        if (st != "all" && std::find(me.begin(), me.end(), st) == me.end() &&
            std::find(cg.begin(), cg.end(), st) == cg.end())
          throw UsageError("--dump-ir: unknown stage '" + st + "'");
        a.pipeline.dump_ir.insert(st);
      }
    } else if (is("--dump-dir")) {
      a.dump_dir = value("--dump-dir");
    } else if (is("--beam")) {
      std::string v = value("--beam");
      kiln::Shape n = parse_dims(v, "--beam");
      if (n.size() != 1 || n[0] < 1 || n[0] > 64) throw UsageError("--beam wants a width from 1 to 64");
      a.beam = static_cast<int>(n[0]);
    } else if (is("--tuning-cache")) {
      a.tuning_cache = value("--tuning-cache");
    } else if (s == "--embed-selftest") {
      a.embed_selftest = true;
    } else if (s == "--time-passes") {
      a.time_passes = true;
    } else if (s == "--quiet") {
      a.quiet = true;
    } else if (s == "--explain-fusion") {
      a.pipeline.explain_fusion = true;
    } else if (is("--target")) {
      a.target.triple = value("--target");
    } else if (is("--cpu")) {
      a.target.cpu = value("--cpu");
    } else if (is("--opt-level")) {
      std::string v = value("--opt-level");
      if (v != "0" && v != "1" && v != "2" && v != "3")
        throw UsageError("--opt-level wants 0, 1, 2 or 3");
      a.opt_level = v[0] - '0';
    } else if (s == "-o" || is("--output")) {
      a.output = s == "-o" ? (i + 1 < argc ? argv[++i] : throw UsageError("-o needs a value"))
                           : value("--output");
    } else if (is("--emit")) {
      a.emit = value("--emit");
      if (a.emit != "package" && a.emit != "llvm-ir" && a.emit != "asm" && a.emit != "object" &&
          a.emit != "shared-object" && a.emit != "static-lib")
        throw UsageError(
            "--emit wants package, static-lib, llvm-ir, asm, object or shared-object, got '" +
            a.emit + "'");
    } else if (s == "--embed-data") {
      a.embed_data = true;
    } else if (is("--input")) {
      a.inputs.push_back(name_value(value("--input"), "--input"));
    } else if (is("--output-dir")) {
      a.output_dir = value("--output-dir");
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
  if (a.command != "plan" && a.command != "run" && a.command != "compile" && a.command != "inspect")
    throw UsageError("unknown command '" + a.command + "'");
  if (pos.size() != 2) throw UsageError(a.command + " takes one MODEL");
  a.model = pos[1];
  if (a.command == "compile" && a.output.empty()) throw UsageError("compile needs -o OUT");
  if (a.emit.empty()) a.emit = "package";
  if (a.command == "run" && a.output_dir.empty()) throw UsageError("run needs --output-dir DIR");
  if (a.embed_selftest && (a.command != "compile" || (a.emit != "package" && a.emit != "static-lib")))
    throw UsageError("--embed-selftest goes with compile --emit package or static-lib");
  if (a.embed_data && a.emit != "static-lib") throw UsageError("--embed-data goes with --emit static-lib");
  if (a.command == "compile" && !a.inputs.empty() && !a.embed_selftest)
    throw UsageError("compile takes --input files only for --embed-selftest");
  return a;
}

// Output file names: characters outside [A-Za-z0-9._-] become '_'.
std::string file_name_for(const std::string& name) {
  std::string r;
  for (char c : name)
    r +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return r.empty() ? "_" : r;
}

void write_file(const std::string& path, const void* data, size_t size) {
  // Written next to the destination and renamed, so a failure leaves nothing half-written.
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!f) throw kiln::Error("cannot write '" + path + "'");
  }
  std::filesystem::rename(tmp, path);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw kiln::Error("cannot open '" + path + "'");
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

// The flags that decide the compiled output, as recorded in the package's provenance.
std::vector<std::string> output_flags(const Args& a, const kiln::Target& t) {
  std::vector<std::string> f = {"--target=" + t.triple(), "--cpu=" + t.cpu(),
                                "--opt-level=" + std::to_string(a.opt_level)};
  for (const auto& [name, shape] : a.model_opts.shapes)
    f.push_back("--shape=" + name + "=" + kiln::shape_str(shape));
  for (const auto& [param, n] : a.model_opts.dims)
    f.push_back("--dim=" + param + "=" + std::to_string(n));
  f.insert(f.end(), a.frozen_files.begin(), a.frozen_files.end());
  return f;
}

// The self-test's data (--embed-selftest): the --input files, or seeded random values (floats
// uniform in [-1, 1]; integers and booleans 0, which are valid indices), run through the JIT on
// this machine.
kiln::SelfTestData make_selftest(const Args& a, const kiln::Graph& g, const kiln::Plan& plan) {
  std::map<std::string, kiln::NDArray> given;
  for (const auto& [name, file] : a.inputs) {
    kiln::NpyArray arr = kiln::read_npy(file);
    given.emplace(name, kiln::NDArray(arr.dtype, arr.shape, std::move(arr.data)));
  }
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::map<std::string, kiln::NDArray> inputs;
  kiln::SelfTestData st;
  for (int id : plan.inputs) {
    const kiln::PlanBuffer& b = plan.buffer(id);
    kiln::NDArray arr(b.dtype, b.shape);
    if (auto it = given.find(b.name); it != given.end()) {
      if (it->second.dtype() != b.dtype || it->second.shape() != b.shape)
        throw kiln::Error("--input " + b.name + ": the file holds " + it->second.dtype().str() +
                          kiln::shape_str(it->second.shape()) + ", the model wants " + b.dtype.str() +
                          kiln::shape_str(b.shape));
      arr = it->second;
    } else if (b.dtype.is_float()) {
      for (int64_t i = 0; i < arr.numel(); ++i) arr.set(i, kiln::ConstValue::of_float(uni(rng)));
    }
    st.inputs.push_back(arr.bytes());
    inputs.emplace(b.name, std::move(arr));
  }
  for (const auto& [name, _] : given)
    if (!inputs.count(name)) throw kiln::Error("--input " + name + ": the model has no such input");
  kiln::Target host = kiln::Target::create({});
  auto outputs = kiln::JitProgram(plan, host, {a.opt_level}).run(g, inputs);
  for (int id : plan.outputs) st.outputs.push_back(outputs.at(plan.buffer(id).name).bytes());
  return st;
}

// The tuner's choices (--beam, --tuning-cache), or none.
std::map<std::string, std::vector<kiln::Opt>> tune(const Args& a, const kiln::Plan& plan,
                                                    const kiln::Target& t, kiln::PassTimes& times) {
  if (a.beam == 0 && a.tuning_cache.empty()) return {};
  if (a.opt_level == 0) throw UsageError("--beam and --tuning-cache need --opt-level above 0");
  kiln::TuningCache cache;
  if (!a.tuning_cache.empty()) cache = kiln::TuningCache::load(a.tuning_cache);
  kiln::TuneStats st;
  std::map<std::string, std::vector<kiln::Opt>> chosen;
  {
    kiln::ScopedPass pt(&times, "beam");
    chosen = kiln::tune_plan(plan, t, {a.beam, &cache, &times}, &st);
  }
  if (!a.tuning_cache.empty() && st.searched > 0) cache.save(a.tuning_cache);
  if (!a.quiet)
    std::cerr << "kilnc: tuning: " << st.kernels << " contraction kernels, " << st.from_cache
              << " from the cache, " << st.searched << " searched (" << st.candidates
              << " candidates timed, " << st.improved << " faster than the heuristics)\n";
  return chosen;
}

int run(const Args& a) {
  if (a.command == "inspect") {
    std::cout << kiln::describe_package(read_file(a.model), a.json) << (a.json ? "\n" : "");
    return 0;
  }
  kiln::PassTimes times;
  times.progress = !a.quiet;
  kiln::PipelineOptions pipeline = a.pipeline;
  pipeline.times = &times;
  struct PrintTimes {  // on every way out, errors included
    const Args& a;
    kiln::PassTimes& t;
    ~PrintTimes() {
      if (a.time_passes) t.print(std::cerr);
    }
  } print_times{a, times};
  kiln::Graph g;
  {
    kiln::ScopedPass t(&times, "import");
    kiln::load_model(a.model, g, a.model_opts);
  }
  if (a.pipeline.dump_ir.count("import") || a.pipeline.dump_ir.count("all")) {
    std::string dir = std::filesystem::absolute(a.dump_dir).string();
    std::cerr << "--- import ---\n"
              << kiln::write_graph_file(g, std::filesystem::current_path().string(), dir);
  }
  if (a.command == "run") {
    // Read every input before compiling, so that a bad input costs nothing.
    std::map<std::string, kiln::NDArray> inputs;
    for (const auto& [name, file] : a.inputs) {
      auto it = std::find_if(g.inputs().begin(), g.inputs().end(),
                             [&](const kiln::GraphInput& in) { return in.name == name; });
      if (it == g.inputs().end())
        throw kiln::Error("--input " + name + ": the model has no input named '" + name + "'");
      kiln::NpyArray arr = kiln::read_npy(file);
      const kiln::Shape& want = it->buffer->buffer().shape;
      if (arr.dtype != it->buffer->dtype || arr.shape != want)
        throw kiln::Error("--input " + name + ": '" + file + "' holds " + arr.dtype.str() +
                          kiln::shape_str(arr.shape) + ", the model wants " +
                          it->buffer->dtype.str() + kiln::shape_str(want));
      inputs.emplace(name, kiln::NDArray(arr.dtype, arr.shape, std::move(arr.data)));
    }
    std::string missing;
    for (const kiln::GraphInput& in : g.inputs())
      if (!inputs.count(in.name)) missing += (missing.empty() ? "" : ", ") + in.name;
    if (!missing.empty()) throw kiln::Error("missing --input for: " + missing);
    kiln::Plan plan = kiln::plan_graph(g, pipeline);
    kiln::Target host = kiln::Target::create({});
    auto tuned = tune(a, plan, host, times);
    kiln::JitProgram jit(plan, host, {a.opt_level, &tuned});
    auto outputs = jit.run(g, inputs);
    std::filesystem::create_directories(a.output_dir);
    for (const auto& o : g.outputs()) {
      const kiln::NDArray& arr = outputs.at(o.name);
      std::string path =
          (std::filesystem::path(a.output_dir) / (file_name_for(o.name) + ".npy")).string();
      std::vector<uint8_t> bytes =
          kiln::serialize_npy(kiln::NpyArray{arr.dtype(), arr.shape(), arr.bytes()});
      write_file(path, bytes.data(), bytes.size());
      std::cout << o.name << ": " << arr.dtype().str() << kiln::shape_str(arr.shape()) << " -> "
                << path << "\n";
    }
    return 0;
  }
  kiln::Plan plan = kiln::plan_graph(g, pipeline);
  if (a.command == "plan") {
    std::cout << kiln::plan_summary(plan, a.json) << (a.json ? "\n" : "");
    return 0;
  }
  kiln::Target t = kiln::Target::create(a.target);
  kiln::CodegenRequest req;
  req.llvm_ir = a.emit == "llvm-ir";
  req.assembly = a.emit == "asm";
  req.shared_object = a.emit == "shared-object" || a.emit == "package";
  bool static_lib = a.emit == "static-lib";
  std::string prefix = a.output, symbol;
  std::vector<uint8_t> model = read_file(a.model);
  kiln::Sha256 h;
  h.update(model.data(), model.size());
  kiln::PackageProvenance prov{output_flags(a, t), kiln::Sha256::hex(h.finish())};
  uint32_t static_id = 0;
  if (static_lib) {
    if (prefix.size() > 2 && prefix.compare(prefix.size() - 2, 2, ".a") == 0) prefix.resize(prefix.size() - 2);
    symbol = kiln::static_library_symbol(prefix);
    prov.flags.push_back("--emit=static-lib");
    static_id = kiln::static_kernels_id(prov.model_sha256, prov.flags);
    req.static_table = symbol + "_kernels";
    req.static_id = static_id;
  }
  auto tuned = tune(a, plan, t, times);
  kiln::CodegenArtifacts art = kiln::generate_code(plan, t, {a.opt_level, &tuned}, req, pipeline);
  if (a.emit == "package" || static_lib) {
    std::optional<kiln::SelfTestData> selftest;
    if (a.embed_selftest) {
      kiln::ScopedPass pt(&times, "selftest");
      selftest = make_selftest(a, g, plan);
    }
    std::vector<uint8_t> pkg;
    {
      kiln::ScopedPass pt(&times, "package");
      pkg = kiln::write_package(plan, g, art, t, prov, selftest ? &*selftest : nullptr, static_id);
    }
    if (!static_lib) {
      write_file(a.output, pkg.data(), pkg.size());
      return 0;
    }
    std::string package_file = std::filesystem::path(prefix + ".kiln").filename().string();
    kiln::StaticLibrary lib = kiln::make_static_library(symbol, art.object, art.kernels.size(),
                                                        a.embed_data ? &pkg : nullptr, package_file, t);
    write_file(prefix + ".a", lib.archive.data(), lib.archive.size());
    write_file(prefix + ".h", lib.header.data(), lib.header.size());
    if (!a.embed_data) write_file(prefix + ".kiln", pkg.data(), pkg.size());
    return 0;
  }
  if (a.emit == "llvm-ir") write_file(a.output, art.llvm_ir.data(), art.llvm_ir.size());
  if (a.emit == "asm") write_file(a.output, art.assembly.data(), art.assembly.size());
  if (a.emit == "object") write_file(a.output, art.object.data(), art.object.size());
  if (a.emit == "shared-object")
    write_file(a.output, art.shared_object.data(), art.shared_object.size());
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
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kilnc: error: %s\n", e.what());
    return 1;
  }
}
