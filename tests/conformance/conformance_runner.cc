// kiln_conformance: runs ONNX backend node tests (a folder per test: model.onnx and
// test_data_set_*/{input,output}_N.pb) through the real path — ONNX import, the pipeline, LLVM
// codegen, the package writer, then the C runtime loading the package bytes — and compares every
// output with the expected one (ONNX's own tolerance: |got - want| <= atol + rtol * |want|, with
// rtol 1e-3 and atol 1e-7; integers and booleans exactly; NaN matches NaN).
//
// Each test runs in a forked child, so a crash or a hang is recorded as that test's failure and
// the suite goes on; two children run at a time (the machine's cores).
//
// Every test is one of: pass; unsupported (the importer reports a missing op, attribute or dtype:
// a capability kiln does not have yet); fail (anything else: wrong numbers, a compile error, a
// crash, a timeout). The report is a Markdown table of every test; the exit status is nonzero
// when the pass count is below the ratchet (the count recorded in the repo).
//
// usage: kiln_conformance DATA_DIR [--report FILE.md] [--ratchet FILE] [--filter SUBSTRING]
//                         [--jobs N] [--timeout SECONDS] [--verbose]
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/package/package_writer.h"
#include "kiln/kiln.h"

namespace fs = std::filesystem;

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

struct Outcome {
  std::string status;  // pass, fail, unsupported
  std::string reason;
};

