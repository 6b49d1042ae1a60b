/* Verification of a package before anything in it is trusted (ARCHITECTURE section 5), in
 * stages (package_loader.h): the header and format version, the checksums, the target and CPU
 * features, the tensors, the slots, the schedule (argument counts and dtypes, write-before-read),
 * the memory plan's overlap proof, and finally the kernels' code. After this, the hot path runs
 * without checks. This file holds the driver and the first three stages. */
#include <string.h>

#include "kiln_sign.h"
#include "package_loader.h"

kiln_status kiln_loader_structure_error(const fbr* r) {
  return kiln_invalid(KM(AT_BYTE_OFFSET), r->error, (unsigned long long)r->error_at);
}

uint32_t kiln_fb_u32_field(fbr* r, uint64_t table, int f) {
  uint64_t p = fbr_field(r, table, f);
  return p ? fbr_u32(r, p) : 0;
}
uint64_t kiln_fb_u64_field(fbr* r, uint64_t table, int f) {
  uint64_t p = fbr_field(r, table, f);
  return p ? fbr_u64(r, p) : 0;
}
uint8_t kiln_fb_u8_field(fbr* r, uint64_t table, int f) {
  uint64_t p = fbr_field(r, table, f);
  return p ? fbr_u8(r, p) : 0;
}

kiln_status kiln_verify_header(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  if (m->size < 8) return kiln_invalid(KM(SHORTER_THAN_A_FLATBUFFERS_HEADER));
  if (memcmp(m->buf + 4, "KILN", 4) != 0) return kiln_invalid(KM(NOT_A_KILN_PACKAGE_THE_FILE));
  ld->root = fbr_u32(R, 0);
  KILN_FB_CHECK(R);
  if (ld->root == 0 || ld->root >= m->size) return kiln_invalid(KM(ROOT_TABLE_OUT_OF_BOUNDS));

  uint64_t prov = fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_PROVENANCE));
  KILN_FB_CHECK(R);
  if (!prov) return kiln_invalid(KM(NO_PROVENANCE));
  uint32_t major = kiln_fb_u32_field(R, prov, KILN_ABI_PROVENANCE_FORMAT_MAJOR);
  uint32_t minor = kiln_fb_u32_field(R, prov, KILN_ABI_PROVENANCE_FORMAT_MINOR);
  KILN_FB_CHECK(R);
  if (major != KILN_ABI_FORMAT_MAJOR)
    return kiln_error(KILN_UNSUPPORTED, KM(PACKAGE_FORMAT_THIS_RUNTIME_READS_FORMAT), major, minor,
                      KILN_ABI_FORMAT_MAJOR);

  ld->code_size =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_CODE)), 1, &ld->code);
  ld->constants_size = fbr_vector(R, fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_CONSTANTS)),
                                  1, &ld->constants);
  ld->crc_field = fbr_field(R, ld->root, KILN_ABI_PACKAGE_METADATA_CRC32C);
  ld->static_id = kiln_fb_u32_field(R, ld->root, KILN_ABI_PACKAGE_STATIC_KERNELS_ID);
  KILN_FB_CHECK(R);
  if (ld->static_id) {
    if (ld->code_size) return kiln_invalid(KM(A_STATIC_LIBRARY_PACKAGE_WITH_KERNEL));
    if (!m->static_table) return kiln_invalid(KM(ITS_KERNELS_ARE_IN_A_STATIC));
  } else {
    if (!ld->code || !ld->code_size) return kiln_invalid(KM(NO_KERNEL_CODE));
    if (m->static_table) return kiln_invalid(KM(IT_CARRIES_ITS_OWN_KERNEL_CODE));
  }
  if (ld->constants_size && ld->constants % 64)
    return kiln_invalid(KM(THE_CONSTANTS_ARE_NOT_64_BYTE));
  m->constants = ld->constants_size ? m->buf + ld->constants : NULL;
  m->constants_size = ld->constants_size;
  return KILN_OK;
}

static void key_prefix_hex(const uint8_t* key, char* out) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 8; ++i) {
    out[2 * i] = digits[key[i] >> 4];
    out[2 * i + 1] = digits[key[i] & 15];
  }
  out[16] = 0;
}

