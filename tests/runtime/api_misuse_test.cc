// The C API under misuse: every wrong call returns a status and a message naming the problem,
// never a crash (also run under AddressSanitizer and UndefinedBehaviorSanitizer).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/runtime/package_files.h"

namespace {

std::string msg() {
  return kiln_last_error_message();
}

class Api : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(
        kiln_model_load_file(kiln::testing::package_path("convnet").c_str(), nullptr, &model_),
        KILN_OK)
        << msg();
  }
  void TearDown() override { EXPECT_EQ(kiln_model_release(model_), KILN_OK) << msg(); }
  kiln_model* model_ = nullptr;
};

TEST_F(Api, NullPointersAreInvalidArguments) {
  kiln_model* m = nullptr;
  EXPECT_EQ(kiln_model_load_file(nullptr, nullptr, &m), KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("path is NULL"), std::string::npos) << msg();
  EXPECT_EQ(kiln_model_load_file("x.kiln", nullptr, nullptr), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_load_memory(nullptr, 10, nullptr, &m), KILN_INVALID_ARGUMENT);
  size_t n;
  EXPECT_EQ(kiln_model_input_count(nullptr, &n), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_input_count(model_, nullptr), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_input_info(model_, 0, nullptr), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_create(nullptr, nullptr, nullptr), KILN_INVALID_ARGUMENT);
  kiln_session* s = nullptr;
  EXPECT_EQ(kiln_session_create(nullptr, nullptr, &s), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(kiln_session_run(nullptr), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_set_input(nullptr, 0, KILN_DTYPE_FLOAT32, "x", 1), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_release(nullptr), KILN_OK);
  EXPECT_EQ(kiln_session_release(nullptr), KILN_OK);
}

TEST_F(Api, MissingFilesAndGarbage) {
  kiln_model* m = nullptr;
  EXPECT_EQ(kiln_model_load_file("/nonexistent/model.kiln", nullptr, &m), KILN_NOT_FOUND);
  EXPECT_NE(msg().find("/nonexistent/model.kiln"), std::string::npos) << msg();
  EXPECT_EQ(kiln_model_load_file("/", nullptr, &m), KILN_IO_ERROR);
  const char junk[64] = "this is not a kiln package at all, not even close";
  EXPECT_EQ(kiln_model_load_memory(junk, sizeof junk, nullptr, &m), KILN_INVALID_PACKAGE);
  EXPECT_NE(msg().find("file identifier"), std::string::npos) << msg();
  EXPECT_EQ(m, nullptr);
}

TEST_F(Api, WrongIndexSizeAndDtype) {
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(model_, nullptr, &s), KILN_OK) << msg();
  std::vector<float> img(2 * 3 * 32 * 32, 0.5f);
  EXPECT_EQ(kiln_session_set_input(s, 7, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4),
            KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("index 7 out of range"), std::string::npos) << msg();
  EXPECT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, img.data(), 100),
            KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("'image' has 24576 bytes, given 100"), std::string::npos) << msg();
  EXPECT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_INT32, img.data(), img.size() * 4),
            KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("'image' is float32, given int32"), std::string::npos) << msg();
  EXPECT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, nullptr, img.size() * 4),
            KILN_INVALID_ARGUMENT);
  std::vector<float> out(20);
  EXPECT_EQ(kiln_session_bind_output(s, 5, KILN_DTYPE_FLOAT32, out.data(), 80),
            KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_bind_output(s, 0, KILN_DTYPE_FLOAT32, out.data(), 79),
            KILN_INVALID_ARGUMENT);
  kiln_tensor_info info;
  info.struct_size = 3;
  EXPECT_EQ(kiln_model_input_info(model_, 0, &info), KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("struct_size"), std::string::npos) << msg();
  size_t idx;
  EXPECT_EQ(kiln_model_find_input(model_, "nope", &idx), KILN_NOT_FOUND);
  EXPECT_EQ(kiln_session_release(s), KILN_OK);
}

TEST_F(Api, OutputsBeforeARunAndRunsWithoutInputs) {
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(model_, nullptr, &s), KILN_OK) << msg();
  const void* data;
  size_t size;
  EXPECT_EQ(kiln_session_output(s, 0, &data, &size), KILN_FAILED_PRECONDITION);
  EXPECT_NE(msg().find("no run has completed"), std::string::npos) << msg();
  EXPECT_EQ(kiln_session_run(s), KILN_FAILED_PRECONDITION);
  EXPECT_NE(msg().find("input 'image' is not set"), std::string::npos) << msg();
  size_t launches;
  EXPECT_EQ(kiln_session_launch_count(s, &launches), KILN_OK);
  size_t k;
  uint64_t runs;
  double ms;
  EXPECT_EQ(kiln_session_launch_profile(s, 0, &k, &runs, &ms), KILN_FAILED_PRECONDITION);
  EXPECT_EQ(kiln_session_release(s), KILN_OK);
}

