// Round trip: models from the middle-end and codegen suites compiled to packages and run by the
// C runtime match `kilnc run` (the JIT, bit for bit: the same code) and the reference interpreter
// (within the float tolerance). Packages are reproducible: compiling twice gives the same bytes.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/driver/compile.h"
#include "compiler/jit/jit.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "kiln/kiln.h"
#include "tests/schedule/random_graph.h"

namespace kiln {
namespace {

const TargetInfo& host() {
  return TargetInfo::host();
}

Artifacts compile_package(Graph& g) {
  CompileOptions o;
  o.provenance_flags = {"--test"};
  o.model_sha256 = "0";
  return compile(g, o);
}

// Runs the package with the C runtime; outputs by name.
std::map<std::string, NDArray> run_package(const std::vector<uint8_t>& pkg, const Plan& p,
                                           const std::map<std::string, NDArray>& inputs,
                                           size_t threads) {
  kiln_model* m = nullptr;
  EXPECT_EQ(kiln_model_load_memory(pkg.data(), pkg.size(), nullptr, &m), KILN_OK)
      << kiln_last_error_message();
  if (!m) return {};
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.num_threads = threads;
  kiln_session* s = nullptr;
  EXPECT_EQ(kiln_session_create(m, &o, &s), KILN_OK) << kiln_last_error_message();
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const NDArray& a = inputs.at(p.buffer(p.inputs[i]).name);
    EXPECT_EQ(kiln_session_set_input(s, i, static_cast<kiln_dtype>(0), nullptr, 0),
              KILN_INVALID_ARGUMENT);
    kiln_tensor_info info;
    info.struct_size = sizeof info;
    kiln_model_input_info(m, i, &info);
    EXPECT_EQ(kiln_session_set_input(s, i, info.dtype, a.data(), static_cast<size_t>(a.nbytes())),
              KILN_OK)
        << kiln_last_error_message();
  }
  EXPECT_EQ(kiln_session_run(s), KILN_OK) << kiln_last_error_message();
  std::map<std::string, NDArray> out;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const PlanBuffer& b = p.buffer(p.outputs[i]);
    const void* d;
    size_t n;
    EXPECT_EQ(kiln_session_output(s, i, &d, &n), KILN_OK);
    NDArray arr(b.dtype, b.shape);
    EXPECT_EQ(static_cast<int64_t>(n), arr.nbytes());
    std::memcpy(arr.data(), d, n);
    out.emplace(b.name, std::move(arr));
  }
  kiln_session_release(s);
  EXPECT_EQ(kiln_model_release(m), KILN_OK);
  return out;
}

TEST(RoundTrip, RandomGraphsThroughTheCRuntime) {
  for (int seed = 0; seed < 500; ++seed) {
    Graph g;
    testing::RandomGraph rg(g, 1000 + static_cast<uint64_t>(seed));
    rg.build();
    auto inputs = testing::random_inputs(g, static_cast<uint64_t>(seed));
    Artifacts a = compile_package(g);
    const Plan& p = a.plan;
    auto ref = interpret(p, g, inputs);
    auto jit = JitProgram(p, host()).run(g, inputs);
    auto got = run_package(a.package, p, inputs, seed % 2 ? 2 : 1);
    for (const auto& [name, arr] : ref) {
      ASSERT_TRUE(got.count(name)) << "seed " << seed;
      ASSERT_TRUE(testing::arrays_close(arr, got.at(name)))
          << "seed " << seed << " " << name << " vs interpreter (ops " << rg.trace << ")";
      ASSERT_EQ(got.at(name).bytes(), jit.at(name).bytes())
          << "seed " << seed << " " << name << " differs from the JIT";
    }
  }
}

TEST(RoundTrip, PackagesAreReproducible) {
  for (int seed = 0; seed < 20; ++seed) {
    std::vector<uint8_t> a, b;
    for (auto* out : {&a, &b}) {
      Graph g;
      testing::RandomGraph rg(g, 7000 + static_cast<uint64_t>(seed));
      rg.build();
      *out = compile_package(g).package;
    }
    ASSERT_EQ(a, b) << "seed " << seed;
  }
}

}  // namespace
}  // namespace kiln