kiln_status kiln_verify_signature(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  const kiln_trust* t = ld->trust;
  if (t->pinned_sha256) {
    uint8_t digest[32];
    kiln_sha256 h;
    kiln_sha256_init(&h);
    kiln_sha256_update(&h, m->buf, m->size);
    kiln_sha256_final(&h, digest);
    if (memcmp(digest, t->pinned_sha256, 32) != 0)
      return kiln_error(KILN_SIGNATURE_INVALID, KM(THE_PACKAGE_S_SHA_256_IS));
  }
  if (!t->num_keys) return KILN_OK; /* (nothing to check a signature against) */
  uint64_t sig = fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_SIGNATURE));
  KILN_FB_CHECK(R);
  if (!sig) {
    if (t->require) return kiln_error(KILN_SIGNATURE_INVALID, KM(THE_PACKAGE_IS_NOT_SIGNED_AND));
    return KILN_OK;
  }
  uint64_t key, bytes;
  uint32_t key_len =
      fbr_vector(R, fbr_ref(R, fbr_field(R, sig, KILN_ABI_SIGNATURE_PUBLIC_KEY)), 1, &key);
  uint32_t sig_len =
      fbr_vector(R, fbr_ref(R, fbr_field(R, sig, KILN_ABI_SIGNATURE_SIGNATURE)), 1, &bytes);
  KILN_FB_CHECK(R);
  if (key_len != 32 || sig_len != 64)
    return kiln_error(KILN_SIGNATURE_INVALID, KM(THE_PACKAGE_S_SIGNATURE_IS_MALFORMED));
  size_t k = 0;
  while (k < t->num_keys && memcmp(t->keys[k], m->buf + key, 32) != 0) ++k;
  char hex[17];
  key_prefix_hex(m->buf + key, hex);
  if (k == t->num_keys)
    return kiln_error(KILN_SIGNATURE_INVALID, KM(THE_PACKAGE_IS_SIGNED_BY_KEY), hex);
  if (!ld->crc_field) return kiln_invalid(KM(NO_METADATA_CHECKSUM));
  kiln_sign_message msg = {m->buf, m->size, {bytes, ld->crc_field}, {64, 4}};
  if (bytes < ld->crc_field + 4 && ld->crc_field < bytes + 64)
    return kiln_error(KILN_SIGNATURE_INVALID, KM(THE_PACKAGE_S_SIGNATURE_IS_MALFORMED));
  if (!kiln_ed25519_verify(m->buf + bytes, m->buf + key, &msg))
    return kiln_error(KILN_SIGNATURE_INVALID, KM(THE_PACKAGE_S_SIGNATURE_BY_KEY), hex);
  return KILN_OK;
}

kiln_status kiln_verify_checksums(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  if (!ld->verify_checksums) return KILN_OK;
  if (!ld->crc_field) return kiln_invalid(KM(NO_METADATA_CHECKSUM));
  uint32_t want = fbr_u32(R, ld->crc_field), crc;
  KILN_FB_CHECK(R);
  kiln_abi_region code = {ld->code, ld->code_size};
  kiln_abi_region constants = {ld->constants, ld->constants_size};
  if (kiln_abi_metadata_crc32c(m->buf, m->size, code, constants, ld->crc_field,
                               kiln_cpu_has_crc32c(), &crc) != 0)
    return kiln_invalid(KM(OVERLAPPING_SECTIONS));
  if (crc != want)
    return kiln_error(KILN_CHECKSUM_MISMATCH, KM(CHECKSUM_MISMATCH_IN_THE_PACKAGE_METADATA));

  uint64_t secs;
  uint32_t nsec =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_SECTIONS)), 4, &secs);
  KILN_FB_CHECK(R);
  int seen = 0;
  for (uint32_t i = 0; i < nsec; ++i) {
    uint64_t s = fbr_table_at(R, secs, i);
    const char* name = fbr_string(R, fbr_ref(R, fbr_field(R, s, KILN_ABI_SECTION_NAME)));
    uint32_t sc = kiln_fb_u32_field(R, s, KILN_ABI_SECTION_CRC32C);
    uint64_t ss = kiln_fb_u64_field(R, s, KILN_ABI_SECTION_SIZE);
    KILN_FB_CHECK(R);
    if (!name) return kiln_invalid(KM(A_SECTION_WITHOUT_A_NAME));
    const uint8_t* data;
    uint64_t size;
    if (!strcmp(name, "code")) {
      data = m->buf + ld->code, size = ld->code_size, seen |= 1;
    } else if (!strcmp(name, "constants")) {
      data = ld->constants_size ? m->buf + ld->constants : m->buf;
      size = ld->constants_size, seen |= 2;
    } else {
      continue;
    }
    if (size != ss || kiln_crc32c(0, data, (size_t)size) != sc)
      return kiln_error(KILN_CHECKSUM_MISMATCH, KM(CHECKSUM_MISMATCH_IN_SECTION_THE_FILE), name);
  }
  if (seen != 3) return kiln_invalid(KM(THE_CODE_AND_CONSTANTS_SECTIONS_MUST));
  return KILN_OK;
}

/* Appends |s| to the string in |buf| (|room| bytes), truncating. */
static void append(char* buf, size_t room, const char* s) {
  size_t n = strlen(buf);
  while (*s && n + 1 < room) buf[n++] = *s++;
  buf[n] = 0;
}

