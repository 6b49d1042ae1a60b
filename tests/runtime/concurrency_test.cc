// Threads: one model shared by concurrent sessions (run under ThreadSanitizer in the suite), and
// the same package run with 1, 2 and 3 threads giving identical outputs.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "tests/runtime/package_files.h"

namespace {

std::vector<float> run_once(kiln_model* m, size_t threads, const std::vector<float>& img,
                            int output) {
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.num_threads = threads;
  kiln_session* s = nullptr;
  EXPECT_EQ(kiln_session_create(m, &o, &s), KILN_OK) << kiln_last_error_message();
  EXPECT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4), KILN_OK);
  std::vector<float> out;
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(kiln_session_run(s), KILN_OK) << kiln_last_error_message();
    const void* d;
    size_t n;
    EXPECT_EQ(kiln_session_output(s, static_cast<size_t>(output), &d, &n), KILN_OK);
    std::vector<float> v(n / 4);
    std::memcpy(v.data(), d, n);
    if (r > 0) {
      EXPECT_EQ(v, out) << "run " << r << " differs";
    }
    out = v;
  }
  kiln_session_release(s);
  return out;
}

std::vector<float> image(int seed) {
  std::vector<float> img(2 * 3 * 32 * 32);
  for (size_t i = 0; i < img.size(); ++i)
    img[i] =
        static_cast<float>((i * 2654435761u + static_cast<size_t>(seed) * 40503u) % 1000) / 500.0f -
        1.0f;
  return img;
}

TEST(Concurrency, OneTwoAndThreeThreadsGiveIdenticalOutputs) {
  kiln_model* m = nullptr;
  ASSERT_EQ(kiln_model_load_file(kiln::testing::package_path("convnet").c_str(), nullptr, &m),
            KILN_OK);
  std::vector<float> img = image(1);
  for (int o = 0; o < 2; ++o) {
    std::vector<float> one = run_once(m, 1, img, o);
    EXPECT_EQ(run_once(m, 2, img, o), one);
    EXPECT_EQ(run_once(m, 3, img, o), one);
  }
  EXPECT_EQ(kiln_model_release(m), KILN_OK);
}

TEST(Concurrency, FourSessionsOnOneModelRunConcurrently) {
  kiln_model* m = nullptr;
  ASSERT_EQ(kiln_model_load_file(kiln::testing::package_path("convnet").c_str(), nullptr, &m),
            KILN_OK);
  std::vector<std::vector<float>> want(4);
  for (int t = 0; t < 4; ++t) want[static_cast<size_t>(t)] = run_once(m, 1, image(t), 0);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      kiln_session_options o;
      kiln_session_options_init(&o);
      o.num_threads = 2;  // each session has its own pool too
      kiln_session* s = nullptr;
      if (kiln_session_create(m, &o, &s) != KILN_OK) return;
      std::vector<float> img = image(t);
      kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4);
      bool same = true;
      for (int r = 0; r < 20; ++r) {
        if (kiln_session_run(s) != KILN_OK) same = false;
        const void* d;
        size_t n;
        kiln_session_output(s, 0, &d, &n);
        same = same && std::memcmp(d, want[static_cast<size_t>(t)].data(), n) == 0;
      }
      kiln_session_release(s);
      ok[static_cast<size_t>(t)] = same;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[static_cast<size_t>(t)]) << "session " << t;
  EXPECT_EQ(kiln_model_release(m), KILN_OK);
}

}  // namespace
