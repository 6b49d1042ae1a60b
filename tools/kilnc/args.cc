#include "tools/kilnc/args.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <llvm/Config/llvm-config.h>

#include "compiler/driver/stages.h"
#include "compiler/tensor/npy.h"
#include "schema/kiln_abi.h"

namespace kilnc {

std::string usage() {
  std::string stages;
  for (const std::string& s : kiln::stage_names()) stages += (stages.empty() ? "" : ", ") + s;
  return "usage: kilnc COMMAND MODEL [options]\n\n"
         "commands:\n"
         "  plan MODEL          plan the model and print the plan summary (--dot OUT.dot: the\n"
         "                      kernel graph, kernels labelled with the nodes they fuse)\n"
         "  run MODEL           compile in memory (JIT) and run: --input NAME=FILE.npy ... "
         "--output-dir DIR\n"
         "  compile MODEL -o OUT.kiln [--emit KIND]\n"
         "                      write the package (default), or static-lib, llvm-ir, asm,\n"
         "                      object, shared-object\n"
         "  inspect PACKAGE     describe a package (--json for one JSON object; --svg OUT.svg:\n"
         "                      a picture of the memory plan and the parallel groups)\n"
         "  keygen -o NAME      write an Ed25519 key pair: NAME.key (secret) and NAME.pub\n\n"
         "options:\n"
         "  --shape NAME=D0,D1,...   input shape (repeatable); a Di may name a --dim symbol\n"
         "  --dim PARAM=N            bind an ONNX dim parameter (e.g. batch=1) on every input\n"
         "  --dim PARAM=LO..HI       keep it symbolic: one package for every size in [LO, HI]\n"
         "  --freeze NAME=FILE.npy   make an ONNX input a constant (inputs that must be known at\n"
         "                           compile time, e.g. a Reshape's shape); the package lacks it\n"
         "  --json                   plan, inspect: print one JSON object\n"
         "  --target TRIPLE          x86_64-linux-gnu, aarch64-linux-gnu (default: the host)\n"
         "  --cpu NAME[,NAME...]     CPU for the target (default: the host CPU, or generic); a\n"
         "                           list (x86-64-v2,x86-64-v3,x86-64-v4) makes one package of\n"
         "                           kernel variants, most portable first: the runtime runs the\n"
         "                           last one the CPU has the features for\n"
         "  --opt-level N            0: no kernel optimizations (scalar loops); 1: vectors and\n"
         "                           tasks; 2: register tiles and unrolls (default)\n"
         "  --input NAME=FILE.npy    run, --embed-selftest: a value for an input (repeatable)\n"
         "  --output-dir DIR         run: where outputs are written as NAME.npy\n"
         "  --dump-ir=STAGE[,...]    print the IR after stages: " +
         stages +
         ", all\n"
         "  --dump-dir DIR           where --dump-ir=import writes weight .npy files (default "
         "kiln-dump)\n"
         "  --explain-fusion         log every fusion decision\n"
         "  --cross-core N           print the cache lines each launch moves between cores\n"
         "                           at N threads, per run, and the launch and buffer pairs\n"
         "                           that move the most (after the optimize stage)\n"
         "  --no-winograd            direct 3x3 convolutions only (Winograd's transformed weights\n"
         "                           are 4x larger: a smaller package, slower 3x3 layers)\n"
         "  --no-depthwise-taps      small depthwise layers over a padded map too, as larger\n"
         "                           ones (not as the sum of their taps over a dense map)\n"
         "  --no-channels-last-chains  chains of dense convolutions keep NCHW maps (not\n"
         "                           channels-last ones, over which a 1x1 layer is a matrix\n"
         "                           product)\n"
         "  --threads N              the threads its sessions will run (default 1): Winograd\n"
         "                           layers must pay for transforms that do not divide among\n"
         "                           threads; the package runs at any thread count\n"
         "  --embed-data             --emit static-lib: put the package in the archive as a C "
         "array\n"
         "  --embed-selftest         compile: store inputs (--input files, or seeded random "
         "values)\n"
         "                           and this machine's outputs for kiln_model_selftest / kiln-run "
         "--selftest\n"
         "  --beam N                 tune contraction kernels: time candidates on this machine,\n"
         "                           keep the N fastest tiles per round (host target only)\n"
         "  --tuning-cache PATH      reuse (and, with --beam, extend) tuning results kept in PATH\n"
         "  --sign NAME.key          compile: sign the package (kiln-run --trust NAME.pub checks "
         "it)\n"
         "  --time-passes            print the wall time of every stage at the end\n"
         "  --quiet                  no progress lines (printed once a compile runs over 2 s)\n"
         "  --version                print kilnc's version and the package formats it handles\n"
         "  -h, --help               print this text\n";
}

std::string version() {
  return std::string("kilnc ") + KILN_VERSION + " (LLVM " LLVM_VERSION_STRING ")\n" +
         "writes package format " + std::to_string(KILN_ABI_FORMAT_MAJOR) + "." +
         std::to_string(KILN_ABI_FORMAT_MINOR) + "; inspects format " +
         std::to_string(KILN_ABI_FORMAT_MAJOR) + ".x\n";
}

// How kilnc spells each compile option (the library names them in neutral words).
const char* flag_for(kiln::Option o) {
  using kiln::Option;
  switch (o) {
    case Option::InputShape:
      return "--shape NAME=D0,D1,...";
    case Option::DimParam:
      return "--dim PARAM=N";
    case Option::Freeze:
      return "--freeze NAME=FILE.npy";
    case Option::Target:
      return "--target";
    case Option::Cpu:
      return "--cpu";
    case Option::Beam:
      return "--beam";
    case Option::TuningCache:
      return "--tuning-cache PATH";
    case Option::Input:
      return "--input";
    case Option::DumpIr:
      return "--dump-ir";
  }
  return "?";
}

namespace {

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

int64_t parse_int(const std::string& s, const std::string& flag, int64_t lo, int64_t hi) {
  kiln::Shape n = parse_dims(s, flag);
  if (n.size() != 1 || n[0] < lo || n[0] > hi)
    throw UsageError(flag + " wants a number from " + std::to_string(lo) + " to " +
                     std::to_string(hi));
  return n[0];
}

std::pair<std::string, std::string> name_value(const std::string& v, const std::string& flag) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(flag + " wants NAME=VALUE, got '" + v + "'");
  return {v.substr(0, eq), v.substr(eq + 1)};
}

kiln::NDArray read_array(const std::string& file) {
  kiln::NpyArray arr = kiln::read_npy(file);
  return kiln::NDArray(arr.dtype, arr.shape, std::move(arr.data));
}

}  // namespace

