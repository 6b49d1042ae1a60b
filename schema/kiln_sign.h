/* kiln_sign.h: signed packages. SHA-256 and SHA-512 (FIPS 180-4) and Ed25519 (RFC 8032),
 * written from the standards in plain C (libc only), shared by the compiler (kilnc keygen,
 * kilnc compile --sign) and the runtime (kiln_model_options' trusted keys).
 *
 * What a package signature covers: every byte of the package, with the 64 signature bytes and
 * the 4 bytes of Package.metadata_crc32c read as zero (the checksum is computed after signing
 * and covers the signature). Package.signature holds the signer's public key and the signature.
 * A signature protects against everything a crafted package can do — hostile native code
 * included — provided the application trusts the key: the runtime verifies it before anything
 * else in the package is read.
 *
 * Verification is not constant-time (its inputs are public); signing and key generation
 * (compiler side) use no secret-dependent branches or indices. */
#ifndef KILN_SCHEMA_KILN_SIGN_H_
#define KILN_SCHEMA_KILN_SIGN_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln_abi.h" /* KILN_ABI_FN */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_sha512 {
  uint64_t h[8];
  uint8_t block[128];
  uint64_t bytes; /* total so far */
  size_t fill;    /* bytes in |block| */
} kiln_sha512;
KILN_ABI_FN void kiln_sha512_init(kiln_sha512* s);
KILN_ABI_FN void kiln_sha512_update(kiln_sha512* s, const void* data, size_t n);
KILN_ABI_FN void kiln_sha512_final(kiln_sha512* s, uint8_t out[64]);

typedef struct kiln_sha256 {
  uint32_t h[8];
  uint8_t block[64];
  uint64_t bytes;
  size_t fill;
} kiln_sha256;
KILN_ABI_FN void kiln_sha256_init(kiln_sha256* s);
KILN_ABI_FN void kiln_sha256_update(kiln_sha256* s, const void* data, size_t n);
KILN_ABI_FN void kiln_sha256_final(kiln_sha256* s, uint8_t out[32]);

/* A message: |size| bytes at |data|, with up to two ranges [offset, offset + size) read as zero
 * (unused ranges have size 0). */
typedef struct kiln_sign_message {
  const uint8_t* data;
  size_t size;
  uint64_t zero_offset[2];
  uint64_t zero_size[2];
} kiln_sign_message;

#ifndef KILN_SIGN_VERIFY_ONLY /* (the runtime verifies; only the compiler signs) */
/* The public key of a 32-byte secret seed (RFC 8032 5.1.5). */
void kiln_ed25519_public_key(uint8_t public_key[32], const uint8_t seed[32]);
/* An Ed25519 signature of |m| (RFC 8032 5.1.6). */
void kiln_ed25519_sign(uint8_t signature[64], const uint8_t seed[32], const uint8_t public_key[32],
                       const kiln_sign_message* m);
#endif
/* 1 if |signature| is a valid signature of |m| by |public_key| (RFC 8032 5.1.7), else 0. */
KILN_ABI_FN int kiln_ed25519_verify(const uint8_t signature[64], const uint8_t public_key[32],
                                    const kiln_sign_message* m);

#ifdef __cplusplus
}
#endif

#endif /* KILN_SCHEMA_KILN_SIGN_H_ */
