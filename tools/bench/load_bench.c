/* What verifying a package costs at load time (docs/performance.md, "Load-time verification"):
 *
 *   load_bench PACKAGE [--rounds N] [--key HEX] [--pin HEX]
 *
 * loads PACKAGE N times (default 15, after one warm-up load, so the file is in the page cache)
 * in each mode and prints the median wall time of kiln_model_load_file plus the release:
 *   skip_checksums  structure, bounds, plan and schedule proofs, ELF loading; no CRCs
 *   default         the above and the CRC-32C of every section
 *   pinned          default plus the SHA-256 of the whole file (--pin: its 64 hex digits)
 *   signed          default plus the Ed25519 signature (--key: the signer's public key, hex)
 * A benchmark, not a test: it checks only that every load succeeds. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/kiln.h"
#include "timing.h"

/* 2*|n| hex digits into |out|; 0 on success. */
static int parse_hex(const char* hex, uint8_t* out, size_t n) {
  if (strlen(hex) != 2 * n) return 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return 1;
    out[i] = (uint8_t)v;
  }
  return 0;
}

static int measure(const char* mode, const char* path, const kiln_model_options* o, int rounds) {
  double t[256];
  for (int r = -1; r < rounds; ++r) {
    kiln_model* m = NULL;
    double t0 = now_ms();
    kiln_status s = kiln_model_load_file(path, o, &m);
    if (s == KILN_OK) kiln_model_release(m);
    double dt = now_ms() - t0;
    if (s != KILN_OK) {
      fprintf(stderr, "load_bench: %s: %s\n", mode, kiln_last_error_message());
      return 1;
    }
    if (r >= 0) t[r] = dt;
  }
  qsort(t, (size_t)rounds, sizeof t[0], cmp_double);
  printf("%s_ms: %.3f\n", mode, t[rounds / 2]);
  return 0;
}

int main(int argc, char** argv) {
  const char *path = NULL, *key_hex = NULL, *pin_hex = NULL;
  int rounds = 15;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--key") && i + 1 < argc)
      key_hex = argv[++i];
    else if (!strcmp(argv[i], "--pin") && i + 1 < argc)
      pin_hex = argv[++i];
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else
      path = NULL, argc = 0;
  }
  if (!path || rounds < 1 || rounds > 256) {
    fprintf(stderr, "usage: load_bench PACKAGE [--rounds 1..256] [--key HEX] [--pin HEX]\n");
    return 2;
  }
  uint8_t key[1][32], pin[32];
  if ((key_hex && parse_hex(key_hex, key[0], 32)) || (pin_hex && parse_hex(pin_hex, pin, 32))) {
    fprintf(stderr, "load_bench: --key and --pin take 64 hex digits\n");
    return 2;
  }
  kiln_model_options o;
  kiln_model_options_init(&o);
  o.skip_checksums = 1;
  if (measure("skip_checksums", path, &o, rounds)) return 1;
  o.skip_checksums = 0;
  if (measure("default", path, &o, rounds)) return 1;
  if (pin_hex) {
    o.pinned_sha256 = pin;
    if (measure("pinned", path, &o, rounds)) return 1;
    o.pinned_sha256 = NULL;
  }
  if (key_hex) {
    o.trusted_keys = (const uint8_t(*)[32])key;
    o.num_trusted_keys = 1;
    o.require_signature = 1;
    if (measure("signed", path, &o, rounds)) return 1;
  }
  return 0;
}
