/* SHA-256, SHA-512 (FIPS 180-4) and Ed25519 (RFC 8032) for kiln_sign.h, written from the
 * standards. The constants are the standards' (the SHA round constants and initial values are
 * the fractional parts of cube and square roots of primes; d, 2d and sqrt(-1) are the curve's),
 * computed once with arbitrary-precision arithmetic and written out here.
 *
 * Field elements of GF(2^255 - 19) are 16 signed 64-bit limbs of 16 bits (value = sum of
 * limb[i] * 2^(16 i)); 2^256 = 38 (mod p) folds the high half of a product. Points are in
 * extended coordinates (X : Y : Z : T), x = X/Z, y = Y/Z, xy = T/Z, with RFC 8032's complete
 * addition formula (used for doubling too). Scalars mod L are reduced by constant-time binary
 * long division. */
#include "kiln_sign.h"

#include <string.h>

/* ---------------------------------------------------------------- SHA-512 */

static const uint64_t kK512[80] = {
    0x428a2f98d728ae22ull, 0x7137449123ef65cdull, 0xb5c0fbcfec4d3b2full, 0xe9b5dba58189dbbcull,
    0x3956c25bf348b538ull, 0x59f111f1b605d019ull, 0x923f82a4af194f9bull, 0xab1c5ed5da6d8118ull,
    0xd807aa98a3030242ull, 0x12835b0145706fbeull, 0x243185be4ee4b28cull, 0x550c7dc3d5ffb4e2ull,
    0x72be5d74f27b896full, 0x80deb1fe3b1696b1ull, 0x9bdc06a725c71235ull, 0xc19bf174cf692694ull,
    0xe49b69c19ef14ad2ull, 0xefbe4786384f25e3ull, 0x0fc19dc68b8cd5b5ull, 0x240ca1cc77ac9c65ull,
    0x2de92c6f592b0275ull, 0x4a7484aa6ea6e483ull, 0x5cb0a9dcbd41fbd4ull, 0x76f988da831153b5ull,
    0x983e5152ee66dfabull, 0xa831c66d2db43210ull, 0xb00327c898fb213full, 0xbf597fc7beef0ee4ull,
    0xc6e00bf33da88fc2ull, 0xd5a79147930aa725ull, 0x06ca6351e003826full, 0x142929670a0e6e70ull,
    0x27b70a8546d22ffcull, 0x2e1b21385c26c926ull, 0x4d2c6dfc5ac42aedull, 0x53380d139d95b3dfull,
    0x650a73548baf63deull, 0x766a0abb3c77b2a8ull, 0x81c2c92e47edaee6ull, 0x92722c851482353bull,
    0xa2bfe8a14cf10364ull, 0xa81a664bbc423001ull, 0xc24b8b70d0f89791ull, 0xc76c51a30654be30ull,
    0xd192e819d6ef5218ull, 0xd69906245565a910ull, 0xf40e35855771202aull, 0x106aa07032bbd1b8ull,
    0x19a4c116b8d2d0c8ull, 0x1e376c085141ab53ull, 0x2748774cdf8eeb99ull, 0x34b0bcb5e19b48a8ull,
    0x391c0cb3c5c95a63ull, 0x4ed8aa4ae3418acbull, 0x5b9cca4f7763e373ull, 0x682e6ff3d6b2b8a3ull,
    0x748f82ee5defb2fcull, 0x78a5636f43172f60ull, 0x84c87814a1f0ab72ull, 0x8cc702081a6439ecull,
    0x90befffa23631e28ull, 0xa4506cebde82bde9ull, 0xbef9a3f7b2c67915ull, 0xc67178f2e372532bull,
    0xca273eceea26619cull, 0xd186b8c721c0c207ull, 0xeada7dd6cde0eb1eull, 0xf57d4f7fee6ed178ull,
    0x06f067aa72176fbaull, 0x0a637dc5a2c898a6ull, 0x113f9804bef90daeull, 0x1b710b35131c471bull,
    0x28db77f523047d84ull, 0x32caab7b40c72493ull, 0x3c9ebe0a15c9bebcull, 0x431d67c49c100d4cull,
    0x4cc5d4becb3e42b6ull, 0x597f299cfc657e2aull, 0x5fcb6fab3ad6faecull, 0x6c44198c4a475817ull,
};
static const uint64_t kH512[8] = {
    0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull, 0xa54ff53a5f1d36f1ull,
    0x510e527fade682d1ull, 0x9b05688c2b3e6c1full, 0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull,
};