TEST_F(Api, AModelWithLiveSessionsCannotBeReleased) {
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(model_, nullptr, &s), KILN_OK) << msg();
  EXPECT_EQ(kiln_model_release(model_), KILN_FAILED_PRECONDITION);
  EXPECT_NE(msg().find("1 session(s) still use this model"), std::string::npos) << msg();
  // The session still works: the model was not released.
  std::vector<float> img(2 * 3 * 32 * 32, 0.25f);
  ASSERT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4), KILN_OK);
  EXPECT_EQ(kiln_session_run(s), KILN_OK) << msg();
  EXPECT_EQ(kiln_session_release(s), KILN_OK);
}

TEST_F(Api, CallerArenaMustBeLargeEnoughAndAligned) {
  size_t size, align;
  ASSERT_EQ(kiln_model_arena_requirements(model_, &size, &align), KILN_OK);
  EXPECT_EQ(align, 64u);
  std::vector<uint8_t> mem(size + 128);
  uint8_t* aligned = mem.data() + (64 - reinterpret_cast<uintptr_t>(mem.data()) % 64) % 64;
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.arena = aligned + 1;
  o.arena_size = size;
  kiln_session* s = nullptr;
  EXPECT_EQ(kiln_session_create(model_, &o, &s), KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("not aligned"), std::string::npos) << msg();
  o.arena = aligned;
  o.arena_size = size - 1;
  EXPECT_EQ(kiln_session_create(model_, &o, &s), KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("the model needs"), std::string::npos) << msg();
  o.arena_size = size;
  ASSERT_EQ(kiln_session_create(model_, &o, &s), KILN_OK) << msg();
  std::vector<float> img(2 * 3 * 32 * 32, 0.25f);
  std::vector<float> probs(20);
  ASSERT_EQ(kiln_session_bind_input(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4), KILN_OK);
  ASSERT_EQ(kiln_session_bind_output(s, 0, KILN_DTYPE_FLOAT32, probs.data(), probs.size() * 4),
            KILN_OK);
  ASSERT_EQ(kiln_session_run(s), KILN_OK) << msg();
  const void* data;
  size_t n;
  ASSERT_EQ(kiln_session_output(s, 0, &data, &n), KILN_OK);
  EXPECT_EQ(data, probs.data());  // zero-copy: written where it was bound
  float sum = 0;
  for (int i = 0; i < 10; ++i) sum += probs[static_cast<size_t>(i)];
  EXPECT_NEAR(sum, 1.0f, 1e-5f);  // a softmax
  EXPECT_EQ(kiln_session_release(s), KILN_OK);
}

TEST(ApiStatus, NamesAndDtypes) {
  EXPECT_STREQ(kiln_status_name(KILN_OK), "KILN_OK");
  EXPECT_STREQ(kiln_status_name(KILN_MISSING_CPU_FEATURE), "KILN_MISSING_CPU_FEATURE");
  EXPECT_STREQ(kiln_status_name(static_cast<kiln_status>(99)), "KILN_UNKNOWN_STATUS");
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_FLOAT16), 2u);
  EXPECT_EQ(kiln_dtype_size(static_cast<kiln_dtype>(77)), 0u);
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_BFLOAT16), "bfloat16");
}

// Hole 7 of #13: a thread count whose worker array would overflow is refused, not wrapped.
TEST_F(Api, ThreadCountsAreCapped) {
  kiln_session_options o;
  kiln_session_options_init(&o);
  kiln_session* s = nullptr;
  for (size_t n : {static_cast<size_t>(1025), SIZE_MAX, SIZE_MAX / sizeof(void*) + 2}) {
    o.num_threads = n;
    EXPECT_EQ(kiln_session_create(model_, &o, &s), KILN_INVALID_ARGUMENT) << n;
    EXPECT_NE(msg().find("at most 1024"), std::string::npos) << msg();
    EXPECT_EQ(s, nullptr);
  }
  o.num_threads = 4;
  ASSERT_EQ(kiln_session_create(model_, &o, &s), KILN_OK) << msg();
  kiln_session_release(s);
}

