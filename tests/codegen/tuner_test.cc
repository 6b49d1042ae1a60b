// The tuner (--beam) and its cache (--tuning-cache): searched choices are valid, correct and
// stored; a second tuning from the cache reproduces them without timing anything; the cache file
// round-trips and rejects what it cannot parse.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/jit/jit.h"
#include "compiler/jit/kernel_timer.h"
#include "compiler/opt/choose_opts.h"
#include "compiler/opt/tuning_cache.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/linalg.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

const TargetInfo& host() {
  return TargetInfo::host();
}

TEST(TuningCache, OptsRoundTripAndBadLinesAreNamed) {
  std::vector<Opt> opts = {{OptKind::Upcast, 0, 4},
                           {OptKind::Upcast, 1, 16},
                           {OptKind::Unroll, 2, 8},
                           {OptKind::Parallel, 0, 16}};
  EXPECT_EQ(parse_opts(format_opts(opts)), opts);
  EXPECT_TRUE(parse_opts("-").empty());
  EXPECT_THROW(parse_opts("UPCAST(r0;4)"), Error);
  EXPECT_THROW(parse_opts("SPIN(r0,4)"), Error);

  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / "kiln_tuning_cache_test.txt";
  TuningCache c;
  c.put("abc x86", opts);
  c.put("def x86", {});
  c.save(p.string());
  TuningCache back = TuningCache::load(p.string());
  EXPECT_EQ(back.size(), 2u);
  EXPECT_EQ(*back.find("abc x86"), opts);
  EXPECT_TRUE(back.find("def x86")->empty());
  EXPECT_FALSE(back.find("ghi x86").has_value());
  {
    std::ofstream f(p, std::ios::app);
    f << "no tab here\n";
  }
  try {
    TuningCache::load(p.string());
    FAIL() << "a corrupt cache loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 4: no tab"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(p);
    f << "something else\n";
  }
  EXPECT_THROW(TuningCache::load(p.string()), Error);
  fs::remove(p);
  EXPECT_EQ(TuningCache::load(p.string()).size(), 0u);  // missing: empty
}

TEST(Tuner, BeamChoicesAreCorrectCachedAndReused) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {64, 96});
  Tensor b = Tensor::input(g, "b", dtypes::float32, {96, 128});
  g.add_output("y", matmul(a, b).maximum(0.0).uop());
  Plan p = plan_graph(g, {});
  TuningCache cache;
  TuneStats st;
  CandidateTimer timer = jit_candidate_timer(host());
  auto tuned = optimize_programs(p, host(), {.beam = 2, .cache = &cache, .timer = &timer}, &st);
  EXPECT_EQ(st.kernels, 1);
  EXPECT_EQ(st.searched, 1);
  EXPECT_GE(st.candidates, 5);
  ASSERT_EQ(tuned.size(), 1u);
  EXPECT_EQ(cache.size(), 1u);
  std::map<std::string, std::vector<Opt>> chosen = {{p.programs[0].name, tuned[0].opts}};

  // The tuned program computes what the interpreter does.
  auto inputs = testing::random_inputs(g, 3);
  auto ref = interpret(p, g, inputs);
  auto got = JitProgram(p, host(), {.forced = &chosen}).run(g, inputs);
  EXPECT_TRUE(testing::arrays_close(ref.at("y"), got.at("y")));

  // From the cache: the same choice, nothing timed.
  TuneStats again;
  auto cached = optimize_programs(p, host(), {.cache = &cache}, &again);
  EXPECT_EQ(again.from_cache, 1);
  EXPECT_EQ(again.searched, 0);
  EXPECT_EQ(again.candidates, 0);
  EXPECT_EQ(cached[0].opts, tuned[0].opts);
}

TEST(Tuner, BeamRefusesACrossTarget) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {16, 16});
  g.add_output("y", matmul(a, a).uop());
  Plan p = plan_graph(g, {});
  TargetInfo arm = TargetInfo::create({"aarch64-linux-gnu", "generic"});
  CandidateTimer timer = jit_candidate_timer(host());
  try {
    optimize_programs(p, arm, {.beam = 2, .timer = &timer});
    FAIL() << "beam search for another target";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option(), Option::Beam);
  }
  // The cache alone is fine for any target (nothing to time): the heuristics fill the misses.
  TuningCache empty;
  TuneStats st;
  EXPECT_EQ(optimize_programs(p, arm, {.cache = &empty}, &st).size(), 1u);
  EXPECT_EQ(st.kernels, 1);
  EXPECT_EQ(st.from_cache, 0);
}

}  // namespace
}  // namespace kiln
