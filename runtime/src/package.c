/* Verification of a package before anything in it is trusted (ARCHITECTURE section 5): the
 * FlatBuffer's structure and bounds, the format version, checksums, the target and CPU features,
 * every offset and size inside its region, every index in range, argument counts and dtypes, the
 * memory plan's overlap proof and write-before-read of the schedule; then the kernels' ELF.
 * After this, the hot path runs without checks. */
#include <stdlib.h>
#include <string.h>

#include "fb_reader.h"
#include "internal.h"

/* Field indices (schema/kiln.fbs declaration order). */
enum { PKG_PROVENANCE, PKG_TARGET, PKG_INPUTS, PKG_OUTPUTS, PKG_KERNELS, PKG_CODE, PKG_CONSTANTS, PKG_SLOTS,
       PKG_ARENA_SIZE, PKG_ARENA_ALIGNMENT, PKG_ARENA_LOWER_BOUND, PKG_GROUPS, PKG_SECTIONS, PKG_METADATA_CRC,
       PKG_SELFTEST, PKG_STATIC_KERNELS_ID };
enum { ST_INPUTS, ST_OUTPUTS, ST_TOLERANCE };
enum { STT_DATA };
enum { PROV_MAJOR, PROV_MINOR, PROV_PRODUCER, PROV_FLAGS, PROV_SHA };
enum { TGT_TRIPLE, TGT_CPU, TGT_FEATURES };
enum { TI_NAME, TI_DTYPE, TI_SHAPE, TI_SLOT };
enum { K_NAME, K_ENTRY, K_NUM_ARGS, K_ARG_DTYPES };
enum { S_KIND, S_INDEX, S_OFFSET, S_SIZE, S_FIRST, S_LAST, S_DTYPE, S_NUMEL };
enum { L_KERNEL, L_ARGS, L_NTASKS };
enum { G_LAUNCHES };
enum { SEC_NAME, SEC_CRC, SEC_SIZE };

#define KILN_FORMAT_MAJOR 1u
#define KILN_MAX_TASKS (1u << 20)

static kiln_status invalid(const char* what) { return kiln_error(KILN_INVALID_PACKAGE, "invalid package: %s", what); }

static kiln_status structure(fbr* r) {
  return kiln_error(KILN_INVALID_PACKAGE, "invalid package: %s at byte offset %llu", r->error, (unsigned long long)r->error_at);
}

#define FB_CHECK(r)                              \
  do {                                           \
    if ((r)->error) return structure(r);         \
  } while (0)

static uint32_t u32_field(fbr* r, uint64_t table, int f) {
  uint64_t p = fbr_field(r, table, f);
  return p ? fbr_u32(r, p) : 0;
}
static uint64_t u64_field(fbr* r, uint64_t table, int f) {
  uint64_t p = fbr_field(r, table, f);
  return p ? fbr_u64(r, p) : 0;
}
static uint8_t u8_field(fbr* r, uint64_t table, int f) {
  uint64_t p = fbr_field(r, table, f);
  return p ? fbr_u8(r, p) : 0;
}

/* The optional self-test: one tensor per input and output, each exactly the tensor's size. */
static kiln_status load_selftest_list(kiln_model* m, fbr* r, uint64_t st, int field, uint32_t n,
                                      const kiln_tensor_desc* td, const uint8_t*** out, const char* what) {
  uint64_t data;
  uint32_t count = fbr_vector(r, fbr_ref(r, fbr_field(r, st, field)), 4, &data);
  FB_CHECK(r);
  if (count != n)
    return kiln_error(KILN_INVALID_PACKAGE, "invalid package: the self-test has %u %s for %u", count, what, n);
  *out = kiln_alloc(kiln_model_allocator(m), (size_t)n * sizeof(void*) + 8, 8);
  if (!*out) return kiln_error(KILN_OUT_OF_MEMORY, "out of memory loading the self-test");
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(r, data, i), bytes;
    uint32_t size = fbr_vector(r, fbr_ref(r, fbr_field(r, t, STT_DATA)), 1, &bytes);
    FB_CHECK(r);
    if (size != td[i].size_bytes)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: self-test %s %u has %u bytes, '%s' has %llu", what, i,
                        size, td[i].name, (unsigned long long)td[i].size_bytes);
    (*out)[i] = m->buf + bytes;
  }
  return KILN_OK;
}