// Bound memory is aligned to the element size: kernels load and store whole elements.
TEST_F(Api, MisalignedBindingsAreRefused) {
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(model_, nullptr, &s), KILN_OK) << msg();
  kiln_tensor_info info;
  info.struct_size = sizeof info;
  ASSERT_EQ(kiln_model_input_info(model_, 0, &info), KILN_OK);
  std::vector<uint8_t> buf(info.size_bytes + 8);
  uint8_t* aligned = buf.data() + (8 - reinterpret_cast<uintptr_t>(buf.data()) % 8) % 8;
  EXPECT_EQ(kiln_session_bind_input(s, 0, info.dtype, aligned + 1, info.size_bytes),
            KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("not aligned to 4 bytes"), std::string::npos) << msg();
  EXPECT_EQ(kiln_session_bind_input(s, 0, info.dtype, aligned, info.size_bytes), KILN_OK) << msg();
  ASSERT_EQ(kiln_model_output_info(model_, 0, &info), KILN_OK);
  std::vector<uint8_t> out(info.size_bytes + 8);
  uint8_t* out_aligned = out.data() + (8 - reinterpret_cast<uintptr_t>(out.data()) % 8) % 8;
  EXPECT_EQ(kiln_session_bind_output(s, 0, info.dtype, out_aligned + 2, info.size_bytes),
            KILN_INVALID_ARGUMENT);
  kiln_session_release(s);
}

}  // namespace

// The symbolic-shape calls (#14) on a package of one shape: they work as the fixed-shape ones
// (the shape must be the model's) and refuse NULLs, wrong ranks and dims by name.
TEST_F(Api, ShapedInputsAndOutputShapesOnAStaticPackage) {
  size_t n = 99;
  EXPECT_EQ(kiln_model_symbol_count(model_, &n), KILN_OK);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(kiln_model_symbol_count(nullptr, &n), KILN_INVALID_ARGUMENT);
  const char* name;
  int64_t lo, hi;
  EXPECT_EQ(kiln_model_symbol_info(model_, 0, &name, &lo, &hi), KILN_INVALID_ARGUMENT);
  kiln_tensor_info info;
  info.struct_size = sizeof info;
  ASSERT_EQ(kiln_model_input_info(model_, 0, &info), KILN_OK);
  EXPECT_EQ(info.axis_symbols, nullptr);
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(model_, nullptr, &s), KILN_OK) << msg();
  std::vector<float> img(2 * 3 * 32 * 32, 0.5f);
  const int64_t shape[4] = {2, 3, 32, 32}, wrong[4] = {2, 3, 32, 31};
  EXPECT_EQ(kiln_session_set_input_shaped(nullptr, 0, KILN_DTYPE_FLOAT32, img.data(),
                                          img.size() * 4, 4, shape),
            KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_set_input_shaped(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4, 4,
                                          nullptr),
            KILN_INVALID_ARGUMENT);
  EXPECT_EQ(
      kiln_session_set_input_shaped(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4, 3, shape),
      KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("'image' has rank 4, given 3"), std::string::npos) << msg();
  EXPECT_EQ(
      kiln_session_set_input_shaped(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4, 4, wrong),
      KILN_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("'image' axis 3 is 31, the model fixes it to 32"), std::string::npos)
      << msg();
  size_t rank;
  const int64_t* out_shape;
  EXPECT_EQ(kiln_session_output_shape(s, 0, &rank, &out_shape), KILN_FAILED_PRECONDITION);
  ASSERT_EQ(
      kiln_session_set_input_shaped(s, 0, KILN_DTYPE_FLOAT32, img.data(), img.size() * 4, 4, shape),
      KILN_OK)
      << msg();
  ASSERT_EQ(kiln_session_run(s), KILN_OK) << msg();
  ASSERT_EQ(kiln_session_output_shape(s, 0, &rank, &out_shape), KILN_OK) << msg();
  kiln_tensor_info out;
  out.struct_size = sizeof out;
  ASSERT_EQ(kiln_model_output_info(model_, 0, &out), KILN_OK);
  ASSERT_EQ(rank, out.rank);
  for (size_t i = 0; i < rank; ++i) EXPECT_EQ(out_shape[i], out.shape[i]);
  EXPECT_EQ(kiln_session_output_shape(s, 0, nullptr, &out_shape), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_output_shape(s, 9, &rank, &out_shape), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_release(s), KILN_OK);
}
