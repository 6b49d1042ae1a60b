/* Loader stages: the model's tensors (inputs, outputs and the optional self-test) and the
 * memory slots, each checked against the tensor it holds. */
#include <string.h>

#include "package_loader.h"

/* The tensors of vector field |field| of the root (list |which|: 0 inputs, 1 outputs): names,
 * dtypes, shapes and sizes, with the names and shapes copied into one block of the model's. */
static kiln_status load_tensor_list(kiln_loader* ld, int field, int which, kiln_tensor_desc** out,
                                    uint32_t* count) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  const char* what = which ? "outputs" : "inputs";
  uint64_t data;
  uint32_t n = fbr_vector(R, fbr_ref(R, fbr_field(R, ld->variant, field)), 4, &data);
  KILN_FB_CHECK(R);
  if (n > KILN_ABI_MAX_TENSORS)
    return kiln_invalid(KM(THE_LIMIT_IS), n, what, KILN_ABI_MAX_TENSORS);
  *out = kiln_alloc(kiln_model_allocator(m), (size_t)n * sizeof(kiln_tensor_desc) + 1, 8);
  if (!*out) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_TENSOR_DESCRIPTIONS));
  memset(*out, 0, (size_t)n * sizeof(kiln_tensor_desc));
  *count = n;
  /* Pass 1: read and check each tensor, and size the copy. */
  uint64_t copy_bytes = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(R, data, i), shape;
    kiln_tensor_desc* d = &(*out)[i];
    const char* name = fbr_string(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_TENSOR_INFO_NAME)));
    d->dtype = kiln_fb_u8_field(R, t, KILN_ABI_TENSOR_INFO_DTYPE);
    d->rank = fbr_vector(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_TENSOR_INFO_SHAPE)), 8, &shape);
    d->slot = kiln_fb_u32_field(R, t, KILN_ABI_TENSOR_INFO_SLOT);
    KILN_FB_CHECK(R);
    if (!name) return kiln_invalid(KM(A_TENSOR_WITHOUT_A_NAME));
    if (d->rank > KILN_ABI_MAX_RANK)
      return kiln_invalid(KM(TENSOR_HAS_RANK_THE_LIMIT_IS), name, d->rank, KILN_ABI_MAX_RANK);
    if (kiln_dtype_size((kiln_dtype)d->dtype) == 0)
      return kiln_invalid(KM(TENSOR_HAS_DTYPE), name, d->dtype);
    uint64_t numel = 1;
    for (uint32_t k = 0; k < d->rank; ++k) {
      int64_t dim;
      memcpy(&dim, m->buf + shape + 8 * (uint64_t)k, 8);
      if (dim < 0 || kiln_mul_overflow(numel, (uint64_t)dim, &numel))
        return kiln_invalid(KM(TENSOR_HAS_A_BAD_SHAPE), name);
    }
    if (kiln_mul_overflow(numel, kiln_dtype_size((kiln_dtype)d->dtype), &d->size_bytes))
      return kiln_invalid(KM(TENSOR_IS_TOO_LARGE), name);
    d->name = name; /* (for messages, until the copy below) */
    copy_bytes += 8 * (uint64_t)d->rank + strlen(name) + 1;
  }
  /* Pass 2: the copies, shapes first (they need 8-byte alignment), then the names. The fields
   * are read again: pass 1 proved them in bounds. */
  uint8_t* copy = kiln_alloc(kiln_model_allocator(m), (size_t)copy_bytes + 8, 8);
  if (!copy) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_COPYING_TENSOR_DESCRIPTIONS));
  m->tensor_copy[which] = copy;
  int64_t* dims = (int64_t*)copy;
  uint64_t total_dims = 0;
  for (uint32_t i = 0; i < n; ++i) total_dims += (*out)[i].rank;
  char* names = (char*)(dims + total_dims);
  for (uint32_t i = 0; i < n; ++i) {
    kiln_tensor_desc* d = &(*out)[i];
    uint64_t t = fbr_table_at(R, data, i), shape;
    fbr_vector(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_TENSOR_INFO_SHAPE)), 8, &shape);
    const char* name = fbr_string(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_TENSOR_INFO_NAME)));
    KILN_FB_CHECK(R);
    memcpy(dims, m->buf + shape, 8 * (size_t)d->rank);
    d->shape = d->rank ? dims : NULL;
    dims += d->rank;
    size_t len = strlen(name) + 1;
    memcpy(names, name, len);
    d->name = names;
    names += len;
  }
  return KILN_OK;
}

