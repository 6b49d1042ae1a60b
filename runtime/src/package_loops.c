/* Loader stage: a package's loop groups and sizes computed from data (format 2.8). Each loop's
 * groups lie after the previous loop's and inside the schedule; its trip count is an int64 slot
 * live when it starts, its condition a bool slot live through it; its iteration symbol bounds every
 * iteration number it can set (0 .. max_trips - 1), which is what the kernels' access extents were
 * proved with (its symbols' owners were checked with the symbols). And the memory plan's proof
 * still holds when a body's groups repeat: an arena slot lives inside a loop's groups, through all
 * of them, or apart from them. */
#include <string.h>

#include "package_loader.h"

/* Slot |s| (-1: none) is a scalar of |dtype| that the loop |d| may read: an arena slot live from
 * before the loop to its group |until|. */
static int bad_scalar(const kiln_model* m, int32_t s, uint8_t dtype, const kiln_loop_desc* d,
                      uint32_t until) {
  if (s < 0) return s != -1;
  if ((uint32_t)s >= m->num_slots) return 1;
  const kiln_slot_desc* sd = &m->slots[s];
  return sd->dtype != dtype || sd->size < kiln_dtype_size((kiln_dtype)dtype) ||
         (sd->kind == KILN_ABI_SLOT_ARENA &&
          (sd->first_group >= d->first_group || sd->last_group < until));
}

/* An optional slot field: -1 when absent (the schema's default). */
static int32_t slot_field(fbr* R, uint64_t t, int field) {
  return fbr_field(R, t, field) ? (int32_t)kiln_fb_u32_field(R, t, field) : -1;
}

/* Whether group |g| is in a loop's groups. */
static int in_loop(const kiln_model* m, uint32_t g) {
  for (uint32_t i = 0; i < m->num_loops; ++i)
    if (m->loops[i].first_group <= g && g <= m->loops[i].last_group) return 1;
  return 0;
}

/* Sizes computed from data (their symbols were checked with the others): an int64 slot, read
 * after a group outside every loop in which an arena slot is live. */
static kiln_status check_counts(const kiln_model* m) {
  for (uint32_t c = 0; c < m->num_counts; ++c) {
    const kiln_count_desc* d = &m->counts[c];
    const kiln_slot_desc* sd = d->slot < m->num_slots ? &m->slots[d->slot] : NULL;
    if (!sd || sd->dtype != KILN_DTYPE_INT64 || sd->size < 8 || d->group >= m->num_groups ||
        in_loop(m, d->group) ||
        (sd->kind == KILN_ABI_SLOT_ARENA &&
         (sd->first_group > d->group || sd->last_group < d->group)))
      return kiln_invalid(KM(COUNT_MALFORMED), c);
  }
  return KILN_OK;
}

kiln_status kiln_load_loops(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint64_t data, pos;
  uint32_t n =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->variant, KILN_ABI_PACKAGE_LOOPS)), 4, &data);
  KILN_FB_CHECK(R);
  if (!n) return check_counts(m);
  if (n > KILN_ABI_MAX_LOOPS) return kiln_invalid(KM(THE_LIMIT_IS), n, "loops", KILN_ABI_MAX_LOOPS);
  uint64_t bytes = (uint64_t)n * sizeof(kiln_loop_desc);
  for (uint32_t i = 0; i < n; ++i)
    bytes +=
        1 + fbr_vector(R, fbr_ref(R, fbr_field(R, fbr_table_at(R, data, i), KILN_ABI_LOOP_NAME)), 1,
                       &pos);
  KILN_FB_CHECK(R);
  m->loops = kiln_alloc(kiln_model_allocator(m), (size_t)bytes + 8, 8);
  if (!m->loops) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_THE_SCHEDULE));
  char* names = (char*)(m->loops + n);
  uint32_t next = 0; /* the first group the next loop may start at */
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(R, data, i);
    kiln_loop_desc* d = &m->loops[i];
    const char* name = fbr_string(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_LOOP_NAME)));
    d->first_group = kiln_fb_u32_field(R, t, KILN_ABI_LOOP_FIRST_GROUP);
    d->last_group = kiln_fb_u32_field(R, t, KILN_ABI_LOOP_LAST_GROUP);
    d->trips_slot = slot_field(R, t, KILN_ABI_LOOP_TRIPS_SLOT);
    d->cond_slot = slot_field(R, t, KILN_ABI_LOOP_COND_SLOT);
    d->max_trips = (int64_t)kiln_fb_u64_field(R, t, KILN_ABI_LOOP_MAX_TRIPS);
    d->iteration = kiln_fb_u32_field(R, t, KILN_ABI_LOOP_ITERATION_SYMBOL);
    d->count = kiln_fb_u32_field(R, t, KILN_ABI_LOOP_COUNT_SYMBOL);
    KILN_FB_CHECK(R);
    /* (The symbols are in range and set by this loop alone: kiln_load_symbols.) */
    const kiln_symbol_desc* it = &m->symbols[d->iteration < m->num_symbols ? d->iteration : 0];
    if (!name || d->first_group < next || d->first_group > d->last_group ||
        d->last_group >= m->num_groups || d->max_trips < 1 || d->iteration >= m->num_symbols ||
        d->count >= m->num_symbols || it->min > 0 || it->max < d->max_trips - 1 ||
        bad_scalar(m, d->trips_slot, KILN_DTYPE_INT64, d, d->first_group) ||
        bad_scalar(m, d->cond_slot, KILN_DTYPE_BOOL, d, d->last_group))
      return kiln_invalid(KM(LOOP_MALFORMED), i);
    next = d->last_group + 1;
    /* (Bounded again: a file another process writes may change between the passes.) */
    size_t len = strlen(name) + 1;
    if ((uint64_t)(names - (char*)m->loops) + len > bytes)
      return kiln_invalid(KM(THE_PACKAGE_CHANGED_WHILE_LOADING));
    memcpy(names, name, len);
    d->name = names;
    names += len;
    for (uint32_t s = 0; s < m->num_slots; ++s) {
      const kiln_slot_desc* sd = &m->slots[s];
      int meets = sd->first_group <= d->last_group && d->first_group <= sd->last_group;
      int inside = d->first_group <= sd->first_group && sd->last_group <= d->last_group;
      int through = sd->first_group <= d->first_group && d->last_group <= sd->last_group;
      if (sd->kind == KILN_ABI_SLOT_ARENA && sd->size && meets && !inside && !through)
        return kiln_invalid(KM(SLOT_LIVES_IN_PART_OF_LOOP), s, i);
    }
  }
  m->num_loops = n;
  return check_counts(m);
}
