// Signed packages, the compiler's side (schema/kiln_sign.h has the scheme): Ed25519 keys as text
// files, and signing a package's bytes. `kilnc keygen -o NAME` writes NAME.key (the secret seed)
// and NAME.pub (the public key the application trusts); `kilnc compile --sign NAME.key` signs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

using PublicKey = std::array<uint8_t, 32>;

struct SigningKey {
  std::array<uint8_t, 32> seed;
  PublicKey public_key;
};

// A new key from the operating system's randomness (/dev/urandom). Throws kiln::Error.
SigningKey generate_signing_key();

// "kiln-ed25519-secret-key <64 hex digits>\n" and "kiln-ed25519-public-key <64 hex digits>\n".
std::string format_secret_key(const SigningKey& k);
std::string format_public_key(const PublicKey& k);
// Parse what format_* wrote; throw kiln::Error naming `what` (a file name) otherwise.
SigningKey parse_secret_key(const std::string& text, const std::string& what);
PublicKey parse_public_key(const std::string& text, const std::string& what);

// Signs a package whose Signature table holds `key`'s public key and 64 zero bytes: the signature
// over every byte with the signature and the metadata checksum read as zero, then the metadata
// checksum (which covers the signature).
void sign_package(std::vector<uint8_t>& package, const SigningKey& key);

// For `kilnc inspect`: the signer's public key in hex ("" if unsigned) and whether the signature
// verifies with it.
struct SignatureInfo {
  std::string signer;
  bool valid = false;
};
SignatureInfo package_signature(const std::vector<uint8_t>& package);

}  // namespace kiln
