// kiln_model_load_static: a package whose kernels are linked into the program (--emit
// static-lib) runs exactly like the shared-object package of the same model, and every
// mismatch between package, loader and entry table is refused with a message.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "convnet_static.h"
#include "digits_static.h"
#include "kiln/kiln.h"
#include "tests/runtime/package_files.h"

namespace {

std::vector<std::vector<uint8_t>> run(kiln_model* m) {
  kiln_session* s = nullptr;
  EXPECT_EQ(kiln_session_create(m, nullptr, &s), KILN_OK) << kiln_last_error_message();
  size_t n_in = 0, n_out = 0;
  kiln_model_input_count(m, &n_in);
  kiln_model_output_count(m, &n_out);
  for (size_t i = 0; i < n_in; ++i) {
    kiln_tensor_info t;
    t.struct_size = sizeof t;
    kiln_model_input_info(m, i, &t);
    std::vector<float> x(t.size_bytes / sizeof(float));
    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>((k * 37) % 11) / 11.0f - 0.5f;
    EXPECT_EQ(kiln_session_set_input(s, i, t.dtype, x.data(), t.size_bytes), KILN_OK);
  }
  EXPECT_EQ(kiln_session_run(s), KILN_OK) << kiln_last_error_message();
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < n_out; ++i) {
    const void* d;
    size_t size;
    kiln_session_output(s, i, &d, &size);
    out.emplace_back(static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + size);
  }
  kiln_session_release(s);
  return out;
}

TEST(StaticLoad, LinkedKernelsRunLikeThePackagedOnes) {
  kiln_model* linked = nullptr;
  ASSERT_EQ(kiln_model_load_static(convnet_static_package,
                                   static_cast<size_t>(convnet_static_package_size),
                                   &convnet_static_kernels, nullptr, &linked),
            KILN_OK)
      << kiln_last_error_message();
  kiln_model* packaged = nullptr;
  ASSERT_EQ(
      kiln_model_load_file(kiln::testing::package_path("convnet").c_str(), nullptr, &packaged),
      KILN_OK);
  EXPECT_EQ(run(linked), run(packaged));  // bit for bit: the same kernels
  EXPECT_EQ(kiln_model_release(linked), KILN_OK);
  EXPECT_EQ(kiln_model_release(packaged), KILN_OK);
}

TEST(StaticLoad, MismatchesAreRefused) {
  kiln_model* m = nullptr;
  EXPECT_EQ(kiln_model_load_static(convnet_static_package,
                                   static_cast<size_t>(convnet_static_package_size), nullptr,
                                   nullptr, &m),
            KILN_INVALID_ARGUMENT);
  // A static package through the other loader.
  EXPECT_EQ(kiln_model_load_memory(convnet_static_package,
                                   static_cast<size_t>(convnet_static_package_size), nullptr, &m),
            KILN_INVALID_PACKAGE);
  EXPECT_NE(std::strstr(kiln_last_error_message(), "kiln_model_load_static"), nullptr)
      << kiln_last_error_message();
  // Another model's kernels.
  EXPECT_EQ(kiln_model_load_static(convnet_static_package,
                                   static_cast<size_t>(convnet_static_package_size),
                                   &digits_static_kernels, nullptr, &m),
            KILN_INVALID_PACKAGE);
  EXPECT_NE(std::strstr(kiln_last_error_message(), "belong to another package"), nullptr)
      << kiln_last_error_message();
  // Something that is not an entry table.
  static const uint32_t junk[8] = {1, 2, 3, 4};
  EXPECT_EQ(
      kiln_model_load_static(convnet_static_package,
                             static_cast<size_t>(convnet_static_package_size), junk, nullptr, &m),
      KILN_INVALID_PACKAGE);
  // A package with its own code through the static loader.
  std::vector<uint8_t> plain = kiln::testing::read_bytes(kiln::testing::package_path("convnet"));
  EXPECT_EQ(
      kiln_model_load_static(plain.data(), plain.size(), &convnet_static_kernels, nullptr, &m),
      KILN_INVALID_PACKAGE);
  EXPECT_EQ(m, nullptr);
}

}  // namespace