/* Whether this CPU runs the variant whose Target is at |tgt|: KILN_OK; KILN_UNSUPPORTED (another
 * architecture, a feature the runtime cannot check); or KILN_MISSING_CPU_FEATURE, with the
 * missing features appended to |why| (|room| bytes), comma-separated. */
static kiln_status check_target(kiln_loader* ld, uint64_t tgt, char* why, size_t room) {
  fbr* R = &ld->r;
  size_t start = strlen(why);
  if (!tgt) return kiln_invalid(KM(NO_TARGET));
  const char* triple = fbr_string(R, fbr_ref(R, fbr_field(R, tgt, KILN_ABI_TARGET_TRIPLE)));
  KILN_FB_CHECK(R);
  if (!triple) return kiln_invalid(KM(NO_TARGET_TRIPLE));
  const char* arch = kiln_runtime_arch();
  size_t n = strlen(arch);
  if (strncmp(triple, arch, n) != 0 || (triple[n] != '-' && triple[n] != 0))
    return kiln_error(KILN_UNSUPPORTED, KM(THE_PACKAGE_IS_COMPILED_FOR_THIS), triple, arch);
  uint64_t feats;
  uint32_t nfeat =
      fbr_vector(R, fbr_ref(R, fbr_field(R, tgt, KILN_ABI_TARGET_REQUIRED_FEATURES)), 4, &feats);
  KILN_FB_CHECK(R);
  if (nfeat > KILN_ABI_MAX_FEATURES)
    return kiln_invalid(KM(REQUIRED_CPU_FEATURES_THE_LIMIT_IS), nfeat, KILN_ABI_MAX_FEATURES);
  for (uint32_t i = 0; i < nfeat; ++i) {
    const char* f = fbr_string(R, fbr_ref(R, feats + 4 * (uint64_t)i));
    KILN_FB_CHECK(R);
    if (!f) return kiln_invalid(KM(A_MALFORMED_CPU_FEATURE));
    int has = kiln_cpu_has_feature(f);
    if (has < 0) return kiln_error(KILN_UNSUPPORTED, KM(THE_PACKAGE_REQUIRES_CPU_FEATURE_WHICH), f);
    if (!has) {
      if (strlen(why) > start) append(why, room, ", ");
      append(why, room, f);
    }
  }
  return strlen(why) > start ? KILN_MISSING_CPU_FEATURE : KILN_OK;
}

kiln_status kiln_select_variant(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint64_t vdata;
  uint32_t nv =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_VARIANTS)), 4, &vdata);
  KILN_FB_CHECK(R);
  if (nv >= KILN_ABI_MAX_VARIANTS || (nv && ld->static_id))
    return kiln_invalid(KM(VARIANTS_THE_LIMIT_IS_A_STATIC), nv + 1, KILN_ABI_MAX_VARIANTS);
  m->num_variants = nv + 1;
  /* Every variant's target; the choice: the one named, else the last this CPU runs. |why|
   * collects what each variant that cannot run lacks. */
  char why[768] = "";
  kiln_status st = KILN_OK, chosen_st = KILN_OK;
  int chosen = -1;
  for (uint32_t v = 0; v <= nv; ++v) {
    uint64_t t = v ? fbr_table_at(R, vdata, v - 1) : ld->root;
    ld->variants[v] = t;
    uint64_t tgt = fbr_ref(R, fbr_field(R, t, KILN_ABI_PACKAGE_TARGET));
    const char* cpu = fbr_string(R, fbr_ref(R, fbr_field(R, tgt, KILN_ABI_TARGET_CPU)));
    KILN_FB_CHECK(R);
    if (!cpu) return kiln_invalid(KM(A_TARGET_WITHOUT_A_CPU_NAME));
    strncpy(m->variant_cpu[v], cpu, sizeof m->variant_cpu[v] - 1);
    size_t mark = strlen(why);
    if (nv) {
      append(why, sizeof why, mark ? "; " : "");
      append(why, sizeof why, m->variant_cpu[v]);
      append(why, sizeof why, " lacks ");
    }
    st = check_target(ld, tgt, why, sizeof why);
    if (st != KILN_OK && st != KILN_MISSING_CPU_FEATURE && st != KILN_UNSUPPORTED) return st;
    m->variant_runs[v] = st == KILN_OK;
    if (st != KILN_MISSING_CPU_FEATURE) why[mark] = 0;
    if (ld->want_variant ? !strcmp(m->variant_cpu[v], ld->want_variant) : st == KILN_OK) {
      chosen = (int)v;
      chosen_st = st;
    }
  }
  if (chosen < 0 && ld->want_variant)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(THE_PACKAGE_HAS_NO_VARIANT_KILN), ld->want_variant);
  if (chosen < 0) chosen_st = st;
  if (chosen_st == KILN_MISSING_CPU_FEATURE)
    return kiln_error(KILN_MISSING_CPU_FEATURE,
                      nv ? KM(THIS_CPU_LACKS_VARIANT_FEATURES) : KM(THIS_CPU_LACKS_FEATURES), why);
  if (chosen_st != KILN_OK) return chosen_st; /* (KILN_UNSUPPORTED, its message set) */
  m->variant = (uint32_t)chosen;
  return KILN_OK;
}

