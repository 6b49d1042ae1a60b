// Bad packages: real packages with bytes flipped or cut short at >= 1,000 seeded positions.
// Every attempt to load one must return a non-OK status with a message: no crash, no hang. The
// suite runs this under AddressSanitizer and UndefinedBehaviorSanitizer. With checksums off, the
// structural and semantic verification alone must still never crash. And 10,000 packages whose
// metadata and weights are edited with every checksum recomputed (what a crafted package does)
// must be refused, or load, create a session with two threads and run without a memory error.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/runtime/checksums.h"
#include "tests/runtime/package_files.h"

namespace {

// A 64-byte aligned copy (kiln_model_load_memory uses aligned bytes in place).
struct Aligned {
  explicit Aligned(const std::vector<uint8_t>& b) : store(b.size() + 64) {
    data = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) % 64;
    std::memcpy(data, b.data(), b.size());
    size = b.size();
  }
  std::vector<uint8_t> store;
  uint8_t* data;
  size_t size;
};

std::vector<uint8_t> mutate(const std::vector<uint8_t>& in, std::mt19937_64& rng,
                            std::string& how) {
  std::vector<uint8_t> b = in;
  auto pos = [&] { return std::uniform_int_distribution<size_t>(0, b.size() - 1)(rng); };
  switch (rng() % 4) {
    case 0: {
      size_t p = pos();
      b[p] ^= static_cast<uint8_t>(1 + rng() % 255);
      how = "flip byte " + std::to_string(p);
      break;
    }
    case 1: {
      int n = 2 + static_cast<int>(rng() % 7);
      how = "flip bytes";
      for (int i = 0; i < n; ++i) {
        size_t p = pos();
        b[p] = static_cast<uint8_t>(rng());
        how += " " + std::to_string(p);
      }
      break;
    }
    case 2: {
      size_t n = std::uniform_int_distribution<size_t>(0, b.size() - 1)(rng);
      b.resize(n);
      how = "truncate to " + std::to_string(n);
      break;
    }
    default: {
      // A plausible-looking 32-bit value (offsets, counts) at an aligned position.
      size_t p = pos() & ~size_t{3};
      if (p + 4 > b.size()) p = 0;
      uint32_t v = static_cast<uint32_t>(rng() % 3 == 0 ? rng() : rng() % 4096);
      std::memcpy(&b[p], &v, 4);
      how = "u32 at " + std::to_string(p) + " = " + std::to_string(v);
      if (b == in) b[p] ^= 1;
      break;
    }
  }
  return b;
}

void fuzz(const std::string& name, int seeds) {
  std::vector<uint8_t> good = kiln::testing::read_bytes(kiln::testing::package_path(name));
  ASSERT_GT(good.size(), 64u) << name;
  {
    Aligned a(good);
    kiln_model* m = nullptr;
    ASSERT_EQ(kiln_model_load_memory(a.data, a.size, nullptr, &m), KILN_OK)
        << kiln_last_error_message();
    ASSERT_EQ(kiln_model_release(m), KILN_OK);
  }
  int loaded_without_checksums = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed) * 7919 + name.size());
    std::string how;
    std::vector<uint8_t> bad = mutate(good, rng, how);
    Aligned a(bad);
    kiln_model* m = nullptr;
    kiln_status st = kiln_model_load_memory(a.data, a.size, nullptr, &m);
    EXPECT_NE(st, KILN_OK) << name << " seed " << seed << ": " << how << " loaded";
    EXPECT_NE(std::string(kiln_last_error_message()), "") << name << " seed " << seed;
    if (st == KILN_OK) kiln_model_release(m);
    // Without checksums the other checks run on corrupt data: they may accept harmless changes
    // (a weight's value) but must never crash.
    kiln_model_options o;
    kiln_model_options_init(&o);
    o.skip_checksums = 1;
    Aligned b(bad);
    st = kiln_model_load_memory(b.data, b.size, &o, &m);
    if (st == KILN_OK) {
      ++loaded_without_checksums;
      kiln_model_release(m);
    }
  }
  std::printf(
      "%s: %d corrupted packages rejected; without checksums %d of them still passed the other "
      "checks\n",
      name.c_str(), seeds, loaded_without_checksums);
}

TEST(CorruptPackages, SiluAndMul) {
  fuzz("silu_and_mul", 500);
}
TEST(CorruptPackages, ConvNet) {
  fuzz("convnet", 700);
}

TEST(CorruptPackages, EveryTruncationIsRejected) {
  std::vector<uint8_t> good =
      kiln::testing::read_bytes(kiln::testing::package_path("silu_and_mul"));
  for (size_t n = 0; n < good.size(); n += 7) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    Aligned a(cut.empty() ? std::vector<uint8_t>{0} : cut);
    kiln_model* m = nullptr;
    EXPECT_NE(kiln_model_load_memory(a.data, cut.size(), nullptr, &m), KILN_OK)
        << "truncated to " << n;
  }
}

// Edits anywhere but in the code (whose bytes are native instructions: no verifier can say what
// they do — that is what signatures are for), checksums recomputed; whatever loads is run.
TEST(CorruptPackages, TenThousandEditedPackagesRunSafelyOrAreRefused) {
  const char* names[] = {"convnet", "silu_and_mul"};
  int loaded = 0, ran = 0, refused = 0;
  for (int seed = 0; seed < 10000; ++seed) {
    std::vector<uint8_t> good =
        kiln::testing::read_bytes(kiln::testing::package_path(names[seed % 2]));
    uint64_t code = 0, code_size = 0;
    ASSERT_TRUE(kiln::testing::fix_checksums(good, &code, &code_size));
    std::mt19937_64 rng(static_cast<uint64_t>(seed) * 104729 + 17);
    std::string how;
    std::vector<uint8_t> bad;
    for (int tries = 0; tries < 100; ++tries) {
      bad = mutate(good, rng, how);
      bool touches_code = false;
      for (size_t i = code; i < code + code_size && i < bad.size() && !touches_code; ++i)
        touches_code = bad[i] != good[i];
      if (!touches_code) break;
    }
    kiln::testing::fix_checksums(bad);
    Aligned a(bad);
    kiln_model* m = nullptr;
    if (kiln_model_load_memory(a.data, a.size, nullptr, &m) != KILN_OK) {
      ++refused;
      continue;
    }
    ++loaded;
    kiln_session_options o;
    kiln_session_options_init(&o);
    o.num_threads = 2;
    kiln_session* s = nullptr;
    if (kiln_session_create(m, &o, &s) == KILN_OK) {
      size_t n = 0;
      kiln_model_input_count(m, &n);
      for (size_t i = 0; i < n; ++i) {
        kiln_tensor_info info;
        info.struct_size = sizeof info;
        kiln_model_input_info(m, i, &info);
        std::vector<uint8_t> x(info.size_bytes, 0x3f);
        kiln_session_set_input(s, i, info.dtype, x.data(), x.size());
      }
      ran += kiln_session_run(s) == KILN_OK;
      kiln_session_release(s);
    }
    EXPECT_EQ(kiln_model_release(m), KILN_OK);
  }
  std::printf("10000 edited packages (checksums recomputed): %d refused, %d loaded, %d ran\n",
              refused, loaded, ran);
  EXPECT_GT(refused, 1000);  // the edits are mostly structural
}

}  // namespace