// The first line of a message, without the importer's preamble, fit for one table cell.
std::string one_line(std::string s) {
  const std::string preamble = "problem):\n  ";
  if (size_t p = s.find(preamble); p != std::string::npos) s = s.substr(p + preamble.size());
  const std::string preamble2 = "problems):\n  ";
  if (size_t p = s.find(preamble2); p != std::string::npos) s = s.substr(p + preamble2.size());
  if (size_t nl = s.find('\n'); nl != std::string::npos) s = s.substr(0, nl);
  for (char& c : s)
    if (c == '|') c = '/';
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

onnx::TensorProto read_tensor_pb(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  onnx::TensorProto t;
  if (!f || !t.ParseFromIstream(&f)) throw kiln::Error("cannot parse " + p.filename().string());
  return t;
}

// Compares one output; "" when it matches, else why not.
std::string compare(kiln::NDArray want, kiln_dtype got_dtype, const kiln::Shape& got_shape,
                    const void* got_data, size_t got_bytes) {
  // ONNX 1.12's generator stores bfloat16 data as its uint16 bit patterns.
  if (got_dtype == KILN_DTYPE_BFLOAT16 && want.dtype() == kiln::dtypes::uint16)
    want = kiln::NDArray(kiln::dtypes::bfloat16, want.shape(), want.bytes());
  if (std::string(kiln_dtype_name(got_dtype)) != want.dtype().str())
    return std::string("dtype ") + kiln_dtype_name(got_dtype) + ", expected " + want.dtype().str();
  if (got_shape != want.shape())
    return "shape " + kiln::shape_str(got_shape) + ", expected " + kiln::shape_str(want.shape());
  if (static_cast<int64_t>(got_bytes) != want.nbytes()) return "output size differs";
  kiln::NDArray got(want.dtype(), want.shape(),
                    std::vector<uint8_t>(static_cast<const uint8_t*>(got_data),
                                         static_cast<const uint8_t*>(got_data) + got_bytes));
  bool is_float = want.dtype().is_float();
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    kiln::ConstValue w = want.get(i), g = got.get(i);
    bool ok;
    if (is_float) {
      double wv = w.as_double(), gv = g.as_double();
      if (std::isnan(wv) || std::isnan(gv))
        ok = std::isnan(wv) && std::isnan(gv);
      else if (std::isinf(wv) || std::isinf(gv))
        ok = wv == gv;
      else
        ok = std::fabs(gv - wv) <= kAtol + kRtol * std::fabs(wv);
      if (!ok && !std::isnan(wv) && !std::isnan(gv)) worst = std::max(worst, std::fabs(gv - wv));
    } else {
      ok = w.as_int() == g.as_int();
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::ostringstream m;
  m << bad << " of " << want.numel() << " values differ (first at " << first << ": got "
    << got.get(first).str() << ", expected " << want.get(first).str() << ")";
  if (is_float) m << ", max |diff| " << worst;
  return m.str();
}

// The model input an importer message says must be known at compile time ("" if none).
std::string freeze_candidate(const std::string& msg) {
  const std::string key = "depends on the model input '";
  size_t p = msg.find(key);
  if (p == std::string::npos) return "";
  p += key.size();
  size_t e = msg.find('\'', p);
  return e == std::string::npos ? "" : msg.substr(p, e - p);
}

fs::path first_data_set(const fs::path& dir) {
  return dir / "test_data_set_0";
}

// Compiles and runs one test (in the child process).
Outcome run_test(const fs::path& dir) {
  onnx::ModelProto model;
  {
    std::ifstream f(dir / "model.onnx", std::ios::binary);
    if (!f || !model.ParseFromIstream(&f)) return {"fail", "model.onnx does not parse"};
  }
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> input_names, output_names;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) input_names.push_back(in.name());
  for (const auto& out : model.graph().output()) output_names.push_back(out.name());

  // Inputs the importer needs at compile time (a Reshape's shape, ReduceSum's axes, ... which
  // real models hold in initializers but node tests feed as inputs) are frozen to the test's
  // value, as `kilnc --freeze` does; the report names them.
  kiln::Graph g;
  kiln::OnnxImportOptions io;
  std::string frozen;
  for (;;) {
    try {
      onnx::ModelProto copy = model;
      kiln::import_onnx_model(copy, dir.string(), g, io);
      break;
    } catch (const kiln::UnsupportedModel& e) {
      std::string msg = e.what(), input = freeze_candidate(msg);
      auto pos = std::find(input_names.begin(), input_names.end(), input);
      if (input.empty() || io.frozen.count(input) || pos == input_names.end())
        return {"unsupported", one_line(msg)};
      fs::path p =
          first_data_set(dir) / ("input_" + std::to_string(pos - input_names.begin()) + ".pb");
      if (!fs::exists(p)) return {"unsupported", one_line(msg)};
      io.frozen.emplace(input, kiln::onnxfe::tensor_data(read_tensor_pb(p), dir.string()));
      frozen += (frozen.empty() ? "" : ", ") + input;
      g = kiln::Graph();
    }
  }
  kiln::CompileOptions co;
  co.provenance_flags = {"--conformance"};
  co.model_sha256 = "0";
  std::vector<uint8_t> pkg = kiln::compile(g, co).package;

  kiln_model* m = nullptr;
  if (kiln_model_load_memory(pkg.data(), pkg.size(), nullptr, &m) != KILN_OK)
    return {"fail", std::string("the runtime rejects the package: ") + kiln_last_error_message()};
  kiln_session* s = nullptr;
  if (kiln_session_create(m, nullptr, &s) != KILN_OK)
    return {"fail", std::string("session: ") + kiln_last_error_message()};

  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {"fail", "no test_data_set_* folder"};
  for (const fs::path& set : sets) {
    std::vector<onnx::TensorProto> inputs;  // kept alive: the data is copied by set_input
    for (size_t i = 0; i < input_names.size(); ++i) {
      fs::path p = set / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) return {"fail", "missing " + p.filename().string()};
      onnx::TensorProto t = read_tensor_pb(p);
      size_t index;
      if (kiln_model_find_input(m, input_names[i].c_str(), &index) != KILN_OK)
        continue;  // the model does not read this input
      kiln_tensor_info info;
      info.struct_size = sizeof info;
      kiln_model_input_info(m, index, &info);
      kiln::NDArray a = kiln::onnxfe::tensor_data(t, dir.string());
      if (kiln_session_set_input(s, index, info.dtype, a.data(), static_cast<size_t>(a.nbytes())) !=
          KILN_OK)
        return {"fail", "input '" + input_names[i] + "': " + kiln_last_error_message()};
    }
    if (kiln_session_run(s) != KILN_OK)
      return {"fail", std::string("run: ") + kiln_last_error_message()};
    for (size_t i = 0; i < output_names.size(); ++i) {
      fs::path p = set / ("output_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) return {"fail", "missing " + p.filename().string()};
      kiln::NDArray want = kiln::onnxfe::tensor_data(read_tensor_pb(p), dir.string());
      size_t index;
      if (kiln_model_find_output(m, output_names[i].c_str(), &index) != KILN_OK)
        return {"fail", "the package lost output '" + output_names[i] + "'"};
      kiln_tensor_info info;
      info.struct_size = sizeof info;
      kiln_model_output_info(m, index, &info);
      const void* data;
      size_t bytes, rank;
      const int64_t* dims;
      kiln_session_output(s, index, &data, &bytes);
      // The run's shape: a symbolic output's (a size computed from data) may be smaller.
      kiln_session_output_shape(s, index, &rank, &dims);
      kiln::Shape shape(dims, dims + rank);
      std::string why = compare(want, info.dtype, shape, data, bytes);
      if (!why.empty()) return {"fail", "output '" + output_names[i] + "': " + why};
    }
  }
  kiln_session_release(s);
  kiln_model_release(m);
  // A pass that needed frozen inputs is not a pass of the test as written (the test's own
  // inputs were not enough): it is counted apart and does not raise the ratchet.
  if (!frozen.empty()) return {"frozen", "passes only with frozen inputs: " + frozen};
  return {"pass", ""};
}

// The op types a test's model uses, for the report.
std::string ops_of(const fs::path& dir) {
  onnx::ModelProto model;
  std::ifstream f(dir / "model.onnx", std::ios::binary);
  if (!f || !model.ParseFromIstream(&f)) return "?";
  std::vector<std::string> ops;
  for (const auto& n : model.graph().node())
    if (std::find(ops.begin(), ops.end(), n.op_type()) == ops.end()) ops.push_back(n.op_type());
  std::string r;
  for (size_t i = 0; i < ops.size() && i < 4; ++i) r += (i ? ", " : "") + ops[i];
  if (ops.size() > 4) r += ", ...";
  return r;
}

struct Running {
  pid_t pid;
  int fd;
  size_t test;
  std::string out;
};

struct Options {
  fs::path data;
  std::string report, ratchet, filter;
  int jobs = 2;
  int timeout = 120;
  bool verbose = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw kiln::Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--report")
      o.report = next();
    else if (a == "--ratchet")
      o.ratchet = next();
    else if (a == "--filter")
      o.filter = next();
    else if (a == "--jobs")
      o.jobs = std::max(1, std::stoi(next()));
    else if (a == "--timeout")
      o.timeout = std::max(1, std::stoi(next()));
    else if (a == "--verbose")
      o.verbose = true;
    else if (!a.empty() && a[0] == '-')
      throw kiln::Error("unknown option " + a);
    else
      o.data = a;
  }
  if (o.data.empty())
    throw kiln::Error("usage: kiln_conformance DATA_DIR [--report FILE.md] [--ratchet FILE]");
  return o;
}