static kiln_status load_selftest(kiln_model* m, fbr* r, uint64_t root) {
  uint64_t st = fbr_ref(r, fbr_field(r, root, PKG_SELFTEST));
  FB_CHECK(r);
  if (!st) return KILN_OK;
  KILN_RETURN_IF_ERROR(load_selftest_list(m, r, st, ST_INPUTS, m->num_inputs, m->inputs, &m->selftest_inputs, "inputs"));
  KILN_RETURN_IF_ERROR(load_selftest_list(m, r, st, ST_OUTPUTS, m->num_outputs, m->outputs, &m->selftest_outputs, "outputs"));
  uint64_t tp = fbr_field(r, st, ST_TOLERANCE);
  uint32_t bits = tp ? fbr_u32(r, tp) : 0;
  FB_CHECK(r);
  float tol;
  memcpy(&tol, &bits, 4);
  if (!(tol >= 0.0f && tol <= 1.0f)) return invalid("the self-test tolerance is not in [0, 1]");
  m->selftest_tolerance = tol;
  m->has_selftest = 1;
  return KILN_OK;
}

static int ranges_overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn) { return a < b + bn && b < a + an; }

static kiln_status load_tensors(kiln_model* m, fbr* r, uint64_t root, int field, kiln_tensor_desc** out, uint32_t* count) {
  uint64_t data;
  uint32_t n = fbr_vector(r, fbr_ref(r, fbr_field(r, root, field)), 4, &data);
  FB_CHECK(r);
  *count = n;
  *out = kiln_alloc(kiln_model_allocator(m), (size_t)n * sizeof(kiln_tensor_desc) + 1, 8);
  if (!*out) return kiln_error(KILN_OUT_OF_MEMORY, "out of memory loading tensor descriptions");
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(r, data, i);
    kiln_tensor_desc* d = &(*out)[i];
    d->name = fbr_string(r, fbr_ref(r, fbr_field(r, t, TI_NAME)));
    d->dtype = u8_field(r, t, TI_DTYPE);
    uint64_t shape;
    d->rank = fbr_vector(r, fbr_ref(r, fbr_field(r, t, TI_SHAPE)), 8, &shape);
    d->slot = u32_field(r, t, TI_SLOT);
    FB_CHECK(r);
    if (!d->name) return invalid("a tensor without a name");
    if (shape % 8 && d->rank) return invalid("a misaligned shape");
    d->shape = d->rank ? (const int64_t*)(m->buf + shape) : NULL;
    if (kiln_dtype_size((kiln_dtype)d->dtype) == 0)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: tensor '%s' has dtype %u", d->name, d->dtype);
    uint64_t numel = 1;
    for (uint32_t k = 0; k < d->rank; ++k)
      if (d->shape[k] < 0 || kiln_mul_overflow(numel, (uint64_t)d->shape[k], &numel))
        return kiln_error(KILN_INVALID_PACKAGE, "invalid package: tensor '%s' has a bad shape", d->name);
    if (kiln_mul_overflow(numel, kiln_dtype_size((kiln_dtype)d->dtype), &d->size_bytes))
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: tensor '%s' is too large", d->name);
  }
  return KILN_OK;
}

