// Concurrency soak: 64 sessions on one model, each with its own two-thread pool, run
// concurrently from 64 threads; every run's outputs must be bit-identical to a single-threaded
// reference. KILN_SOAK_RUNS sets the total number of runs (default 640, what the suite runs
// under ThreadSanitizer; tools/scripts/soak.sh runs 10,000).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "tests/runtime/package_files.h"

namespace {

std::vector<std::vector<uint8_t>> outputs_of(kiln_model* m, kiln_session* s) {
  size_t n = 0;
  kiln_model_output_count(m, &n);
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < n; ++i) {
    const void* d;
    size_t bytes;
    if (kiln_session_output(s, i, &d, &bytes) != KILN_OK) return {};
    out.emplace_back(static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + bytes);
  }
  return out;
}

std::vector<uint8_t> input_for(kiln_model* m, int seed) {
  kiln_tensor_info info;
  info.struct_size = sizeof info;
  kiln_model_input_info(m, 0, &info);
  std::vector<float> x(info.size_bytes / 4);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 2654435761u + static_cast<size_t>(seed) * 97u) % 1000) / 500.0f -
           1.0f;
  std::vector<uint8_t> b(info.size_bytes);
  std::memcpy(b.data(), x.data(), b.size());
  return b;
}

TEST(Soak, SixtyFourSessionsTwoThreadsEachBitIdentical) {
  const int sessions = 64;
  int runs = std::getenv("KILN_SOAK_RUNS") ? std::atoi(std::getenv("KILN_SOAK_RUNS")) : 640;
  kiln_model* m = nullptr;
  ASSERT_EQ(kiln_model_load_file(kiln::testing::package_path("convnet").c_str(), nullptr, &m),
            KILN_OK)
      << kiln_last_error_message();
  // References: one thread, one run per input (8 distinct inputs).
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::vector<std::vector<uint8_t>>> want;
  for (int k = 0; k < 8; ++k) {
    inputs.push_back(input_for(m, k));
    kiln_session* s = nullptr;
    ASSERT_EQ(kiln_session_create(m, nullptr, &s), KILN_OK);
    kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, inputs.back().data(), inputs.back().size());
    ASSERT_EQ(kiln_session_run(s), KILN_OK);
    want.push_back(outputs_of(m, s));
    kiln_session_release(s);
  }
  std::atomic<int> next{0}, mismatches{0}, done{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < sessions; ++t)
    threads.emplace_back([&] {
      kiln_session_options o;
      kiln_session_options_init(&o);
      o.num_threads = 2;
      kiln_session* s = nullptr;
      if (kiln_session_create(m, &o, &s) != KILN_OK) {
        ++failures;
        return;
      }
      for (int r; (r = next++) < runs;) {
        size_t k = static_cast<size_t>(r) % inputs.size();
        kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, inputs[k].data(), inputs[k].size());
        if (kiln_session_run(s) != KILN_OK) {
          ++failures;
          continue;
        }
        mismatches += outputs_of(m, s) != want[k];
        ++done;
      }
      kiln_session_release(s);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(done.load(), runs);
  std::printf("soak: %d runs on %d sessions x 2 threads, %d differing outputs\n", done.load(),
              sessions, mismatches.load());
  EXPECT_EQ(kiln_model_release(m), KILN_OK);
}

}  // namespace