static uint64_t ror64(uint64_t x, int n) {
  return (x >> n) | (x << (64 - n));
}

static uint64_t load_be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

static void sha512_block(uint64_t h[8], const uint8_t* p) {
  uint64_t w[80];
  for (int t = 0; t < 16; ++t) w[t] = load_be64(p + 8 * t);
  for (int t = 16; t < 80; ++t) {
    uint64_t s0 = ror64(w[t - 15], 1) ^ ror64(w[t - 15], 8) ^ (w[t - 15] >> 7);
    uint64_t s1 = ror64(w[t - 2], 19) ^ ror64(w[t - 2], 61) ^ (w[t - 2] >> 6);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint64_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 80; ++t) {
    uint64_t t1 =
        hh + (ror64(e, 14) ^ ror64(e, 18) ^ ror64(e, 41)) + ((e & f) ^ (~e & g)) + kK512[t] + w[t];
    uint64_t t2 = (ror64(a, 28) ^ ror64(a, 34) ^ ror64(a, 39)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

void kiln_sha512_init(kiln_sha512* s) {
  memcpy(s->h, kH512, sizeof kH512);
  s->bytes = 0;
  s->fill = 0;
}

void kiln_sha512_update(kiln_sha512* s, const void* data, size_t n) {
  const uint8_t* p = data;
  s->bytes += n;
  if (s->fill) {
    size_t take = 128 - s->fill < n ? 128 - s->fill : n;
    memcpy(s->block + s->fill, p, take);
    s->fill += take;
    p += take;
    n -= take;
    if (s->fill < 128) return;
    sha512_block(s->h, s->block);
    s->fill = 0;
  }
  for (; n >= 128; p += 128, n -= 128) sha512_block(s->h, p);
  memcpy(s->block, p, n);
  s->fill = n;
}

void kiln_sha512_final(kiln_sha512* s, uint8_t out[64]) {
  uint64_t bits = s->bytes * 8;
  uint8_t pad[256] = {0x80};
  size_t padding = (s->fill < 112 ? 112 : 240) - s->fill;
  for (int i = 0; i < 8; ++i) pad[padding + 8 + i] = (uint8_t)(bits >> (56 - 8 * i));
  kiln_sha512_update(s, pad, padding + 16); /* (the upper 64 bits of the length are 0) */
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 8; ++k) out[8 * i + k] = (uint8_t)(s->h[i] >> (56 - 8 * k));
}

/* ---------------------------------------------------------------- SHA-256 */

static const uint32_t kK256[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u,
};
static const uint32_t kH256[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                  0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};

static uint32_t ror32(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

static void sha256_block(uint32_t h[8], const uint8_t* p) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t)
    w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 |
           p[4 * t + 3];
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = ror32(w[t - 15], 7) ^ ror32(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = ror32(w[t - 2], 17) ^ ror32(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 =
        hh + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + kK256[t] + w[t];
    uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

void kiln_sha256_init(kiln_sha256* s) {
  memcpy(s->h, kH256, sizeof kH256);
  s->bytes = 0;
  s->fill = 0;
}

void kiln_sha256_update(kiln_sha256* s, const void* data, size_t n) {
  const uint8_t* p = data;
  s->bytes += n;
  if (s->fill) {
    size_t take = 64 - s->fill < n ? 64 - s->fill : n;
    memcpy(s->block + s->fill, p, take);
    s->fill += take;
    p += take;
    n -= take;
    if (s->fill < 64) return;
    sha256_block(s->h, s->block);
    s->fill = 0;
  }
  for (; n >= 64; p += 64, n -= 64) sha256_block(s->h, p);
  memcpy(s->block, p, n);
  s->fill = n;
}

void kiln_sha256_final(kiln_sha256* s, uint8_t out[32]) {
  uint64_t bits = s->bytes * 8;
  uint8_t pad[128] = {0x80};
  size_t padding = (s->fill < 56 ? 56 : 120) - s->fill;
  for (int i = 0; i < 8; ++i) pad[padding + i] = (uint8_t)(bits >> (56 - 8 * i));
  kiln_sha256_update(s, pad, padding + 8);
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 4; ++k) out[4 * i + k] = (uint8_t)(s->h[i] >> (24 - 8 * k));
}

/* ---------------------------------------------------------------- GF(2^255 - 19) */

typedef int64_t fe[16];

static const fe kD = {0x78a3, 0x1359, 0x4dca, 0x75eb, 0xd8ab, 0x4141, 0x0a4d, 0x0070,
                      0xe898, 0x7779, 0x4079, 0x8cc7, 0xfe73, 0x2b6f, 0x6cee, 0x5203};
static const fe kD2 = {0xf159, 0x26b2, 0x9b94, 0xebd6, 0xb156, 0x8283, 0x149a, 0x00e0,
                       0xd130, 0xeef3, 0x80f2, 0x198e, 0xfce7, 0x56df, 0xd9dc, 0x2406};
static const fe kSqrtM1 = {0xa0b0, 0x4a0e, 0x1b27, 0xc4ee, 0xe478, 0xad2f, 0x1806, 0x2f43,
                           0xd7a7, 0x3dfb, 0x0099, 0x2b4d, 0xdf0b, 0x4fc1, 0x2480, 0x2b83};

static void fe_set(fe o, int64_t v) {
  memset(o, 0, sizeof(fe));
  o[0] = v;
}
static void fe_copy(fe o, const fe a) {
  memcpy(o, a, sizeof(fe));
}
static void fe_add(fe o, const fe a, const fe b) {
  for (int i = 0; i < 16; ++i) o[i] = a[i] + b[i];
}
static void fe_sub(fe o, const fe a, const fe b) {
  for (int i = 0; i < 16; ++i) o[i] = a[i] - b[i];
}

/* Limbs back to 16 bits (the carry out of the top limb wraps around times 38). */
static void fe_carry(fe o) {
  for (int i = 0; i < 16; ++i) {
    int64_t c = o[i] >> 16; /* arithmetic: a negative limb borrows */
    o[i] -= c * 65536;
    if (i < 15)
      o[i + 1] += c;
    else
      o[0] += 38 * c;
  }
}

static void fe_mul(fe o, const fe a, const fe b) {
  int64_t t[31];
  memset(t, 0, sizeof t);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) t[i + j] += a[i] * b[j];
  for (int i = 0; i < 15; ++i) t[i] += 38 * t[i + 16];
  for (int i = 0; i < 16; ++i) o[i] = t[i];
  fe_carry(o);
  fe_carry(o);
}

static void fe_sq(fe o, const fe a) {
  fe_mul(o, a, a);
}

/* o = a if flag, else unchanged (no branch on flag). */
static void fe_cmov(fe o, const fe a, int64_t flag) {
  int64_t mask = -flag;
  for (int i = 0; i < 16; ++i) o[i] ^= mask & (o[i] ^ a[i]);
}

/* The canonical 32-byte little-endian encoding (the value reduced below p). */
static void fe_pack(uint8_t out[32], const fe a) {
  fe t;
  fe_copy(t, a);
  fe_carry(t);
  fe_carry(t);
  fe_carry(t);
  for (int k = 0; k < 2; ++k) { /* t < 2^256 < 2p + 38: subtract p at most twice */
    fe m;
    m[0] = t[0] - 0xffed;
    for (int i = 1; i < 15; ++i) {
      m[i] = t[i] - 0xffff - ((m[i - 1] >> 16) & 1);
      m[i - 1] &= 0xffff;
    }
    m[15] = t[15] - 0x7fff - ((m[14] >> 16) & 1);
    m[14] &= 0xffff;
    int64_t borrow = (m[15] >> 16) & 1;
    fe_cmov(t, m, 1 - borrow);
  }
  for (int i = 0; i < 16; ++i) {
    out[2 * i] = (uint8_t)(t[i] & 0xff);
    out[2 * i + 1] = (uint8_t)((t[i] >> 8) & 0xff);
  }
}

static void fe_unpack(fe o, const uint8_t in[32]) {
  for (int i = 0; i < 16; ++i) o[i] = in[2 * i] | (int64_t)in[2 * i + 1] << 8;
  o[15] &= 0x7fff;
}

static int fe_equal(const fe a, const fe b) {
  uint8_t x[32], y[32];
  fe_pack(x, a);
  fe_pack(y, b);
  return memcmp(x, y, 32) == 0;
}

static int fe_parity(const fe a) {
  uint8_t x[32];
  fe_pack(x, a);
  return x[0] & 1;
}

/* a^(p - 2) = 1/a: p - 2 = 2^255 - 21 has every bit below 255 set except bits 2 and 4. */
static void fe_invert(fe o, const fe a) {
  fe c;
  fe_copy(c, a);
  for (int i = 253; i >= 0; --i) {
    fe_sq(c, c);
    if (i != 2 && i != 4) fe_mul(c, c, a);
  }
  fe_copy(o, c);
}

/* a^((p - 5) / 8) = a^(2^252 - 3): every bit below 252 set except bit 1. */
static void fe_pow2523(fe o, const fe a) {
  fe c;
  fe_copy(c, a);
  for (int i = 250; i >= 0; --i) {
    fe_sq(c, c);
    if (i != 1) fe_mul(c, c, a);
  }
  fe_copy(o, c);
}

/* ---------------------------------------------------------------- the curve */

typedef struct ge {
  fe x, y, z, t;
} ge;

static void ge_neutral(ge* p) {
  fe_set(p->x, 0);
  fe_set(p->y, 1);
  fe_set(p->z, 1);
  fe_set(p->t, 0);
}

/* r = p + q (RFC 8032 5.1.4; complete, so also for p == q). r may be p or q. */
static void ge_add(ge* r, const ge* p, const ge* q) {
  fe a, b, c, d, e, f, g, h, t;
  fe_sub(a, p->y, p->x);
  fe_sub(t, q->y, q->x);
  fe_mul(a, a, t);
  fe_add(b, p->y, p->x);
  fe_add(t, q->y, q->x);
  fe_mul(b, b, t);
  fe_mul(c, p->t, kD2);
  fe_mul(c, c, q->t);
  fe_mul(d, p->z, q->z);
  fe_add(d, d, d);
  fe_sub(e, b, a);
  fe_sub(f, d, c);
  fe_add(g, d, c);
  fe_add(h, b, a);
  fe_mul(r->x, e, f);
  fe_mul(r->y, g, h);
  fe_mul(r->z, f, g);
  fe_mul(r->t, e, h);
}

static void ge_cmov(ge* r, const ge* p, int64_t flag) {
  fe_cmov(r->x, p->x, flag);
  fe_cmov(r->y, p->y, flag);
  fe_cmov(r->z, p->z, flag);
  fe_cmov(r->t, p->t, flag);
}

/* r = [s]p for a 256-bit little-endian scalar: double, add, keep the sum by the bit's mask. */
static void ge_scalarmult(ge* r, const ge* p, const uint8_t s[32]) {
  ge q, sum;
  ge_neutral(&q);
  for (int i = 255; i >= 0; --i) {
    ge_add(&q, &q, &q);
    ge_add(&sum, &q, p);
    ge_cmov(&q, &sum, (s[i / 8] >> (i % 8)) & 1);
  }
  *r = q;
}

static void ge_pack(uint8_t out[32], const ge* p) {
  fe zi, x, y;
  fe_invert(zi, p->z);
  fe_mul(x, p->x, zi);
  fe_mul(y, p->y, zi);
  fe_pack(out, y);
  out[31] ^= (uint8_t)(fe_parity(x) << 7);
}

/* RFC 8032 5.1.3: the point encoded by |in|, or 0 if |in| encodes none. */
static int ge_unpack(ge* r, const uint8_t in[32]) {
  uint8_t canonical[32], y_bytes[32];
  memcpy(y_bytes, in, 32);
  y_bytes[31] &= 0x7f;
  int sign = in[31] >> 7;
  fe y, y2, u, v, v3, v7, x, vx2, one;
  fe_unpack(y, y_bytes);
  fe_pack(canonical, y);
  if (memcmp(canonical, y_bytes, 32) != 0) return 0; /* y >= p */
  fe_set(one, 1);
  fe_sq(y2, y);
  fe_sub(u, y2, one);
  fe_mul(v, y2, kD);
  fe_add(v, v, one);
  fe_sq(v3, v);
  fe_mul(v3, v3, v); /* v^3 */
  fe_sq(v7, v3);
  fe_mul(v7, v7, v); /* v^7 */
  fe_mul(x, u, v7);
  fe_pow2523(x, x);
  fe_mul(x, x, v3);
  fe_mul(x, x, u); /* x = u v^3 (u v^7)^((p-5)/8) */
  fe_sq(vx2, x);
  fe_mul(vx2, vx2, v);
  if (!fe_equal(vx2, u)) {
    fe neg, zero;
    fe_set(zero, 0);
    fe_sub(neg, zero, u);
    if (!fe_equal(vx2, neg)) return 0;
    fe_mul(x, x, kSqrtM1);
  }
  uint8_t xb[32];
  fe_pack(xb, x);
  int zero = 1;
  for (int i = 0; i < 32; ++i) zero &= xb[i] == 0;
  if (zero && sign) return 0;
  if ((xb[0] & 1) != sign) {
    fe z;
    fe_set(z, 0);
    fe_sub(x, z, x);
  }
  fe_copy(r->x, x);
  fe_copy(r->y, y);
  fe_set(r->z, 1);
  fe_mul(r->t, x, y);
  return 1;
}

/* The base point B: y = 4/5 with x positive (RFC 8032 5.1). */
static void ge_base(ge* b) {
  static const uint8_t kBase[32] = {0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
                                    0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
                                    0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
                                    0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66};
  ge_unpack(b, kBase);
}

/* ---------------------------------------------------------------- scalars mod L */
#ifndef KILN_SIGN_VERIFY_ONLY
#define KILN_SIGNING 1
#endif

/* L = 2^252 + 27742317777372353535851937790883648493, as 32-bit little-endian words. */
static const uint32_t kL[8] = {0x5cf5d3ed, 0x5812631a, 0xa2f79cd6, 0x14def9de,
                               0x00000000, 0x00000000, 0x00000000, 0x10000000};

/* |words| (n 32-bit little-endian words) mod L, by binary long division: r = 2r + bit, minus L
 * when r >= L (selected by mask, not branched on). */
static void sc_reduce_words(uint8_t out[32], const uint32_t* words, int n) {
  uint32_t r[8] = {0};
  for (int bit = 32 * n - 1; bit >= 0; --bit) {
    uint32_t carry = (words[bit / 32] >> (bit % 32)) & 1;
    for (int i = 0; i < 8; ++i) { /* r < L < 2^253: the shift does not overflow */
      uint32_t next = r[i] >> 31;
      r[i] = r[i] << 1 | carry;
      carry = next;
    }
    uint32_t diff[8];
    int64_t borrow = 0;
    for (int i = 0; i < 8; ++i) {
      int64_t d = (int64_t)r[i] - kL[i] - borrow;
      borrow = d < 0;
      diff[i] = (uint32_t)d;
    }
    uint32_t keep = (uint32_t)-(int32_t)(1 - borrow); /* all ones when r >= L */
    for (int i = 0; i < 8; ++i) r[i] = (diff[i] & keep) | (r[i] & ~keep);
  }
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 4; ++k) out[4 * i + k] = (uint8_t)(r[i] >> (8 * k));
}

static void words_of(uint32_t* w, const uint8_t* bytes, int n) {
  for (int i = 0; i < n; ++i)
    w[i] = bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 | (uint32_t)bytes[4 * i + 2] << 16 |
           (uint32_t)bytes[4 * i + 3] << 24;
}

static void sc_reduce64(uint8_t out[32], const uint8_t in[64]) {
  uint32_t w[16];
  words_of(w, in, 16);
  sc_reduce_words(out, w, 16);
}

#ifdef KILN_SIGNING
/* out = (a b + c) mod L for 256-bit a, b, c. */
static void sc_muladd(uint8_t out[32], const uint8_t a[32], const uint8_t b[32],
                      const uint8_t c[32]) {
  uint32_t x[8], y[8], z[8], w[17] = {0};
  words_of(x, a, 8);
  words_of(y, b, 8);
  words_of(z, c, 8);
  for (int i = 0; i < 8; ++i) {
    uint64_t carry = 0;
    for (int j = 0; j < 8; ++j) {
      uint64_t t = (uint64_t)x[i] * y[j] + w[i + j] + carry;
      w[i + j] = (uint32_t)t;
      carry = t >> 32;
    }
    w[i + 8] = (uint32_t)carry;
  }
  uint64_t carry = 0;
  for (int i = 0; i < 17; ++i) {
    uint64_t t = (uint64_t)w[i] + (i < 8 ? z[i] : 0) + carry;
    w[i] = (uint32_t)t;
    carry = t >> 32;
  }
  sc_reduce_words(out, w, 17);
}

#endif

/* s < L, comparing little-endian numbers from the top byte. */
static int sc_is_canonical(const uint8_t s[32]) {
  uint8_t l[32];
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 4; ++k) l[4 * i + k] = (uint8_t)(kL[i] >> (8 * k));
  for (int i = 31; i >= 0; --i) {
    if (s[i] < l[i]) return 1;
    if (s[i] > l[i]) return 0;
  }
  return 0;
}

