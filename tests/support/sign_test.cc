// schema/kiln_sign.c against the standards' own test vectors: SHA-256 and SHA-512 (FIPS 180-4's
// examples), Ed25519 (RFC 8032 section 7.1: TEST 1, 2, 3 and SHA(abc)) — public keys derived,
// signatures reproduced byte for byte and verified — and the ways a verification must fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schema/kiln_sign.h"

namespace {

std::vector<uint8_t> unhex(const std::string& h) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}
std::string hex(const uint8_t* p, size_t n) {
  static const char d[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}
std::string sha512_hex(const std::string& m) {
  kiln_sha512 s;
  kiln_sha512_init(&s);
  kiln_sha512_update(&s, m.data(), m.size());
  uint8_t out[64];
  kiln_sha512_final(&s, out);
  return hex(out, 64);
}
std::string sha256_hex(const std::string& m) {
  kiln_sha256 s;
  kiln_sha256_init(&s);
  for (size_t i = 0; i < m.size(); i += 777)
    kiln_sha256_update(&s, m.data() + i, std::min<size_t>(777, m.size() - i));
  uint8_t out[32];
  kiln_sha256_final(&s, out);
  return hex(out, 32);
}

TEST(Sign, Sha512AndSha256MatchTheStandardsExamples) {
  EXPECT_EQ(sha512_hex("abc"),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c"
            "23a3feebbd"
            "454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_EQ(sha512_hex("").substr(0, 32), "cf83e1357eefb8bdf1542850d66d8007");
  EXPECT_EQ(sha512_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjkl"
                       "mnopqklmnopqrlmnopq"
                       "rsmnopqrstnopqrstu"),
            "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99"
            "dec4b5433a"
            "c7d329eeb6dd26545e96e55b874be909");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

struct Vector {
  const char *seed, *public_key, *message, *signature;
};
const Vector kRfc8032[] = {
    {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b"
     "46bd2"
     "5bf5f0595bbe24655141438e7a100b"},
    {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11"
     "d8c38"
     "7b2eaeb4302aeeb00d291612bb0c00"},
    {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc"
     "6594a"
     "7c15e9716ed28dc027beceea1ec40a"},
    {"833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
     "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3fee"
     "bbd454d"
     "4423643ce80e2a9ac94fa54ca49f",
     "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e"
     "0303d"
     "ca179c138ac17ad9bef1177331a704"},
};

TEST(Sign, Ed25519ReproducesRfc8032) {
  for (const Vector& v : kRfc8032) {
    std::vector<uint8_t> seed = unhex(v.seed), msg = unhex(v.message);
    uint8_t pk[32], sig[64];
    kiln_ed25519_public_key(pk, seed.data());
    EXPECT_EQ(hex(pk, 32), v.public_key);
    kiln_sign_message m = {msg.data(), msg.size(), {0, 0}, {0, 0}};
    kiln_ed25519_sign(sig, seed.data(), pk, &m);
    EXPECT_EQ(hex(sig, 64), v.signature) << "message " << v.message;
    EXPECT_EQ(kiln_ed25519_verify(sig, pk, &m), 1);
  }
}

TEST(Sign, Ed25519RefusesWhatIsNotASignature) {
  const Vector& v = kRfc8032[2];
  std::vector<uint8_t> pk = unhex(v.public_key), sig = unhex(v.signature), msg = unhex(v.message);
  kiln_sign_message m = {msg.data(), msg.size(), {0, 0}, {0, 0}};
  ASSERT_EQ(kiln_ed25519_verify(sig.data(), pk.data(), &m), 1);
  for (size_t bit = 0; bit < 8 * 64; bit += 7) {  // any changed signature bit
    std::vector<uint8_t> bad = sig;
    bad[bit / 8] ^= static_cast<uint8_t>(1 << (bit % 8));
    EXPECT_EQ(kiln_ed25519_verify(bad.data(), pk.data(), &m), 0) << "signature bit " << bit;
  }
  std::vector<uint8_t> other = msg;
  other[1] ^= 1;
  kiln_sign_message m2 = {other.data(), other.size(), {0, 0}, {0, 0}};
  EXPECT_EQ(kiln_ed25519_verify(sig.data(), pk.data(), &m2), 0);
  std::vector<uint8_t> key = unhex(kRfc8032[1].public_key);  // another key
  EXPECT_EQ(kiln_ed25519_verify(sig.data(), key.data(), &m), 0);
  // S >= L (S + L would verify with a malleable verifier): refused.
  std::vector<uint8_t> big = sig;
  const uint8_t L[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                         0xa2, 0xde, 0xf9, 0xde, 0x14, 0,    0,    0,    0,    0,    0,
                         0,    0,    0,    0,    0,    0,    0,    0,    0,    0x10};
  unsigned carry = 0;
  for (int i = 0; i < 32; ++i) {
    unsigned t = big[32 + i] + L[i] + carry;
    big[32 + i] = static_cast<uint8_t>(t);
    carry = t >> 8;
  }
  EXPECT_EQ(kiln_ed25519_verify(big.data(), pk.data(), &m), 0);
  // A public key that is no point (y >= p).
  std::vector<uint8_t> no_point(32, 0xff);
  no_point[31] = 0x7f;
  EXPECT_EQ(kiln_ed25519_verify(sig.data(), no_point.data(), &m), 0);
}

TEST(Sign, HolesReadAsZeros) {
  std::vector<uint8_t> seed = unhex(kRfc8032[0].seed), msg(300, 7), zeroed = msg;
  for (size_t i = 10; i < 74; ++i) zeroed[i] = 0;
  for (size_t i = 200; i < 204; ++i) zeroed[i] = 0;
  uint8_t pk[32], a[64], b[64];
  kiln_ed25519_public_key(pk, seed.data());
  kiln_sign_message with_holes = {msg.data(), msg.size(), {200, 10}, {4, 64}};  // either order
  kiln_sign_message plain = {zeroed.data(), zeroed.size(), {0, 0}, {0, 0}};
  kiln_ed25519_sign(a, seed.data(), pk, &with_holes);
  kiln_ed25519_sign(b, seed.data(), pk, &plain);
  EXPECT_EQ(hex(a, 64), hex(b, 64));
}

}  // namespace
