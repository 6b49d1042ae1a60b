// kilnc: the kiln compiler's command line. See `kilnc --help`. It parses arguments (args.h),
// reads and writes files and prints; compiling is compiler/driver/compile.h.
//
// Errors print "kilnc: error: ..." and exit with status 1; usage errors exit with status 2.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/jit/jit.h"
#include "compiler/opt/tuning_cache.h"
#include "compiler/package/package_picture.h"
#include "compiler/package/package_reader.h"
#include "compiler/package/package_signing.h"
#include "compiler/schedule/plan_dot.h"
#include "compiler/support/error.h"
#include "compiler/support/file.h"
#include "compiler/tensor/npy.h"
#include "compiler/tensor/tensor.h"
#include "tools/kilnc/args.h"

namespace {

using kilnc::Args;

// The flags that decide the compiled output, as recorded in the package's provenance.
std::vector<std::string> provenance_flags(const Args& a,
                                          const std::vector<kiln::TargetInfo>& targets) {
  std::string cpus;
  for (const kiln::TargetInfo& t : targets) cpus += (cpus.empty() ? "" : ",") + t.cpu();
  std::vector<std::string> f = {"--target=" + targets[0].triple(), "--cpu=" + cpus,
                                "--opt-level=" + std::to_string(a.opt_level)};
  for (const auto& [name, shape] : a.compile.model.shapes)
    f.push_back("--shape=" + name + "=" + kiln::shape_str(shape));
  for (const auto& [param, n] : a.compile.model.dims)
    f.push_back("--dim=" + param + "=" + std::to_string(n));
  for (const auto& [param, range] : a.compile.model.dim_ranges)
    f.push_back("--dim=" + param + "=" + std::to_string(range.first) + ".." +
                std::to_string(range.second));
  f.insert(f.end(), a.frozen_flags.begin(), a.frozen_flags.end());
  if (a.compile.emit == kiln::Emit::StaticLibrary) f.push_back("--emit=static-lib");
  if (!a.compile.model.lowering.winograd) f.push_back("--no-winograd");
  if (!a.compile.model.lowering.depthwise_taps) f.push_back("--no-depthwise-taps");
  if (!a.compile.model.lowering.channels_last_chains) f.push_back("--no-channels-last-chains");
  if (a.compile.model.lowering.threads != 1)
    f.push_back("--threads=" + std::to_string(a.compile.model.lowering.threads));
  return f;
}

// What the package will need of a CPU, per variant; for a host compile on an x86-64 newer than
// the x86-64-v3 baseline, how to make a package that also runs on the machines next to it.
std::string target_summary(const std::vector<kiln::TargetInfo>& targets, bool host_default) {
  std::string s;
  for (const kiln::TargetInfo& t : targets) {
    std::vector<std::string> f = t.required_features();
    s += "kilnc: " + t.triple() + ", CPU " + t.cpu() + (targets.size() > 1 ? " (a variant)" : "") +
         ": the package requires " + std::to_string(f.size()) + " CPU features:";
    for (const std::string& name : f) s += " " + name;
    s += "\n";
  }
  if (host_default && targets[0].is_x86()) {
    kiln::TargetInfo v3 = kiln::TargetInfo::create({targets[0].triple(), "x86-64-v3"});
    std::vector<std::string> base = v3.required_features(), extra;
    for (const std::string& name : targets[0].required_features())
      if (std::find(base.begin(), base.end(), name) == base.end()) extra.push_back(name);
    if (!extra.empty())
      s += "kilnc: hint: this CPU has " + std::to_string(extra.size()) +
           " features beyond x86-64-v3 (" + extra[0] + (extra.size() > 1 ? ", ..." : "") +
           "): a CPU without them refuses the package; --cpu x86-64-v3," + targets[0].cpu() +
           " adds a variant that runs on any x86-64-v3 CPU\n";
  }
  return s;
}

// Output file names: characters outside [A-Za-z0-9._-] become '_'.
std::string file_name_for(const std::string& name) {
  std::string r;
  for (char c : name)
    r +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return r.empty() ? "_" : r;
}

// kilnc keygen -o NAME: NAME.key readable by its owner only, NAME.pub for whoever loads packages.
int keygen(const Args& a) {
  kiln::SigningKey k = kiln::generate_signing_key();
  std::string secret = a.output + ".key", pub = a.output + ".pub";
  kiln::write_file(secret, kiln::format_secret_key(k));
  std::filesystem::permissions(
      secret, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
      std::filesystem::perm_options::replace);
  kiln::write_file(pub, kiln::format_public_key(k.public_key));
  std::cout << "wrote " << secret << " (keep it secret) and " << pub << "\n";
  return 0;
}

int run(Args& a) {
  if (a.command == "keygen") return keygen(a);
  if (a.command == "inspect") {
    std::vector<uint8_t> bytes = kiln::read_file(a.model);
    std::cout << kiln::describe_package(bytes, a.json) << (a.json ? "\n" : "");
    if (!a.svg.empty()) {
      std::string svg =
          kiln::package_picture_svg(bytes, std::filesystem::path(a.model).filename().string());
      kiln::write_file(a.svg, svg);
    }
    return 0;
  }
  kiln::CompileOptions& c = a.compile;
  kiln::PassTimes times;
  times.progress = !a.quiet;
  c.times = &times;
  struct PrintTimes {  // on every way out, errors included
    bool on;
    kiln::PassTimes& t;
    ~PrintTimes() {
      if (on) t.print(std::cerr);
    }
  } print_times{a.time_passes, times};
  for (const auto& [name, file] : a.inputs) {
    kiln::NpyArray arr = kiln::read_npy(file);
    c.inputs.emplace(name, kiln::NDArray(arr.dtype, arr.shape, std::move(arr.data)));
  }
  // --cpu A,B,C: one target per CPU, the package's variants in that order.
  std::vector<kiln::TargetInfo> targets;
  if (a.target.triple.empty() && a.target.cpu.empty()) {
    targets.push_back(kiln::TargetInfo::host());
  } else {
    std::stringstream cpus(a.target.cpu);
    std::string cpu;
    do {
      std::getline(cpus, cpu, ',');
      targets.push_back(kiln::TargetInfo::create({a.target.triple, cpu}));
    } while (cpus.good());
  }
  c.target = &targets[0];
  for (size_t i = 1; i < targets.size(); ++i) c.variant_targets.push_back(&targets[i]);
  c.provenance_flags = provenance_flags(a, targets);
  if (!a.quiet && (c.emit == kiln::Emit::Package || c.emit == kiln::Emit::StaticLibrary))
    std::cerr << target_summary(targets, a.target.cpu.empty());
  kiln::SigningKey key;
  if (!a.sign_key.empty()) {
    std::vector<uint8_t> text = kiln::read_file(a.sign_key);
    key = kiln::parse_secret_key(std::string(text.begin(), text.end()), a.sign_key);
    c.signing_key = &key;
  }
  kiln::TuningCache cache;
  if (!a.tuning_cache.empty()) {
    cache = kiln::TuningCache::load(a.tuning_cache);
    c.tuning.cache = &cache;
  }
  kiln::Artifacts art = kiln::compile(a.model, c);
  if (c.emit != kiln::Emit::Plan && (c.tuning.beam > 0 || c.tuning.cache)) {
    const kiln::TuneStats& st = art.tuning;
    if (!a.tuning_cache.empty() && st.searched > 0) cache.save(a.tuning_cache);
    if (!a.quiet)
      std::cerr << "kilnc: tuning: " << st.kernels << " contraction kernels, " << st.from_cache
                << " from the cache, " << st.searched << " searched (" << st.candidates
                << " candidates timed, " << st.improved << " faster than the heuristics)\n";
  }
  switch (c.emit) {
    case kiln::Emit::Plan:
      std::cout << kiln::plan_summary(art.plan, a.json) << (a.json ? "\n" : "");
      if (!a.dot.empty()) {
        std::string dot =
            kiln::plan_dot(art.plan, std::filesystem::path(a.model).filename().string());
        kiln::write_file(a.dot, dot);
      }
      break;
    case kiln::Emit::Jit: {
      auto outputs = art.jit->run(*art.graph, c.inputs);
      std::filesystem::create_directories(a.output_dir);
      for (const auto& o : art.graph->outputs()) {
        const kiln::NDArray& arr = outputs.at(o.name);
        std::string path =
            (std::filesystem::path(a.output_dir) / (file_name_for(o.name) + ".npy")).string();
        kiln::write_file(
            path, kiln::serialize_npy(kiln::NpyArray{arr.dtype(), arr.shape(), arr.bytes()}));
        std::cout << o.name << ": " << arr.dtype().str() << kiln::shape_str(arr.shape()) << " -> "
                  << path << "\n";
      }
      break;
    }
    case kiln::Emit::StaticLibrary:
      kiln::write_file(art.static_prefix + ".a", art.archive);
      kiln::write_file(art.static_prefix + ".h", art.header);
      if (!c.embed_package) kiln::write_file(art.static_prefix + ".kiln", art.package);
      break;
    case kiln::Emit::Package:
      kiln::write_file(a.output, art.package);
      break;
    case kiln::Emit::LlvmIr:
      kiln::write_file(a.output, art.llvm_ir);
      break;
    case kiln::Emit::Assembly:
      kiln::write_file(a.output, art.assembly);
      break;
    case kiln::Emit::Object:
      kiln::write_file(a.output, art.object);
      break;
    case kiln::Emit::SharedObject:
      kiln::write_file(a.output, art.shared_object);
      break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = kilnc::parse_args(argc, argv);
  } catch (const kilnc::UsageError& e) {
    std::fprintf(stderr, "kilnc: %s\n\n%s", e.what(), kilnc::usage().c_str());
    return 2;
  }
  try {
    return run(args);
  } catch (const kiln::Error& e) {
    // The library names options in neutral words; say how kilnc spells them.
    std::string flag, hints;
    if (auto* oe = dynamic_cast<const kiln::OptionError*>(&e))
      flag = std::string(kilnc::flag_for(oe->option())) + ": ";
    for (kiln::Option h : e.hints())
      hints += std::string(hints.empty() ? "" : ", ") + kilnc::flag_for(h);
    std::fprintf(stderr, "kilnc: error: %s%s%s\n", flag.c_str(), e.what(),
                 hints.empty() ? "" : ("\n  (kilnc: " + hints + ")").c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kilnc: error: %s\n", e.what());
    return 1;
  }
}