/* One list of the self-test: a tensor per input (or output), each exactly the tensor's size. */
static kiln_status load_selftest_list(kiln_loader* ld, uint64_t st, int field, uint32_t n,
                                      const kiln_tensor_desc* td, const uint8_t*** out,
                                      const char* what) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint64_t data;
  uint32_t count = fbr_vector(R, fbr_ref(R, fbr_field(R, st, field)), 4, &data);
  KILN_FB_CHECK(R);
  if (count != n) return kiln_invalid(KM(THE_SELF_TEST_HAS_FOR), count, what, n);
  *out = kiln_alloc(kiln_model_allocator(m), (size_t)n * sizeof(void*) + 8, 8);
  if (!*out) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_THE_SELF));
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(R, data, i), bytes;
    uint32_t size =
        fbr_vector(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_SELFTEST_TENSOR_DATA)), 1, &bytes);
    KILN_FB_CHECK(R);
    if (size != td[i].size_bytes)
      return kiln_invalid(KM(SELF_TEST_HAS_BYTES_HAS), what, i, size, td[i].name,
                          (unsigned long long)td[i].size_bytes);
    (*out)[i] = m->buf + bytes;
  }
  return KILN_OK;
}

static kiln_status load_selftest(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint64_t st = fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_SELFTEST));
  KILN_FB_CHECK(R);
  if (!st) return KILN_OK;
  KILN_RETURN_IF_ERROR(load_selftest_list(ld, st, KILN_ABI_SELFTEST_INPUTS, m->num_inputs,
                                          m->inputs, &m->selftest_inputs, "inputs"));
  KILN_RETURN_IF_ERROR(load_selftest_list(ld, st, KILN_ABI_SELFTEST_OUTPUTS, m->num_outputs,
                                          m->outputs, &m->selftest_outputs, "outputs"));
  uint32_t bits = kiln_fb_u32_field(R, st, KILN_ABI_SELFTEST_TOLERANCE);
  KILN_FB_CHECK(R);
  float tol;
  memcpy(&tol, &bits, 4);
  if (!(tol >= 0.0f && tol <= 1.0f)) return kiln_invalid(KM(THE_SELF_TEST_TOLERANCE_IS_NOT));
  m->selftest_tolerance = tol;
  m->has_selftest = 1;
  return KILN_OK;
}

kiln_status kiln_load_tensors(kiln_loader* ld) {
  kiln_model* m = ld->m;
  KILN_RETURN_IF_ERROR(
      load_tensor_list(ld, KILN_ABI_PACKAGE_INPUTS, 0, &m->inputs, &m->num_inputs));
  KILN_RETURN_IF_ERROR(
      load_tensor_list(ld, KILN_ABI_PACKAGE_OUTPUTS, 1, &m->outputs, &m->num_outputs));
  return load_selftest(ld);
}

/* Slot |i|'s place: inside the arena or the constants, or the input/output it names (which
 * must name it back, with its dtype and size). */
static kiln_status check_slot(const kiln_model* m, uint32_t i, const kiln_slot_desc* s, size_t es) {
  uint64_t end;
  switch (s->kind) {
    case KILN_ABI_SLOT_ARENA:
      if (kiln_add_overflow(s->offset, s->size, &end) || end > m->arena_size || s->offset % es)
        return kiln_invalid(KM(SLOT_LIES_OUTSIDE_THE_ARENA_OR), i);
      if (s->first_group > s->last_group) return kiln_invalid(KM(SLOT_HAS_AN_EMPTY_LIFETIME), i);
      return KILN_OK;
    case KILN_ABI_SLOT_CONSTANT:
      if (kiln_add_overflow(s->offset, s->size, &end) || end > m->constants_size || s->offset % es)
        return kiln_invalid(KM(SLOT_LIES_OUTSIDE_THE_CONSTANTS_OR), i);
      return KILN_OK;
    case KILN_ABI_SLOT_INPUT:
    case KILN_ABI_SLOT_OUTPUT: {
      int input = s->kind == KILN_ABI_SLOT_INPUT;
      uint32_t n = input ? m->num_inputs : m->num_outputs;
      const kiln_tensor_desc* td = input ? m->inputs : m->outputs;
      if (s->index >= n || td[s->index].slot != i || td[s->index].dtype != s->dtype ||
          td[s->index].size_bytes != s->size)
        return kiln_invalid(KM(SLOT_DOES_NOT_MATCH), i, input ? "input" : "output", s->index);
      return KILN_OK;
    }
    default:
      return kiln_invalid(KM(SLOT_HAS_KIND), i, s->kind);
  }
}