kiln_status kiln_use_variant(kiln_loader* ld, uint32_t v) {
  fbr* R = &ld->r;
  ld->variant = ld->variants[v];
  ld->code_size =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->variant, KILN_ABI_PACKAGE_CODE)), 1, &ld->code);
  KILN_FB_CHECK(R);
  if (!ld->static_id && (!ld->code || !ld->code_size))
    return kiln_invalid(KM(A_VARIANT_WITHOUT_KERNEL_CODE));
  return KILN_OK;
}

/* The stages that load one variant (its target checked). */
static kiln_status load_variant(kiln_loader* ld) {
  KILN_RETURN_IF_ERROR(kiln_load_tensors(ld));
  KILN_RETURN_IF_ERROR(kiln_load_symbols(ld));
  KILN_RETURN_IF_ERROR(kiln_load_slots(ld));
  KILN_RETURN_IF_ERROR(kiln_load_code(ld));
  KILN_RETURN_IF_ERROR(kiln_load_schedule(ld));
  KILN_RETURN_IF_ERROR(kiln_load_loops(ld));
  return kiln_verify_memory_plan(ld);
}

kiln_status kiln_package_load(kiln_model* m, int verify_checksums, const kiln_trust* trust,
                              const char* variant) {
  kiln_loader ld;
  memset(&ld, 0, sizeof ld);
  ld.m = m;
  ld.r.buf = m->buf;
  ld.r.size = m->size;
  ld.verify_checksums = verify_checksums;
  ld.trust = trust;
  ld.want_variant = variant;
  kiln_status st = kiln_verify_header(&ld);
  if (st == KILN_OK) st = kiln_verify_signature(&ld);
  if (st == KILN_OK) st = kiln_verify_checksums(&ld);
  if (st == KILN_OK) st = kiln_select_variant(&ld);
  /* Every variant is verified as a package of its own (the others' code is mapped and released,
   * never run); the chosen one last, and kept. */
  for (uint32_t k = 1; k <= m->num_variants && st == KILN_OK; ++k) {
    uint32_t v = (m->variant + k) % m->num_variants;
    st = kiln_use_variant(&ld, v);
    if (st == KILN_OK) st = load_variant(&ld);
    if (st != KILN_OK && m->num_variants > 1)
      st = kiln_error_context(st, "variant ", m->variant_cpu[v]);
    if (k < m->num_variants) kiln_package_unload(m);
  }
  if (st != KILN_OK) kiln_package_unload(m);
  return st;
}

void kiln_package_unload(kiln_model* m) {
  const kiln_allocator* a = kiln_model_allocator(m);
  if (m->code.base) kiln_elf_unload(&m->code);
  kiln_free(a, m->inputs);
  kiln_free(a, m->outputs);
  kiln_free(a, m->slots);
  kiln_free(a, m->kernel_descs);
  kiln_free(a, (void*)m->kernels);
  kiln_free(a, m->launches);
  kiln_free(a, m->groups);
  kiln_free(a, (void*)m->selftest_inputs);
  kiln_free(a, (void*)m->selftest_outputs);
  kiln_free(a, m->tensor_copy[0]);
  kiln_free(a, m->tensor_copy[1]);
  kiln_free(a, m->symbol_copy);
  kiln_free(a, m->loops);
  m->loops = NULL;
  m->num_loops = 0;
  m->symbol_copy = NULL;
  m->num_symbols = 0;
  m->num_counts = 0;
  kiln_free(a, m->kernel_strings);
  kiln_free(a, m->launch_strings);
  kiln_free(a, m->launch_args);
  m->tensor_copy[0] = m->tensor_copy[1] = NULL;
  m->kernel_strings = m->launch_strings = NULL;
  m->launch_args = NULL;
  m->inputs = m->outputs = NULL;
  m->slots = NULL;
  m->kernel_descs = NULL;
  m->kernels = NULL;
  m->launches = NULL;
  m->groups = NULL;
  m->selftest_inputs = m->selftest_outputs = NULL;
  m->num_inputs = m->num_outputs = m->num_slots = m->num_kernels = 0;
  m->num_launches = m->num_groups = 0;
  m->has_selftest = 0;
}
