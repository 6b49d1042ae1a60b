/* Loader stage: a symbolic package's dims (format 2.4). The symbols and their bounds; per
 * input, the symbol each axis sets (laid out at its maximum); per output, each axis's extent
 * program, proved well formed and inside the output's layout at the symbols' bounds. Every
 * symbol must be set by some input axis or value, or (format 2.8) by one loop. What is kept is
 * copied into one block of the model's. */
#include <string.h>

#include "package_loader.h"

/* Vector field |field| of table |t|: its length, and its data at *pos. */
static uint32_t field_vector(fbr* R, uint64_t t, int field, uint64_t es, uint64_t* pos) {
  *pos = 0;
  return fbr_vector(R, fbr_ref(R, fbr_field(R, t, field)), es, pos);
}

/* Table i of the variant's inputs (which 0) or outputs (1). */
static uint64_t io_table(kiln_loader* ld, int which, uint32_t i) {
  uint64_t data;
  field_vector(&ld->r, ld->variant, which ? KILN_ABI_PACKAGE_OUTPUTS : KILN_ABI_PACKAGE_INPUTS, 4,
               &data);
  return fbr_table_at(&ld->r, data, i);
}

kiln_status kiln_load_symbols(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint64_t data, pos;
  m->input_dims = m->output_dims = 0;
  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    m->inputs[i].dims_offset = m->input_dims;
    m->input_dims += m->inputs[i].rank;
  }
  for (uint32_t i = 0; i < m->num_outputs; ++i) {
    m->outputs[i].dims_offset = m->output_dims;
    m->output_dims += m->outputs[i].rank;
  }
  uint32_t n = field_vector(R, ld->root, KILN_ABI_PACKAGE_SYMBOLS, 4, &data);
  KILN_FB_CHECK(R);
  if (!n) return KILN_OK; /* a package of one shape: its tensors' symbol fields are not read */
  if (n > KILN_ABI_MAX_SYMBOLS)
    return kiln_invalid(KM(SYMBOLS_THE_LIMIT_IS), n, KILN_ABI_MAX_SYMBOLS);
  /* The copy's size: the programs (8-byte words) and offsets first, then axis symbols, names. */
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < m->num_outputs; ++i)
    bytes +=
        8 * (uint64_t)field_vector(R, io_table(ld, 1, i), KILN_ABI_TENSOR_INFO_EXTENTS, 8, &pos) +
        4 * (uint64_t)m->outputs[i].rank + 16;
  bytes += 4 * (uint64_t)m->input_dims;
  for (uint32_t i = 0; i < m->num_inputs; ++i)
    bytes += 4 * (uint64_t)field_vector(R, io_table(ld, 0, i), KILN_ABI_TENSOR_INFO_VALUE_SYMBOLS,
                                        4, &pos) +
             8;
  uint64_t checks;
  uint32_t nc = field_vector(R, ld->root, KILN_ABI_PACKAGE_CHECKS, 4, &checks);
  if (nc > KILN_ABI_MAX_CHECKS) return kiln_invalid(KM(CHECK_MALFORMED), nc);
  for (uint32_t c = 0; c < nc; ++c) {
    uint64_t t = fbr_table_at(R, checks, c);
    bytes += 8 * (uint64_t)field_vector(R, t, KILN_ABI_CHECK_CODE, 8, &pos) + 8 +
             field_vector(R, t, KILN_ABI_CHECK_MESSAGE, 1, &pos);
  }
  bytes += 8;
  for (uint32_t k = 0; k < n; ++k)
    bytes += 1 + field_vector(R, fbr_table_at(R, data, k), KILN_ABI_SYMBOL_NAME, 1, &pos);
  KILN_FB_CHECK(R);
  uint8_t* p = kiln_alloc(kiln_model_allocator(m), (size_t)bytes + 8, 8);
  if (!p) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_SYMBOLS));
  m->symbol_copy = p;
  int64_t lo[KILN_ABI_MAX_SYMBOLS], hi[KILN_ABI_MAX_SYMBOLS];
  for (uint32_t k = 0; k < n; ++k) {
    uint64_t t = fbr_table_at(R, data, k);
    const char* name = fbr_string(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_SYMBOL_NAME)));
    lo[k] = (int64_t)kiln_fb_u64_field(R, t, KILN_ABI_SYMBOL_MIN);
    hi[k] = (int64_t)kiln_fb_u64_field(R, t, KILN_ABI_SYMBOL_MAX);
    KILN_FB_CHECK(R);
    if (!name || lo[k] > hi[k]) /* (a value symbol may be negative; an axis's not: below) */
      return kiln_invalid(KM(SYMBOL_HAS_NO_NAME_OR_THE), k, (long long)lo[k], (long long)hi[k]);
    m->symbols[k].min = lo[k];
    m->symbols[k].max = hi[k];
    m->symbols[k].name = name; /* (copied below) */
  }
  m->num_symbols = n;
  for (uint32_t i = 0; i < m->num_outputs; ++i) {
    kiln_tensor_desc* d = &m->outputs[i];
    uint64_t t = io_table(ld, 1, i), off;
    uint32_t len = field_vector(R, t, KILN_ABI_TENSOR_INFO_EXTENTS, 8, &pos);
    uint32_t noff = field_vector(R, t, KILN_ABI_TENSOR_INFO_EXTENT_OFFSETS, 4, &off);
    KILN_FB_CHECK(R);
    if (!noff && !len) continue;
    if (noff != d->rank) return kiln_invalid(KM(OUTPUT_HAS_EXTENT_PROGRAMS), d->name, noff);
    int64_t* code = (int64_t*)p;
    memcpy(code, m->buf + pos, 8 * (size_t)len);
    uint32_t* offs = (uint32_t*)(p + 8 * (size_t)len);
    memcpy(offs, m->buf + off, 4 * (size_t)noff);
    offs[noff] = len;
    p += 8 * (size_t)len + 4 * (size_t)noff + 4;
    p += (8 - (uintptr_t)p % 8) % 8;
    for (uint32_t a = 0; a < noff; ++a) {
      int64_t at_lo, at_hi;
      uint32_t b = offs[a], e = offs[a + 1];
      if (b > e || e > len || e - b > KILN_ABI_MAX_EXTENT_PROGRAM ||
          kiln_abi_extent_eval(code + b, e - b, lo, n, &at_lo) ||
          kiln_abi_extent_eval(code + b, e - b, hi, n, &at_hi) || at_lo < 0 || at_hi < 0 ||
          at_lo > d->shape[a] || at_hi > d->shape[a])
        return kiln_invalid(KM(OUTPUT_AXIS_A_MALFORMED_EXTENT_PROGRAM), d->name, a);
    }
    d->extent_code = code;
    d->extent_offsets = offs;
  }
  int set[KILN_ABI_MAX_SYMBOLS] = {0};
  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    kiln_tensor_desc* d = &m->inputs[i];
    uint32_t k = field_vector(R, io_table(ld, 0, i), KILN_ABI_TENSOR_INFO_AXIS_SYMBOLS, 4, &pos);
    KILN_FB_CHECK(R);
    if (!k) continue;
    if (k != d->rank) return kiln_invalid(KM(INPUT_HAS_AXIS_SYMBOLS), d->name, k);
    int32_t* syms = (int32_t*)p;
    memcpy(syms, m->buf + pos, 4 * (size_t)k);
    p += 4 * (size_t)k;
    for (uint32_t a = 0; a < k; ++a) {
      int32_t s = syms[a];
      if (s < -1 || s >= (int32_t)n || (s >= 0 && (d->shape[a] != hi[s] || lo[s] < 0)))
        return kiln_invalid(KM(INPUT_AXIS_SYMBOL_NOT_LAID_OUT), d->name, a, s);
      if (s >= 0) set[s] = 1;
    }
    d->axis_symbols = syms;
  }
  /* Shape operands fed as inputs: each element's value sets a symbol (a static int32, int64,
   * float32 or (format 2.6) bool input, one symbol per element). */
  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    kiln_tensor_desc* d = &m->inputs[i];
    uint32_t k = field_vector(R, io_table(ld, 0, i), KILN_ABI_TENSOR_INFO_VALUE_SYMBOLS, 4, &pos);
    KILN_FB_CHECK(R);
    if (!k) continue;
    size_t es = kiln_dtype_size((kiln_dtype)d->dtype);
    int bad = (d->dtype != KILN_DTYPE_INT64 && d->dtype != KILN_DTYPE_INT32 &&
               d->dtype != KILN_DTYPE_FLOAT32 && d->dtype != KILN_DTYPE_BOOL) ||
              d->axis_symbols || d->size_bytes != es * k;
    p += (8 - (uintptr_t)p % 8) % 8;
    int32_t* syms = (int32_t*)p;
    memcpy(syms, m->buf + pos, 4 * (size_t)k);
    p += 4 * (size_t)k;
    for (uint32_t e = 0; e < k && !bad; ++e) {
      bad = syms[e] < 0 || syms[e] >= (int32_t)n || lo[syms[e]] != INT64_MIN ||
            hi[syms[e]] != INT64_MAX;
      if (!bad) set[syms[e]] = 1;
    }
    if (bad) return kiln_invalid(KM(INPUT_VALUE_SYMBOLS), d->name, k);
    d->value_symbols = syms;
  }
  /* The checks: well-formed programs over the symbols (value symbols range over all of int64, so
   * only the form is checked here: their values are checked at run), each with a message. */
  for (uint32_t c = 0; c < nc; ++c) {
    uint64_t t = fbr_table_at(R, checks, c), at;
    uint32_t l = field_vector(R, t, KILN_ABI_CHECK_CODE, 8, &pos);
    uint32_t ml = field_vector(R, t, KILN_ABI_CHECK_MESSAGE, 1, &at);
    KILN_FB_CHECK(R);
    int64_t v;
    p += (8 - (uintptr_t)p % 8) % 8;
    memcpy(p, m->buf + pos, 8 * (size_t)l);
    if (!ml || l > KILN_ABI_MAX_CHECK_PROGRAM || kiln_abi_extent_eval((int64_t*)p, l, NULL, n, &v))
      return kiln_invalid(KM(CHECK_MALFORMED), c);
    m->check_code[c] = (const int64_t*)p;
    m->check_len[c] = l;
    p += 8 * (size_t)l;
    memcpy(p, m->buf + at, ml);
    p[ml] = 0;
    m->check_messages[c] = (const char*)p;
    p += ml + 1;
  }
  m->num_checks = nc;
  /* Format 2.8: a loop sets its iteration and count symbols, which no input may (the rest of
   * the loop is checked with the schedule, kiln_load_loops). */
  uint64_t loops;
  uint32_t nl = field_vector(R, ld->variant, KILN_ABI_PACKAGE_LOOPS, 4, &loops);
  for (uint32_t l = 0; l < nl && l < KILN_ABI_MAX_LOOPS; ++l) {
    uint64_t t = fbr_table_at(R, loops, l);
    uint32_t it = kiln_fb_u32_field(R, t, KILN_ABI_LOOP_ITERATION_SYMBOL);
    uint32_t c = kiln_fb_u32_field(R, t, KILN_ABI_LOOP_COUNT_SYMBOL);
    KILN_FB_CHECK(R);
    if (it >= n || c >= n || it == c || set[it] || set[c])
      return kiln_invalid(KM(LOOP_MALFORMED), l);
    set[it] = set[c] = 1;
  }
  /* Format 2.8: a size computed from data sets its symbol (kiln_load_loops checks its slot). */
  uint32_t ncount = field_vector(R, ld->variant, KILN_ABI_PACKAGE_COUNTS, 4, &loops);
  if (ncount > KILN_ABI_MAX_SYMBOLS) return kiln_invalid(KM(COUNT_MALFORMED), ncount);
  for (uint32_t c = 0; c < ncount; ++c) {
    uint64_t t = fbr_table_at(R, loops, c);
    kiln_count_desc* d = &m->counts[c];
    d->symbol = kiln_fb_u32_field(R, t, KILN_ABI_COUNT_SYMBOL);
    d->slot = kiln_fb_u32_field(R, t, KILN_ABI_COUNT_SLOT);
    d->group = kiln_fb_u32_field(R, t, KILN_ABI_COUNT_GROUP);
    KILN_FB_CHECK(R);
    if (d->symbol >= n || set[d->symbol]) return kiln_invalid(KM(COUNT_MALFORMED), c);
    set[d->symbol] = 1;
  }
  m->num_counts = ncount;
  for (uint32_t k = 0; k < n; ++k) {
    if (!set[k]) return kiln_invalid(KM(NO_INPUT_SETS_THE_SYMBOL), m->symbols[k].name);
    size_t len = strlen(m->symbols[k].name) + 1;
    memcpy(p, m->symbols[k].name, len);
    m->symbols[k].name = (const char*)p;
    p += len;
  }
  return KILN_OK;
}