/* ---------------------------------------------------------------- Ed25519 */

static void hash_message(kiln_sha512* s, const kiln_sign_message* m) {
  static const uint8_t zeros[256];
  int first = m->zero_size[1] && (!m->zero_size[0] || m->zero_offset[1] < m->zero_offset[0]);
  uint64_t pos = 0;
  for (int k = 0; k < 2; ++k) {
    int h = first ? 1 - k : k;
    if (!m->zero_size[h]) continue;
    kiln_sha512_update(s, m->data + pos, (size_t)(m->zero_offset[h] - pos));
    for (uint64_t left = m->zero_size[h]; left;) {
      size_t take = left < sizeof zeros ? (size_t)left : sizeof zeros;
      kiln_sha512_update(s, zeros, take);
      left -= take;
    }
    pos = m->zero_offset[h] + m->zero_size[h];
  }
  kiln_sha512_update(s, m->data + pos, (size_t)(m->size - pos));
}

#ifdef KILN_SIGNING
/* The secret scalar a (clamped) and the nonce prefix from the seed (RFC 8032 5.1.5). */
static void expand_seed(uint8_t a[32], uint8_t prefix[32], const uint8_t seed[32]) {
  uint8_t h[64];
  kiln_sha512 s;
  kiln_sha512_init(&s);
  kiln_sha512_update(&s, seed, 32);
  kiln_sha512_final(&s, h);
  memcpy(a, h, 32);
  a[0] &= 248;
  a[31] &= 127;
  a[31] |= 64;
  if (prefix) memcpy(prefix, h + 32, 32);
}