Args parse_args(int argc, char** argv) {
  Args a;
  kiln::CompileOptions& c = a.compile;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto is = [&](const std::string& flag) { return s == flag || s.rfind(flag + "=", 0) == 0; };
    auto value = [&](const std::string& flag) -> std::string {
      if (s.size() > flag.size() && s[flag.size()] == '=') return s.substr(flag.size() + 1);
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (is("--shape")) {
      auto [n, v] = name_value(value("--shape"), "--shape");
      // A name instead of a number is a symbol (`--shape ids=1,seq` with `--dim seq=1..512`).
      std::vector<std::string> names;
      std::string numbers;
      std::stringstream ss(v);
      bool named = false;
      for (std::string tok; std::getline(ss, tok, ',');) {
        bool ident =
            !tok.empty() && (std::isalpha(static_cast<unsigned char>(tok[0])) || tok[0] == '_');
        names.push_back(ident ? tok : "");
        numbers += (numbers.empty() ? "" : ",") + (ident ? std::string("0") : tok);
        named |= ident;
      }
      c.model.shapes[n] = parse_dims(numbers, "--shape");
      if (named) c.model.shape_symbols[n] = names;
    } else if (is("--dim")) {
      auto [n, v] = name_value(value("--dim"), "--dim");
      if (size_t dots = v.find(".."); dots != std::string::npos) {
        // A symbol: the package takes any size in [lo, hi] at run time.
        int64_t lo = parse_int(v.substr(0, dots), "--dim", 0, INT64_MAX);
        int64_t hi = parse_int(v.substr(dots + 2), "--dim", 0, INT64_MAX);
        if (lo > hi)
          throw UsageError("--dim " + n + "=" + v + ": the minimum " + std::to_string(lo) +
                           " is above the maximum " + std::to_string(hi));
        if (lo == hi)
          c.model.dims[n] = lo;
        else
          c.model.dim_ranges[n] = {lo, hi};
      } else {
        c.model.dims[n] = parse_int(v, "--dim", 0, INT64_MAX);
      }
    } else if (is("--freeze")) {
      auto [n, file] = name_value(value("--freeze"), "--freeze");
      c.model.frozen.emplace(n, read_array(file));
      a.frozen_flags.push_back("--freeze=" + n + "=" + file);
    } else if (is("--dump-ir")) {
      std::stringstream ss(value("--dump-ir"));
      for (std::string st; std::getline(ss, st, ',');) c.dump_ir.insert(st);
    } else if (is("--beam")) {
      c.tuning.beam = static_cast<int>(parse_int(value("--beam"), "--beam", 1, 64));
    } else if (is("--opt-level")) {
      a.opt_level = static_cast<int>(parse_int(value("--opt-level"), "--opt-level", 0, 2));
    } else if (s == "-o" || is("--output")) {
      a.output = s == "-o" ? (i + 1 < argc ? argv[++i] : throw UsageError("-o needs a value"))
                           : value("--output");
    } else if (is("--threads")) {
      c.model.lowering.threads = parse_int(value("--threads"), "--threads", 1, 64);
    } else if (is("--emit")) {
      a.emit = value("--emit");
    } else if (is("--input")) {
      a.inputs.push_back(name_value(value("--input"), "--input"));
    } else if (is("--sign")) {
      a.sign_key = value("--sign");
    } else if (is("--svg")) {
      a.svg = value("--svg");
    } else if (is("--dot")) {
      a.dot = value("--dot");
    } else if (is("--tuning-cache"))
      a.tuning_cache = value("--tuning-cache");
    else if (is("--dump-dir"))
      a.dump_dir = value("--dump-dir");
    else if (is("--target"))
      a.target.triple = value("--target");
    else if (is("--cpu"))
      a.target.cpu = value("--cpu");
    else if (is("--output-dir"))
      a.output_dir = value("--output-dir");
    else if (s == "--json")
      a.json = true;
    else if (s == "--embed-selftest")
      c.embed_selftest = true;
    else if (s == "--embed-data")
      c.embed_package = true;
    else if (s == "--no-winograd")
      c.model.lowering.winograd = false;
    else if (s == "--no-depthwise-taps")
      c.model.lowering.depthwise_taps = false;
    else if (s == "--no-channels-last-chains")
      c.model.lowering.channels_last_chains = false;
    else if (s == "--time-passes")
      a.time_passes = true;
    else if (s == "--quiet")
      a.quiet = true;
    else if (s == "--explain-fusion")
      c.explain_fusion = true;
    else if (is("--cross-core"))
      c.cross_core_threads = parse_int(value("--cross-core"), "--cross-core", 1, 8);
    else if (s == "-h" || s == "--help") {
      std::cout << usage();
      std::exit(0);
    } else if (s == "--version") {
      std::cout << version();
      std::exit(0);
    } else if (!s.empty() && s[0] == '-') {
      throw UsageError("unknown option '" + s + "'");
    } else {
      pos.push_back(s);
    }
  }
  if (pos.empty()) throw UsageError("missing command");
  a.command = pos[0];
  if (a.command != "plan" && a.command != "run" && a.command != "compile" &&
      a.command != "inspect" && a.command != "keygen")
    throw UsageError("unknown command '" + a.command + "'");
  if (a.command == "keygen") {
    if (pos.size() != 1 || a.output.empty())
      throw UsageError("keygen takes -o NAME and nothing else");
    return a;
  }
  if (pos.size() != 2) throw UsageError(a.command + " takes one MODEL");
  a.model = pos[1];
  static const std::vector<std::pair<std::string, kiln::Emit>> kinds = {
      {"package", kiln::Emit::Package}, {"static-lib", kiln::Emit::StaticLibrary},
      {"llvm-ir", kiln::Emit::LlvmIr},  {"asm", kiln::Emit::Assembly},
      {"object", kiln::Emit::Object},   {"shared-object", kiln::Emit::SharedObject}};
  auto kind =
      std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == a.emit; });
  if (kind == kinds.end())
    throw UsageError(
        "--emit wants package, static-lib, llvm-ir, asm, object or shared-object, got '" + a.emit +
        "'");
  c.emit = a.command == "plan"  ? kiln::Emit::Plan
           : a.command == "run" ? kiln::Emit::Jit
                                : kind->second;
  if (a.command == "compile" && a.output.empty()) throw UsageError("compile needs -o OUT");
  if (a.command == "run" && a.output_dir.empty()) throw UsageError("run needs --output-dir DIR");
  if (!a.svg.empty() && a.command != "inspect") throw UsageError("--svg goes with inspect");
  if (!a.dot.empty() && a.command != "plan") throw UsageError("--dot goes with plan");
  if (c.embed_selftest && c.emit != kiln::Emit::Package && c.emit != kiln::Emit::StaticLibrary)
    throw UsageError("--embed-selftest goes with compile --emit package or static-lib");
  if (c.embed_package && c.emit != kiln::Emit::StaticLibrary)
    throw UsageError("--embed-data goes with --emit static-lib");
  if (a.command == "compile" && !a.inputs.empty() && !c.embed_selftest)
    throw UsageError("compile takes --input files only for --embed-selftest");
  if (!a.sign_key.empty() && c.emit != kiln::Emit::Package && c.emit != kiln::Emit::StaticLibrary)
    throw UsageError("--sign goes with compile --emit package or static-lib");
  if (a.opt_level == 0 && (c.tuning.beam > 0 || !a.tuning_cache.empty()))
    throw UsageError("--beam and --tuning-cache need --opt-level above 0");
  c.tuning.opt_level = static_cast<kiln::OptLevel>(a.opt_level);
  c.dump_dir = a.dump_dir;
  c.static_output = a.output;
  return a;
}

}  // namespace kilnc
