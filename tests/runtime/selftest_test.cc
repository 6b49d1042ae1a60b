// The on-device self-test: a package compiled with --embed-selftest passes on the machine that
// compiled it, reports per-output errors, fails (without an error status) when its expectations
// are wrong, and the API rejects misuse. (Also under ASan+UBSan.)
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kiln/kiln.h"
#include "tests/runtime/package_files.h"

namespace {

kiln_selftest_report new_report() {
  kiln_selftest_report r;
  std::memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  return r;
}

TEST(SelfTest, AnEmbeddedSelfTestPassesOnTheCompilingMachine) {
  kiln_model* m = nullptr;
  ASSERT_EQ(
      kiln_model_load_file(kiln::testing::package_path("convnet_selftest").c_str(), nullptr, &m),
      KILN_OK)
      << kiln_last_error_message();
  int has = 0;
  ASSERT_EQ(kiln_model_has_selftest(m, &has), KILN_OK);
  EXPECT_TRUE(has);
  for (size_t threads : {1, 2}) {
    kiln_selftest_report r = new_report();
    ASSERT_EQ(kiln_model_selftest(m, threads, &r), KILN_OK) << kiln_last_error_message();
    EXPECT_TRUE(r.passed);
    EXPECT_EQ(r.num_outputs, 2u);  // convnet.kg has two outputs
    EXPECT_LE(r.output_error[1], r.tolerance);
    EXPECT_LE(r.output_error[0], r.tolerance);
    EXPECT_FLOAT_EQ(static_cast<float>(r.tolerance), 1e-4f);
  }
  EXPECT_EQ(kiln_model_release(m), KILN_OK);  // the self-test's session is gone
}

TEST(SelfTest, WrongExpectationsFailTheTestNotTheCall) {
  std::vector<uint8_t> bytes =
      kiln::testing::read_bytes(kiln::testing::package_path("convnet_selftest"));
  ASSERT_FALSE(bytes.empty());
  // Tampering with the self-test's expectations: flip bytes one at a time until a load without
  // checksums still succeeds but the self-test fails — that byte belongs to the expectations.
  kiln_model* clean = nullptr;
  ASSERT_EQ(kiln_model_load_memory(bytes.data(), bytes.size(), nullptr, &clean), KILN_OK);
  kiln_selftest_report want = new_report();
  ASSERT_EQ(kiln_model_selftest(clean, 1, &want), KILN_OK);
  kiln_model_release(clean);

  kiln_model_options o;
  kiln_model_options_init(&o);
  o.skip_checksums = 1;
  bool failed_test = false;
  for (size_t i = 0; i < bytes.size() && !failed_test; i += 1) {
    std::vector<uint8_t> t = bytes;
    t[i] ^= 0x40;
    kiln_model* m = nullptr;
    if (kiln_model_load_memory(t.data(), t.size(), &o, &m) != KILN_OK) continue;
    int has = 0;
    kiln_model_has_selftest(m, &has);
    kiln_selftest_report r = new_report();
    if (has && kiln_model_selftest(m, 1, &r) == KILN_OK && !r.passed) {
      failed_test = true;
      EXPECT_GT(r.max_error, r.tolerance);
      // With checksums on, the same file is refused: the self-test is covered by the metadata CRC.
      kiln_model* strict = nullptr;
      EXPECT_EQ(kiln_model_load_memory(t.data(), t.size(), nullptr, &strict),
                KILN_CHECKSUM_MISMATCH);
    }
    kiln_model_release(m);
    if (i > 4096 && !failed_test) i += 7;  // the self-test data is near the start; skim the rest
  }
  EXPECT_TRUE(failed_test);
}

TEST(SelfTest, MisuseIsReported) {
  kiln_model* plain = nullptr;
  ASSERT_EQ(kiln_model_load_file(kiln::testing::package_path("convnet").c_str(), nullptr, &plain),
            KILN_OK);
  int has = 1;
  EXPECT_EQ(kiln_model_has_selftest(plain, &has), KILN_OK);
  EXPECT_FALSE(has);
  kiln_selftest_report r = new_report();
  EXPECT_EQ(kiln_model_selftest(plain, 1, &r), KILN_NOT_FOUND);
  EXPECT_NE(std::strstr(kiln_last_error_message(), "--embed-selftest"), nullptr);
  EXPECT_EQ(kiln_model_selftest(plain, 1, nullptr), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_selftest(nullptr, 1, &r), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_has_selftest(plain, nullptr), KILN_INVALID_ARGUMENT);
  r.struct_size = 8;
  EXPECT_EQ(kiln_model_selftest(plain, 1, &r), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_release(plain), KILN_OK);
}

}  // namespace
