#include "compiler/support/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

std::string sha(const std::string& s) {
  Sha256 h;
  h.update(s);
  return Sha256::hex(h.finish());
}

TEST(Sha256, MatchesFips180Vectors) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalUpdatesEqualOneShot) {
  std::string s(1000, 'x');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 7);
  Sha256 h;
  for (size_t i = 0; i < s.size(); i += 13)
    h.update(s.data() + i, std::min<size_t>(13, s.size() - i));
  EXPECT_EQ(Sha256::hex(h.finish()), sha(s));
}

}  // namespace
}  // namespace kiln