kiln_status kiln_package_load(kiln_model* m, int verify_checksums) {
  fbr r = {m->buf, m->size, NULL, 0};
  fbr* R = &r;
  if (m->size < 8) return invalid("shorter than a FlatBuffers header");
  if (memcmp(m->buf + 4, "KILN", 4) != 0) return invalid("not a kiln package (the file identifier is not KILN)");
  uint64_t root = fbr_u32(R, 0);
  FB_CHECK(R);
  if (root == 0 || root >= m->size) return invalid("root table out of bounds");

  /* Format version. */
  uint64_t prov = fbr_ref(R, fbr_field(R, root, PKG_PROVENANCE));
  FB_CHECK(R);
  if (!prov) return invalid("no provenance");
  uint32_t major = u32_field(R, prov, PROV_MAJOR), minor = u32_field(R, prov, PROV_MINOR);
  FB_CHECK(R);
  if (major != KILN_FORMAT_MAJOR)
    return kiln_error(KILN_UNSUPPORTED, "package format %u.%u; this runtime reads format %u.x", major, minor, KILN_FORMAT_MAJOR);

  /* Blobs and checksums. */
  uint64_t code, consts;
  uint32_t code_size = fbr_vector(R, fbr_ref(R, fbr_field(R, root, PKG_CODE)), 1, &code);
  uint32_t const_size = fbr_vector(R, fbr_ref(R, fbr_field(R, root, PKG_CONSTANTS)), 1, &consts);
  uint64_t crc_field = fbr_field(R, root, PKG_METADATA_CRC);
  uint32_t static_id = u32_field(R, root, PKG_STATIC_KERNELS_ID);
  FB_CHECK(R);
  if (static_id) {
    if (code_size) return invalid("a static-library package with kernel code");
    if (!m->static_table)
      return kiln_error(KILN_INVALID_PACKAGE,
                        "invalid package: its kernels are in a static library (--emit static-lib): load it with "
                        "kiln_model_load_static and the library's NAME_kernels");
  } else {
    if (!code || !code_size) return invalid("no kernel code");
    if (m->static_table)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: it carries its own kernel code; load it with "
                                              "kiln_model_load_memory (kiln_model_load_static is for --emit static-lib)");
  }
  if (const_size && consts % 64) return invalid("the constants are not 64-byte aligned");
  if (verify_checksums) {
    if (!crc_field) return invalid("no metadata checksum");
    uint32_t want = fbr_u32(R, crc_field);
    /* The metadata checksum: the whole buffer with the two payloads skipped (they have their own
     * checksums) and the checksum field read as zero. */
    uint32_t crc = 0;
    uint64_t regions[3][2] = {{code, code_size}, {const_size ? consts : 0, const_size}, {crc_field, 4}};
    for (int i = 0; i < 3; ++i)
      for (int j = i + 1; j < 3; ++j)
        if (regions[j][0] < regions[i][0]) {
          uint64_t a = regions[i][0], b = regions[i][1];
          regions[i][0] = regions[j][0];
          regions[i][1] = regions[j][1];
          regions[j][0] = a;
          regions[j][1] = b;
        }
    uint64_t pos = 0;
    static const uint8_t zeros[4] = {0, 0, 0, 0};
    for (int i = 0; i < 3; ++i) {
      if (!regions[i][1]) continue;
      if (regions[i][0] < pos) return invalid("overlapping sections");
      crc = kiln_crc32c(crc, m->buf + pos, (size_t)(regions[i][0] - pos));
      if (regions[i][0] == crc_field) crc = kiln_crc32c(crc, zeros, 4);
      pos = regions[i][0] + regions[i][1];
    }
    crc = kiln_crc32c(crc, m->buf + pos, (size_t)(m->size - pos));
    if (crc != want) return kiln_error(KILN_CHECKSUM_MISMATCH, "checksum mismatch in the package metadata (the file is corrupt)");
    uint64_t secs;
    uint32_t nsec = fbr_vector(R, fbr_ref(R, fbr_field(R, root, PKG_SECTIONS)), 4, &secs);
    FB_CHECK(R);
    int seen = 0;
    for (uint32_t i = 0; i < nsec; ++i) {
      uint64_t s = fbr_table_at(R, secs, i);
      const char* name = fbr_string(R, fbr_ref(R, fbr_field(R, s, SEC_NAME)));
      uint32_t sc = u32_field(R, s, SEC_CRC);
      uint64_t ss = u64_field(R, s, SEC_SIZE);
      FB_CHECK(R);
      if (!name) return invalid("a section without a name");
      const uint8_t* data = NULL;
      uint64_t size = 0;
      if (!strcmp(name, "code")) data = m->buf + code, size = code_size, seen |= 1;
      else if (!strcmp(name, "constants")) data = const_size ? m->buf + consts : m->buf, size = const_size, seen |= 2;
      else continue;
      if (size != ss || kiln_crc32c(0, data, (size_t)size) != sc)
        return kiln_error(KILN_CHECKSUM_MISMATCH, "checksum mismatch in section '%s' (the file is corrupt)", name);
    }
    if (seen != 3) return invalid("the code and constants sections must both have checksums");
  }

  /* Target and CPU features. */
  uint64_t tgt = fbr_ref(R, fbr_field(R, root, PKG_TARGET));
  FB_CHECK(R);
  if (!tgt) return invalid("no target");
  const char* triple = fbr_string(R, fbr_ref(R, fbr_field(R, tgt, TGT_TRIPLE)));
  FB_CHECK(R);
  if (!triple) return invalid("no target triple");
  const char* arch = kiln_runtime_arch();
  if (strncmp(triple, arch, strlen(arch)) != 0 || (triple[strlen(arch)] != '-' && triple[strlen(arch)] != 0))
    return kiln_error(KILN_UNSUPPORTED, "the package is compiled for %s; this runtime runs %s", triple, arch);
  uint64_t feats;
  uint32_t nfeat = fbr_vector(R, fbr_ref(R, fbr_field(R, tgt, TGT_FEATURES)), 4, &feats);
  FB_CHECK(R);
  char missing[512] = "";
  for (uint32_t i = 0; i < nfeat; ++i) {
    const char* f = fbr_string(R, fbr_ref(R, feats + 4 * (uint64_t)i));
    FB_CHECK(R);
    if (!f) return invalid("a malformed CPU feature");
    int has = kiln_cpu_has_feature(f);
    if (has < 0) return kiln_error(KILN_UNSUPPORTED, "the package requires CPU feature '%s', which this runtime cannot check", f);
    if (!has && strlen(missing) + strlen(f) + 3 < sizeof missing) {
      if (missing[0]) strcat(missing, ", ");
      strcat(missing, f);
    }
  }
  if (missing[0]) return kiln_error(KILN_MISSING_CPU_FEATURE, "this CPU lacks features the package needs: %s", missing);

  /* Inputs and outputs. */
  KILN_RETURN_IF_ERROR(load_tensors(m, R, root, PKG_INPUTS, &m->inputs, &m->num_inputs));
  KILN_RETURN_IF_ERROR(load_tensors(m, R, root, PKG_OUTPUTS, &m->outputs, &m->num_outputs));

  KILN_RETURN_IF_ERROR(load_selftest(m, R, root));

  /* Arena. */
  m->arena_size = u64_field(R, root, PKG_ARENA_SIZE);
  m->arena_alignment = u32_field(R, root, PKG_ARENA_ALIGNMENT);
  FB_CHECK(R);
  if (m->arena_alignment == 0 || (m->arena_alignment & (m->arena_alignment - 1)) || m->arena_alignment > 4096)
    return invalid("the arena alignment is not a power of two up to 4096");
  m->constants = const_size ? m->buf + consts : NULL;
  m->constants_size = const_size;

  /* Slots. */
  uint64_t sdata;
  m->num_slots = fbr_vector(R, fbr_ref(R, fbr_field(R, root, PKG_SLOTS)), 4, &sdata);
  FB_CHECK(R);
  m->slots = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_slots * sizeof(kiln_slot_desc) + 1, 8);
  if (!m->slots) return kiln_error(KILN_OUT_OF_MEMORY, "out of memory loading slots");
  for (uint32_t i = 0; i < m->num_slots; ++i) {
    uint64_t t = fbr_table_at(R, sdata, i);
    kiln_slot_desc* s = &m->slots[i];
    s->kind = u8_field(R, t, S_KIND);
    s->index = u32_field(R, t, S_INDEX);
    s->offset = u64_field(R, t, S_OFFSET);
    s->size = u64_field(R, t, S_SIZE);
    s->first_group = u32_field(R, t, S_FIRST);
    s->last_group = u32_field(R, t, S_LAST);
    s->dtype = u8_field(R, t, S_DTYPE);
    uint64_t numel = u64_field(R, t, S_NUMEL), bytes;
    FB_CHECK(R);
    size_t es = kiln_dtype_size((kiln_dtype)s->dtype);
    if (!es) return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u has dtype %u", i, s->dtype);
    if (kiln_mul_overflow(numel, es, &bytes) || bytes != s->size)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u size %llu does not match %llu elements", i,
                        (unsigned long long)s->size, (unsigned long long)numel);
    switch (s->kind) {
      case KILN_SLOT_ARENA: {
        uint64_t end;
        if (kiln_add_overflow(s->offset, s->size, &end) || end > m->arena_size || s->offset % es)
          return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u lies outside the arena or is misaligned", i);
        if (s->first_group > s->last_group) return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u has an empty lifetime", i);
        break;
      }
      case KILN_SLOT_CONSTANT: {
        uint64_t end;
        if (kiln_add_overflow(s->offset, s->size, &end) || end > m->constants_size || s->offset % es)
          return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u lies outside the constants or is misaligned", i);
        break;
      }
      case KILN_SLOT_INPUT:
      case KILN_SLOT_OUTPUT: {
        uint32_t n = s->kind == KILN_SLOT_INPUT ? m->num_inputs : m->num_outputs;
        const kiln_tensor_desc* td = s->kind == KILN_SLOT_INPUT ? m->inputs : m->outputs;
        if (s->index >= n || td[s->index].slot != i || td[s->index].dtype != s->dtype || td[s->index].size_bytes != s->size)
          return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u does not match %s %u", i,
                            s->kind == KILN_SLOT_INPUT ? "input" : "output", s->index);
        break;
      }
      default: return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u has kind %u", i, s->kind);
    }
  }
  for (uint32_t i = 0; i < m->num_inputs; ++i)
    if (m->inputs[i].slot >= m->num_slots || m->slots[m->inputs[i].slot].kind != KILN_SLOT_INPUT)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: input '%s' has no input slot", m->inputs[i].name);
  for (uint32_t i = 0; i < m->num_outputs; ++i)
    if (m->outputs[i].slot >= m->num_slots || m->slots[m->outputs[i].slot].kind != KILN_SLOT_OUTPUT)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: output '%s' has no output slot", m->outputs[i].name);

  /* Kernels. */
  uint64_t kdata;
  m->num_kernels = fbr_vector(R, fbr_ref(R, fbr_field(R, root, PKG_KERNELS)), 4, &kdata);
  FB_CHECK(R);
  uint32_t* kernel_entry = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_kernels * 4 + 4, 4);
  uint32_t* kernel_nargs = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_kernels * 4 + 4, 4);
  const uint8_t** kernel_dtypes = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_kernels * sizeof(void*) + 8, 8);
  m->kernel_names = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_kernels * sizeof(char*) + 8, 8);
  m->kernels = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_kernels * sizeof(kiln_kernel_fn) + 8, 8);
  kiln_status st = KILN_OK;
  if (!kernel_entry || !kernel_nargs || !kernel_dtypes || !m->kernel_names || !m->kernels) {
    st = kiln_error(KILN_OUT_OF_MEMORY, "out of memory loading kernels");
    goto done;
  }
  for (uint32_t i = 0; i < m->num_kernels; ++i) {
    uint64_t t = fbr_table_at(R, kdata, i);
    m->kernel_names[i] = fbr_string(R, fbr_ref(R, fbr_field(R, t, K_NAME)));
    kernel_entry[i] = u32_field(R, t, K_ENTRY);
    kernel_nargs[i] = u32_field(R, t, K_NUM_ARGS);
    uint64_t dts;
    uint32_t ndt = fbr_vector(R, fbr_ref(R, fbr_field(R, t, K_ARG_DTYPES)), 1, &dts);
    if (R->error) {
      st = structure(R);
      goto done;
    }
    if (!m->kernel_names[i] || ndt != kernel_nargs[i] || kernel_nargs[i] == 0) {
      st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: kernel %u has a bad name or argument list", i);
      goto done;
    }
    kernel_dtypes[i] = m->buf + dts;
  }

  /* The schedule: groups of launches; argument counts and dtypes; write-before-read. */
  {
    uint64_t gdata;
    m->num_groups = fbr_vector(R, fbr_ref(R, fbr_field(R, root, PKG_GROUPS)), 4, &gdata);
    if (R->error) {
      st = structure(R);
      goto done;
    }
    m->groups = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_groups * sizeof(kiln_group_desc) + 8, 8);
    /* First pass: count launches. */
    uint64_t total = 0;
    for (uint32_t g = 0; g < m->num_groups; ++g) {
      uint64_t gt = fbr_table_at(R, gdata, g), ld;
      total += fbr_vector(R, fbr_ref(R, fbr_field(R, gt, G_LAUNCHES)), 4, &ld);
    }
    if (R->error) {
      st = structure(R);
      goto done;
    }
    if (total > (1u << 24)) {
      st = invalid("too many launches");
      goto done;
    }
    m->num_launches = (uint32_t)total;
    m->launches = kiln_alloc(kiln_model_allocator(m), (size_t)total * sizeof(kiln_launch_desc) + 8, 8);
    int32_t* written = kiln_alloc(kiln_model_allocator(m), (size_t)m->num_slots * sizeof(int32_t) + 8, 8);
    if (!m->groups || !m->launches || !written) {
      kiln_free(kiln_model_allocator(m), written);
      st = kiln_error(KILN_OUT_OF_MEMORY, "out of memory loading the schedule");
      goto done;
    }
    for (uint32_t s = 0; s < m->num_slots; ++s) written[s] = (m->slots[s].kind == KILN_SLOT_INPUT || m->slots[s].kind == KILN_SLOT_CONSTANT) ? -1 : INT32_MAX;
    uint32_t li = 0;
    for (uint32_t g = 0; g < m->num_groups && st == KILN_OK; ++g) {
      uint64_t gt = fbr_table_at(R, gdata, g), ld;
      uint32_t nl = fbr_vector(R, fbr_ref(R, fbr_field(R, gt, G_LAUNCHES)), 4, &ld);
      m->groups[g].first_launch = li;
      m->groups[g].num_launches = nl;
      uint64_t items = 0;
      for (uint32_t k = 0; k < nl && st == KILN_OK; ++k, ++li) {
        uint64_t lt = fbr_table_at(R, ld, k), args;
        kiln_launch_desc* L = &m->launches[li];
        L->kernel = u32_field(R, lt, L_KERNEL);
        L->nargs = fbr_vector(R, fbr_ref(R, fbr_field(R, lt, L_ARGS)), 4, &args);
        L->ntasks = u32_field(R, lt, L_NTASKS);
        if (R->error) {
          st = structure(R);
          break;
        }
        if (L->kernel >= m->num_kernels) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u names kernel %u of %u", li, L->kernel, m->num_kernels);
        else if (L->nargs != kernel_nargs[L->kernel]) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u passes %u arguments, kernel %s takes %u", li, L->nargs, m->kernel_names[L->kernel], kernel_nargs[L->kernel]);
        else if (L->ntasks == 0 || L->ntasks > KILN_MAX_TASKS) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u has %u tasks", li, L->ntasks);
        else if (args % 4) st = invalid("misaligned launch arguments");
        if (st != KILN_OK) break;
        L->args = (const uint32_t*)(m->buf + args);
        items += L->ntasks;
        for (uint32_t a = 0; a < L->nargs && st == KILN_OK; ++a) {
          uint32_t s = L->args[a];
          if (s >= m->num_slots) {
            st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u argument %u names slot %u of %u", li, a, s, m->num_slots);
            break;
          }
          const kiln_slot_desc* sd = &m->slots[s];
          if (sd->dtype != kernel_dtypes[L->kernel][a]) {
            st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u argument %u has dtype %u, kernel %s wants %u", li, a, sd->dtype, m->kernel_names[L->kernel], kernel_dtypes[L->kernel][a]);
            break;
          }
          if (a == 0) {
            if (sd->kind != KILN_SLOT_ARENA && sd->kind != KILN_SLOT_OUTPUT) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u writes an input or a constant (slot %u)", li, s);
            else if (written[s] != INT32_MAX) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u is written twice", s);
            else if (sd->kind == KILN_SLOT_ARENA && sd->first_group > g) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u is written in group %u before its lifetime starts", s, g);
          } else {
            if (written[s] >= (int32_t)g) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u in group %u reads slot %u before it is written", li, g, s);
            else if (sd->kind == KILN_SLOT_ARENA && sd->last_group < g) st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u is read in group %u after its lifetime ends", s, g);
          }
        }
        if (st == KILN_OK) {
          uint32_t out = L->args[0];
          if (written[out] == INT32_MAX) written[out] = -2; /* written in this group: visible from the next */
        }
      }
      if (st == KILN_OK && items > UINT32_MAX) st = invalid("too many tasks in a group");
      m->groups[g].num_items = (uint32_t)items;
      for (uint32_t s = 0; s < m->num_slots; ++s)
        if (written[s] == -2) written[s] = (int32_t)g;
    }
    for (uint32_t s = 0; s < m->num_slots && st == KILN_OK; ++s)
      /* (An empty tensor has nothing to write.) */
      if ((m->slots[s].kind == KILN_SLOT_OUTPUT || m->slots[s].kind == KILN_SLOT_ARENA) && written[s] == INT32_MAX &&
          m->slots[s].size != 0)
        st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: %s slot %u is never written", m->slots[s].kind == KILN_SLOT_OUTPUT ? "output" : "arena", s);
    kiln_free(kiln_model_allocator(m), written);
    if (st != KILN_OK) goto done;
  }

  /* The memory plan: arena slots live at the same time never overlap. */
  for (uint32_t i = 0; i < m->num_slots; ++i) {
    const kiln_slot_desc* a = &m->slots[i];
    if (a->kind != KILN_SLOT_ARENA) continue;
    if (a->last_group >= m->num_groups) {
      st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u lives past the last group", i);
      goto done;
    }
    for (uint32_t j = i + 1; j < m->num_slots; ++j) {
      const kiln_slot_desc* b = &m->slots[j];
      if (b->kind != KILN_SLOT_ARENA) continue;
      int live = a->first_group <= b->last_group && b->first_group <= a->last_group;
      if (live && ranges_overlap(a->offset, a->size, b->offset, b->size)) {
        st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: arena slots %u and %u overlap while both are live", i, j);
        goto done;
      }
    }
  }

  /* The kernels' code: the package's shared object, or the entry table linked into the
   * application (the same layout: magic, version, count, id, entries). */
  if (static_id) {
    uint32_t head[4];
    memcpy(head, m->static_table, sizeof head);
    if (head[0] != KILN_TABLE_MAGIC || head[1] != KILN_TABLE_VERSION) {
      st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: kiln_model_load_static: |kernels| is not a kiln entry table");
      goto done;
    }
    if (head[3] != static_id) {
      st = kiln_error(KILN_INVALID_PACKAGE,
                      "invalid package: the linked kernels (id %08x) belong to another package (id %08x)", head[3], static_id);
      goto done;
    }
    m->code.entries = (const kiln_kernel_fn*)((const uint8_t*)m->static_table + 16);
    m->code.num_entries = head[2];
  } else {
    st = kiln_elf_load(m->buf + code, code_size, &m->code);
    if (st != KILN_OK) goto done;
  }
  for (uint32_t i = 0; i < m->num_kernels; ++i) {
    if (kernel_entry[i] >= m->code.num_entries) {
      st = kiln_error(KILN_INVALID_PACKAGE, "invalid package: kernel %s is entry %u of %u", m->kernel_names[i], kernel_entry[i], m->code.num_entries);
      goto done;
    }
    m->kernels[i] = m->code.entries[kernel_entry[i]];
  }

done:
  kiln_free(kiln_model_allocator(m), kernel_entry);
  kiln_free(kiln_model_allocator(m), kernel_nargs);
  kiln_free(kiln_model_allocator(m), (void*)kernel_dtypes);
  return st;
}

void kiln_package_unload(kiln_model* m) {
  const kiln_allocator* a = kiln_model_allocator(m);
  kiln_elf_unload(&m->code);
  kiln_free(a, m->inputs);
  kiln_free(a, m->outputs);
  kiln_free(a, m->slots);
  kiln_free(a, (void*)m->kernel_names);
  kiln_free(a, (void*)m->kernels);
  kiln_free(a, m->launches);
  kiln_free(a, m->groups);
  kiln_free(a, (void*)m->selftest_inputs);
  kiln_free(a, (void*)m->selftest_outputs);
}