int main_impl(int argc, char** argv) {
  Options opt = parse(argc, argv);
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(opt.data))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
        e.path().filename().string().find(opt.filter) != std::string::npos)
      tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  if (tests.empty()) throw kiln::Error("no tests under " + opt.data.string());
  std::cout << "running " << tests.size() << " ONNX node tests from " << opt.data.string() << " ("
            << opt.jobs << " at a time)\n"
            << std::flush;

  std::vector<Outcome> results(tests.size());
  std::vector<Running> running;
  size_t next = 0, done = 0;
  auto start = std::chrono::steady_clock::now();
  while (done < tests.size()) {
    while (next < tests.size() && static_cast<int>(running.size()) < opt.jobs) {
      int fds[2];
      if (pipe(fds) != 0) throw kiln::Error("pipe failed");
      std::cout.flush();
      pid_t pid = fork();
      if (pid < 0) throw kiln::Error("fork failed");
      if (pid == 0) {
        close(fds[0]);
        alarm(static_cast<unsigned>(opt.timeout));
        Outcome r;
        try {
          r = run_test(tests[next]);
        } catch (const std::exception& e) {
          r = {"fail", one_line(e.what())};
        }
        std::string msg = r.status + "\t" + one_line(r.reason);
        ssize_t unused = write(fds[1], msg.data(), msg.size());
        (void)unused;
        _exit(0);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], next++, ""});
    }
    std::vector<pollfd> pfds;
    for (const Running& r : running) pfds.push_back({r.fd, POLLIN, 0});
    if (poll(pfds.data(), pfds.size(), -1) < 0 && errno != EINTR) throw kiln::Error("poll failed");
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Running& r = running[k];
      char buf[512];
      ssize_t n = read(r.fd, buf, sizeof buf);
      if (n > 0) {
        r.out.append(buf, static_cast<size_t>(n));
        continue;
      }
      close(r.fd);
      int st = 0;
      waitpid(r.pid, &st, 0);
      Outcome o;
      if (WIFSIGNALED(st))
        o = {"fail", WTERMSIG(st) == SIGALRM
                         ? "timed out after " + std::to_string(opt.timeout) + " s"
                         : std::string("crashed (") + strsignal(WTERMSIG(st)) + ")"};
      else if (size_t tab = r.out.find('\t'); tab != std::string::npos)
        o = {r.out.substr(0, tab), r.out.substr(tab + 1)};
      else
        o = {"fail", "exited without a result (status " + std::to_string(WEXITSTATUS(st)) + ")"};
      results[r.test] = o;
      ++done;
      if (opt.verbose || o.status == "fail")
        std::cout << "[" << done << "/" << tests.size() << "] " << tests[r.test].filename().string()
                  << ": " << o.status << (o.reason.empty() ? "" : " — " + o.reason) << "\n";
      else if (done % 100 == 0)
        std::cout << "[" << done << "/" << tests.size() << "]\n";
      std::cout.flush();
      r.fd = -1;
    }
    running.erase(
        std::remove_if(running.begin(), running.end(), [](const Running& r) { return r.fd < 0; }),
        running.end());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::map<std::string, int> count;
  for (const Outcome& o : results) ++count[o.status];
  int pass = count["pass"];
  int frozen_passes = count["frozen"];
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f", 100.0 * pass / static_cast<double>(tests.size()));
  std::cout << "conformance: " << pass << " pass, " << frozen_passes
            << " pass only with frozen inputs (not counted), " << count["fail"] << " fail, "
            << count["unsupported"] << " unsupported of " << tests.size() << " (" << pct
            << "% pass) in " << static_cast<int>(secs) << " s\n";

  if (!opt.report.empty()) {
    std::ofstream f(opt.report);
    f << "# ONNX operator conformance\n\n"
      << "Generated by `tools/scripts/update_ops_doc.sh` from the ONNX 1.12 backend node tests "
         "(`tests/conformance/`): each test's model is compiled by kiln (ONNX import, pipeline, "
         "LLVM "
         "codegen, package) and run by the C runtime, and every output is compared with ONNX's "
         "expected output (rtol "
      << kRtol << ", atol " << kAtol
      << "; integers and booleans exactly). *unsupported*: the importer reports an op, attribute "
         "or dtype kiln does not implement; *frozen*: passes only when inputs the test feeds at "
         "run "
         "time are frozen (not counted as a pass); *fail*: anything else.\n\n"
      << "Node tests feed every operand as a model input, also those a compiler must know "
         "(a Reshape's shape, ReduceSum's axes, Trilu's k), which real models hold in "
         "initializers. Where the importer needs such an input at compile time the runner freezes "
         "it "
         "to the test's value, as `kilnc --freeze NAME=FILE.npy` does, and the reason column names "
         "it; the test then counts as *frozen*, not as a pass: the count and the ratchet are of "
         "tests that pass with their own inputs only.\n\n"
      << "**" << pass << " pass, " << frozen_passes << " frozen, " << count["fail"] << " fail, "
      << count["unsupported"] << " unsupported of " << tests.size() << " tests (" << pct
      << "% pass with the tests' own inputs).**\n\n"
      << "The tests that *fail* are explained in docs/onnx-import.md (\"Node tests whose data "
         "disagrees with their model\"); those refused at run time as random are counted with "
         "the random ops.\n\n";
    // The tests that do not pass, by why (the first matching class).
    std::vector<std::pair<std::string, int>> why = {
        {"needs inputs known at compile time (frozen: run-time shapes, issue #14)", 0},
        {"string tensors", 0},
        {"sequences, maps and optionals", 0},
        {"the training domain (ai.onnx.preview.training)", 0},
        {"random ops (Bernoulli, RandomUniformLike, training-mode Dropout)", 0},
        {"data-dependent output sizes (NonMaxSuppression, Unique)", 0},
        {"other unsupported", 0},
        {"fail", 0}};
    for (size_t i = 0; i < tests.size(); ++i) {
      const Outcome& o = results[i];
      std::string ops = ops_of(tests[i]);
      auto has = [&](const char* t) {
        return o.reason.find(t) != std::string::npos || ops.find(t) != std::string::npos;
      };
      size_t k = o.status == "frozen"                                         ? 0
                 : o.status == "pass"                                         ? why.size()
                 : o.status == "fail" && !has("is random")                    ? 7
                 : has("string")                                              ? 1
                 : has("not a tensor") || has("Sequence") || has("Optional")  ? 2
                 : has("preview.training")                                    ? 3
                 : has("Bernoulli") || has("RandomUniform") || has("Dropout") ? 4
                 : has("NonMaxSuppression") || has("Unique")                  ? 5
                                                                              : 6;
      if (k < why.size()) ++why[k].second;
    }
    f << "| not passing, by reason | tests |\n|---|---|\n";
    for (const auto& [w, n] : why) f << "| " << w << " | " << n << " |\n";
    f << "\n| test | ops | result | reason |\n|---|---|---|---|\n";
    for (size_t i = 0; i < tests.size(); ++i)
      f << "| " << tests[i].filename().string() << " | " << ops_of(tests[i]) << " | "
        << results[i].status << " | " << results[i].reason << " |\n";
  }
  // The ratchet: the passes, then the passes plus the frozen passes (so an op the node tests
  // reach only with frozen inputs, e.g. Resize with its scales, cannot regress unseen either).
  if (!opt.ratchet.empty()) {
    std::ifstream f(opt.ratchet);
    int floor = -1, floor_with_frozen = -1;
    if (!(f >> floor >> floor_with_frozen))
      throw kiln::Error("cannot read the ratchet " + opt.ratchet + " (two counts)");
    int with_frozen = pass + frozen_passes;
    if (pass < floor || with_frozen < floor_with_frozen) {
      std::cout << "FAILED: " << pass << " tests pass (" << with_frozen
                << " with frozen inputs), fewer than the ratchet's " << floor << " ("
                << floor_with_frozen << ")\n";
      return 1;
    }
    if (pass > floor || with_frozen > floor_with_frozen)
      std::cout << "note: " << pass << " pass (" << with_frozen << " with frozen inputs), above "
                << "the ratchet's " << floor << " (" << floor_with_frozen
                << "): raise it with tools/scripts/update_ops_doc.sh\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kiln_conformance: " << e.what() << "\n";
    return 2;
  }
}
