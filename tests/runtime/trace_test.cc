// Launch labels, traces and the version call: what `kiln-run --info` and `--trace` and the Python
// module read (also run under ThreadSanitizer: a traced run stays concurrent).
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/runtime/package_files.h"

namespace {

struct Model {
  kiln_model* m = nullptr;
  Model() {
    EXPECT_EQ(kiln_model_load_file(kiln::testing::package_path("convnet").c_str(), nullptr, &m),
              KILN_OK)
        << kiln_last_error_message();
  }
  ~Model() { kiln_model_release(m); }
};

kiln_session* traced_session(kiln_model* m, size_t threads) {
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.num_threads = threads;
  o.trace = 1;
  kiln_session* s = nullptr;
  EXPECT_EQ(kiln_session_create(m, &o, &s), KILN_OK) << kiln_last_error_message();
  std::vector<float> img(2 * 3 * 32 * 32, 0.25f);
  EXPECT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4), KILN_OK);
  return s;
}

TEST(Trace, LaunchesAreLabelledWithTheModelNodesTheyFuse) {
  Model model;
  size_t n = 0;
  ASSERT_EQ(kiln_model_launch_count(model.m, &n), KILN_OK);
  ASSERT_EQ(n, 11u);  // samples/kg/convnet.kg: see `kilnc plan`
  std::string all;
  size_t last_group = 0;
  for (size_t l = 0; l < n; ++l) {
    kiln_launch_info li;
    li.struct_size = sizeof li;
    ASSERT_EQ(kiln_model_launch_info(model.m, l, &li), KILN_OK);
    ASSERT_NE(li.label, nullptr);
    EXPECT_GE(li.group, last_group) << "launches are in schedule order";
    EXPECT_GE(li.num_tasks, 1u);
    last_group = li.group;
    all += std::string(li.label) + " ";
  }
  // The .kg statements (c1 = conv(...), r1 = relu(c1), ...) name the launches that compute them.
  for (const char* node : {"c1", "r1", "p1", "c2", "logits", "probs", "features"})
    EXPECT_NE(all.find(node), std::string::npos) << node << " names no launch: " << all;
  EXPECT_NE(all.find("c1+r1+p1"), std::string::npos) << "fused nodes are joined in model order";
  kiln_launch_info li;
  li.struct_size = sizeof li;
  EXPECT_EQ(kiln_model_launch_info(model.m, n, &li), KILN_INVALID_ARGUMENT);
  li.struct_size = 8;
  EXPECT_EQ(kiln_model_launch_info(model.m, 0, &li), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_launch_count(model.m, nullptr), KILN_INVALID_ARGUMENT);
}

TEST(Trace, EveryLaunchIsTracedAndGroupsRunInOrder) {
  Model model;
  kiln_session* s = traced_session(model.m, 2);
  size_t count = 99;
  ASSERT_EQ(kiln_session_trace(s, nullptr, 0, &count), KILN_OK);
  EXPECT_EQ(count, 0u) << "no run, no events";
  for (int run = 0; run < 3; ++run) ASSERT_EQ(kiln_session_run(s), KILN_OK);
  ASSERT_EQ(kiln_session_trace(s, nullptr, 0, &count), KILN_OK);
  std::vector<kiln_trace_event> ev(count);
  size_t again = 0;
  ASSERT_EQ(kiln_session_trace(s, ev.data(), ev.size(), &again), KILN_OK);
  EXPECT_EQ(again, count);
  size_t launches = 0;
  kiln_model_launch_count(model.m, &launches);
  std::map<size_t, std::pair<double, double>> group_span;  // group -> [first start, last end]
  std::vector<int> seen(launches, 0);
  for (const kiln_trace_event& e : ev) {
    ASSERT_LT(e.launch, launches);
    EXPECT_LT(e.thread, 2u);
    EXPECT_LE(0.0, e.start_ms);
    EXPECT_LE(e.start_ms, e.end_ms);
    ++seen[e.launch];
    kiln_launch_info li;
    li.struct_size = sizeof li;
    ASSERT_EQ(kiln_model_launch_info(model.m, e.launch, &li), KILN_OK);
    EXPECT_LE(static_cast<size_t>(seen[e.launch]), li.num_tasks) << "a thread per task at most";
    auto [it, fresh] = group_span.emplace(li.group, std::make_pair(e.start_ms, e.end_ms));
    if (!fresh) {
      it->second.first = std::min(it->second.first, e.start_ms);
      it->second.second = std::max(it->second.second, e.end_ms);
    }
  }
  for (size_t l = 0; l < launches; ++l) EXPECT_GE(seen[l], 1) << "launch " << l << " untraced";
  // A group starts once the one before it has finished (that is the schedule's promise).
  for (auto it = group_span.begin(); std::next(it) != group_span.end(); ++it)
    EXPECT_LE(it->second.second, std::next(it)->second.first)
        << "group " << std::next(it)->first << " started before group " << it->first << " ended";
  // A short buffer gets the first events and the full count.
  if (count > 1) {
    std::vector<kiln_trace_event> one(1);
    ASSERT_EQ(kiln_session_trace(s, one.data(), 1, &again), KILN_OK);
    EXPECT_EQ(again, count);
    EXPECT_EQ(one[0].launch, ev[0].launch);
  }
  EXPECT_EQ(kiln_session_trace(s, nullptr, 1, &again), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_trace(s, ev.data(), ev.size(), nullptr), KILN_INVALID_ARGUMENT);
  kiln_session_release(s);
}

TEST(Trace, SessionsWithoutTraceSayTracingIsOffAndOldOptionStructsStillWork) {
  Model model;
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.struct_size = offsetof(kiln_session_options, trace);  // a caller built before `trace`
  o.trace = 1;                                            // (beyond its struct: ignored)
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(model.m, &o, &s), KILN_OK) << kiln_last_error_message();
  size_t count = 0;
  EXPECT_EQ(kiln_session_trace(s, nullptr, 0, &count), KILN_FAILED_PRECONDITION);
  kiln_session_release(s);
  o.struct_size = offsetof(kiln_session_options, profile);  // smaller than any version
  EXPECT_EQ(kiln_session_create(model.m, &o, &s), KILN_INVALID_ARGUMENT);
}

TEST(Version, TheLibrarySaysItsVersionAndTheFormatItReads) {
  unsigned major = 0, minor = 0;
  EXPECT_STREQ(kiln_version(&major, &minor), KILN_VERSION_STRING);
  EXPECT_EQ(major, 2u);
  EXPECT_GE(minor, 1u);  // launch labels
  EXPECT_STREQ(kiln_version(nullptr, nullptr), KILN_VERSION_STRING);
}

}  // namespace