kiln_status kiln_load_slots(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  m->arena_size = kiln_fb_u64_field(R, ld->variant, KILN_ABI_PACKAGE_ARENA_SIZE);
  m->arena_alignment = kiln_fb_u32_field(R, ld->variant, KILN_ABI_PACKAGE_ARENA_ALIGNMENT);
  KILN_FB_CHECK(R);
  if (m->arena_alignment == 0 || (m->arena_alignment & (m->arena_alignment - 1)) ||
      m->arena_alignment > 4096)
    return kiln_invalid(KM(THE_ARENA_ALIGNMENT_IS_NOT_A));
  if (m->arena_size >= (UINT64_C(1) << 62)) return kiln_invalid(KM(THE_ARENA_IS_TOO_LARGE));

  uint64_t sdata;
  uint32_t n =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->variant, KILN_ABI_PACKAGE_SLOTS)), 4, &sdata);
  KILN_FB_CHECK(R);
  if (n > KILN_ABI_MAX_SLOTS) return kiln_invalid(KM(SLOTS_THE_LIMIT_IS), n, KILN_ABI_MAX_SLOTS);
  m->slots = kiln_alloc(kiln_model_allocator(m), (size_t)n * sizeof(kiln_slot_desc) + 1, 8);
  if (!m->slots) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_SLOTS));
  m->num_slots = n;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(R, sdata, i);
    kiln_slot_desc* s = &m->slots[i];
    s->kind = kiln_fb_u8_field(R, t, KILN_ABI_SLOT_KIND);
    s->index = kiln_fb_u32_field(R, t, KILN_ABI_SLOT_INDEX);
    s->offset = kiln_fb_u64_field(R, t, KILN_ABI_SLOT_OFFSET);
    s->size = kiln_fb_u64_field(R, t, KILN_ABI_SLOT_SIZE);
    s->first_group = kiln_fb_u32_field(R, t, KILN_ABI_SLOT_FIRST_GROUP);
    s->last_group = kiln_fb_u32_field(R, t, KILN_ABI_SLOT_LAST_GROUP);
    s->in_place_of = kiln_fb_u32_field(R, t, KILN_ABI_SLOT_IN_PLACE_OF);
    s->dtype = kiln_fb_u8_field(R, t, KILN_ABI_SLOT_DTYPE);
    uint64_t numel = kiln_fb_u64_field(R, t, KILN_ABI_SLOT_NUMEL), bytes;
    KILN_FB_CHECK(R);
    size_t es = kiln_dtype_size((kiln_dtype)s->dtype);
    if (!es) return kiln_invalid(KM(SLOT_HAS_DTYPE), i, s->dtype);
    if (kiln_mul_overflow(numel, es, &bytes) || bytes != s->size)
      return kiln_invalid(KM(SLOT_SIZE_DOES_NOT_MATCH_ELEMENTS), i, (unsigned long long)s->size,
                          (unsigned long long)numel);
    KILN_RETURN_IF_ERROR(check_slot(m, i, s, es));
  }
  /* One tensor, one slot: each input and output names a slot of its kind that names it back
   * (check_slot proved the other direction, with the dtype and size), so no two tensors share
   * a slot and every I/O slot belongs to exactly one tensor. */
  for (int which = 0; which < 2; ++which) {
    const kiln_tensor_desc* td = which ? m->outputs : m->inputs;
    uint32_t count = which ? m->num_outputs : m->num_inputs;
    uint8_t kind = which ? KILN_ABI_SLOT_OUTPUT : KILN_ABI_SLOT_INPUT;
    for (uint32_t i = 0; i < count; ++i)
      if (td[i].slot >= n || m->slots[td[i].slot].kind != kind || m->slots[td[i].slot].index != i)
        return kiln_invalid(KM(DOES_NOT_OWN_AN_SLOT), which ? "output" : "input", td[i].name,
                            which ? "output" : "input");
  }
  return KILN_OK;
}
