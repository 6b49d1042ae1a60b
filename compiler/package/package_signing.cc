#include "compiler/package/package_signing.h"

#include <fstream>

#include "compiler/package/package_writer.h"
#include "compiler/support/error.h"
#include "kiln/schema/kiln_generated.h"
#include "schema/kiln_sign.h"

namespace kiln {

namespace {

constexpr const char* kSecretTag = "kiln-ed25519-secret-key ";
constexpr const char* kPublicTag = "kiln-ed25519-public-key ";

std::string hex(const uint8_t* p, size_t n) {
  static const char d[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}

std::array<uint8_t, 32> parse_key(const std::string& text, const std::string& tag,
                                  const std::string& what) {
  std::string body = text;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r' || body.back() == ' '))
    body.pop_back();
  if (body.rfind(tag, 0) != 0 || body.size() != tag.size() + 64)
    throw Error("'" + what + "' is not a kiln key file (" + tag + "followed by 64 hex digits)");
  std::array<uint8_t, 32> k{};
  for (size_t i = 0; i < 32; ++i) {
    auto digit = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      throw Error("'" + what + "': '" + std::string(1, c) + "' is not a hex digit");
    };
    k[i] = static_cast<uint8_t>(digit(body[tag.size() + 2 * i]) * 16 +
                                digit(body[tag.size() + 2 * i + 1]));
  }
  return k;
}

// Where the signature bytes and the metadata checksum field lie.
struct Holes {
  uint64_t signature = 0, crc = 0;
  const uint8_t* public_key = nullptr;
};
Holes holes_of(const std::vector<uint8_t>& pkg) {
  const fb::Package* p = fb::GetPackage(pkg.data());
  Holes h;
  if (!p->signature() || !p->signature()->signature() || !p->signature()->public_key() ||
      p->signature()->signature()->size() != 64 || p->signature()->public_key()->size() != 32)
    return h;
  h.signature = static_cast<uint64_t>(p->signature()->signature()->data() - pkg.data());
  h.public_key = p->signature()->public_key()->data();
  const uint8_t* field =
      reinterpret_cast<const flatbuffers::Table*>(p)->GetAddressOf(fb::Package::VT_METADATA_CRC32C);
  KILN_CHECK(field, "the package has no metadata_crc32c field");
  h.crc = static_cast<uint64_t>(field - pkg.data());
  return h;
}

}  // namespace

SigningKey generate_signing_key() {
  SigningKey k;
  std::ifstream f("/dev/urandom", std::ios::binary);
  f.read(reinterpret_cast<char*>(k.seed.data()), 32);
  if (!f) throw Error("cannot read 32 random bytes from /dev/urandom");
  kiln_ed25519_public_key(k.public_key.data(), k.seed.data());
  return k;
}

std::string format_secret_key(const SigningKey& k) {
  return kSecretTag + hex(k.seed.data(), 32) + "\n";
}
std::string format_public_key(const PublicKey& k) {
  return kPublicTag + hex(k.data(), 32) + "\n";
}

SigningKey parse_secret_key(const std::string& text, const std::string& what) {
  SigningKey k;
  k.seed = parse_key(text, kSecretTag, what);
  kiln_ed25519_public_key(k.public_key.data(), k.seed.data());
  return k;
}

PublicKey parse_public_key(const std::string& text, const std::string& what) {
  return parse_key(text, kPublicTag, what);
}

void sign_package(std::vector<uint8_t>& pkg, const SigningKey& key) {
  Holes h = holes_of(pkg);
  KILN_CHECK(h.public_key && std::equal(key.public_key.begin(), key.public_key.end(), h.public_key),
             "the package has no signature table for this key");
  kiln_sign_message m = {pkg.data(), pkg.size(), {h.signature, h.crc}, {64, 4}};
  uint8_t sig[64];
  kiln_ed25519_sign(sig, key.seed.data(), key.public_key.data(), &m);
  std::copy(sig, sig + 64, pkg.begin() + static_cast<std::ptrdiff_t>(h.signature));
  fb::GetMutablePackage(pkg.data())
      ->mutate_metadata_crc32c(package_metadata_crc(pkg.data(), pkg.size()));
}

SignatureInfo package_signature(const std::vector<uint8_t>& pkg) {
  SignatureInfo info;
  Holes h = holes_of(pkg);
  if (!h.public_key) return info;
  info.signer = hex(h.public_key, 32);
  kiln_sign_message m = {pkg.data(), pkg.size(), {h.signature, h.crc}, {64, 4}};
  info.valid = kiln_ed25519_verify(pkg.data() + h.signature, h.public_key, &m) == 1;
  return info;
}

}  // namespace kiln