void kiln_ed25519_public_key(uint8_t public_key[32], const uint8_t seed[32]) {
  uint8_t a[32];
  ge b, p;
  expand_seed(a, NULL, seed);
  ge_base(&b);
  ge_scalarmult(&p, &b, a);
  ge_pack(public_key, &p);
}

void kiln_ed25519_sign(uint8_t signature[64], const uint8_t seed[32], const uint8_t public_key[32],
                       const kiln_sign_message* m) {
  uint8_t a[32], prefix[32], h[64], r[32], k[32];
  expand_seed(a, prefix, seed);
  kiln_sha512 s;
  kiln_sha512_init(&s);
  kiln_sha512_update(&s, prefix, 32);
  hash_message(&s, m);
  kiln_sha512_final(&s, h);
  sc_reduce64(r, h);
  ge b, big_r;
  ge_base(&b);
  ge_scalarmult(&big_r, &b, r);
  ge_pack(signature, &big_r);
  kiln_sha512_init(&s);
  kiln_sha512_update(&s, signature, 32);
  kiln_sha512_update(&s, public_key, 32);
  hash_message(&s, m);
  kiln_sha512_final(&s, h);
  sc_reduce64(k, h);
  sc_muladd(signature + 32, k, a, r);
}

#endif

int kiln_ed25519_verify(const uint8_t signature[64], const uint8_t public_key[32],
                        const kiln_sign_message* m) {
  ge a, r, b, sb, ka, sum;
  if (!sc_is_canonical(signature + 32)) return 0;
  if (!ge_unpack(&a, public_key) || !ge_unpack(&r, signature)) return 0;
  uint8_t h[64], k[32];
  kiln_sha512 s;
  kiln_sha512_init(&s);
  kiln_sha512_update(&s, signature, 32);
  kiln_sha512_update(&s, public_key, 32);
  hash_message(&s, m);
  kiln_sha512_final(&s, h);
  sc_reduce64(k, h);
  ge_base(&b);
  ge_scalarmult(&sb, &b, signature + 32);
  ge_scalarmult(&ka, &a, k);
  ge_add(&sum, &r, &ka);
  uint8_t lhs[32], rhs[32];
  ge_pack(lhs, &sb);
  ge_pack(rhs, &sum);
  return memcmp(lhs, rhs, 32) == 0;
}
