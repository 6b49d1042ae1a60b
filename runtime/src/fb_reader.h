/* A small, bounds-checked FlatBuffers reader for kiln's schema (no FlatBuffers library).
 * Positions are byte offsets into the buffer; 0 means "absent". Every read checks bounds; a
 * failure records a message in the reader and returns 0. */
#ifndef KILN_RT_FB_READER_H_
#define KILN_RT_FB_READER_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fbr {
  const uint8_t* buf;
  uint64_t size;
  const char* error; /* the first failure, NULL while everything is in bounds */
  uint64_t error_at;
} fbr;

static inline int fbr_fail(fbr* r, const char* what, uint64_t at) {
  if (!r->error) {
    r->error = what;
    r->error_at = at;
  }
  return 0;
}

static inline uint32_t fbr_u32(fbr* r, uint64_t pos) {
  if (pos + 4 < pos || pos + 4 > r->size) return fbr_fail(r, "a 32-bit field out of bounds", pos);
  uint32_t v;
  memcpy(&v, r->buf + pos, 4);
  return v;
}
static inline uint16_t fbr_u16(fbr* r, uint64_t pos) {
  if (pos + 2 < pos || pos + 2 > r->size)
    return (uint16_t)fbr_fail(r, "a 16-bit field out of bounds", pos);
  uint16_t v;
  memcpy(&v, r->buf + pos, 2);
  return v;
}
static inline uint64_t fbr_u64(fbr* r, uint64_t pos) {
  if (pos + 8 < pos || pos + 8 > r->size) return fbr_fail(r, "a 64-bit field out of bounds", pos);
  uint64_t v;
  memcpy(&v, r->buf + pos, 8);
  return v;
}
static inline uint8_t fbr_u8(fbr* r, uint64_t pos) {
  if (pos >= r->size) return (uint8_t)fbr_fail(r, "an 8-bit field out of bounds", pos);
  return r->buf[pos];
}

/* The position of field |index| of the table at |table| (0 if absent). */
static inline uint64_t fbr_field(fbr* r, uint64_t table, int index) {
  if (!table) return 0;
  int32_t soff = (int32_t)fbr_u32(r, table);
  int64_t vt = (int64_t)table - (int64_t)soff;
  if (vt < 0 || (uint64_t)vt + 4 > r->size) return fbr_fail(r, "a vtable out of bounds", table);
  uint16_t vt_size = fbr_u16(r, (uint64_t)vt), obj_size = fbr_u16(r, (uint64_t)vt + 2);
  if (vt_size < 4 || (vt_size & 1) || (uint64_t)vt + vt_size > r->size)
    return fbr_fail(r, "a malformed vtable", (uint64_t)vt);
  if (table + obj_size > r->size) return fbr_fail(r, "a table out of bounds", table);
  uint64_t slot = 4 + 2 * (uint64_t)index;
  if (slot + 2 > vt_size) return 0;
  uint16_t off = fbr_u16(r, (uint64_t)vt + slot);
  if (!off) return 0;
  if (off + 1u > obj_size) return fbr_fail(r, "a field outside its table", table);
  return table + off;
}

/* The target of an offset field (a table, vector or string), or 0 if the field is absent. */
static inline uint64_t fbr_ref(fbr* r, uint64_t field_pos) {
  if (!field_pos) return 0;
  uint32_t off = fbr_u32(r, field_pos);
  uint64_t t = field_pos + off;
  if (!off || t >= r->size) return fbr_fail(r, "an offset out of bounds", field_pos);
  return t;
}

/* A vector at |pos|: its length, with |elem_size| * length bytes in bounds. */
static inline uint32_t fbr_vector(fbr* r, uint64_t pos, uint64_t elem_size, uint64_t* out_data) {
  *out_data = 0;
  if (!pos) return 0;
  uint32_t n = fbr_u32(r, pos);
  uint64_t bytes = (uint64_t)n * elem_size;
  if (pos + 4 + bytes < pos || pos + 4 + bytes > r->size)
    return fbr_fail(r, "a vector out of bounds", pos);
  *out_data = pos + 4;
  return n;
}

/* A NUL-terminated string at |pos| (NULL if absent or malformed). */
static inline const char* fbr_string(fbr* r, uint64_t pos) {
  uint64_t data;
  uint32_t n = fbr_vector(r, pos, 1, &data);
  if (!pos || r->error) return NULL;
  if (data + n >= r->size || r->buf[data + n] != 0) {
    fbr_fail(r, "a string without its terminator", pos);
    return NULL;
  }
  (void)n;
  return (const char*)(r->buf + data);
}

/* Element |i| of a vector of tables starting at |data|. */
static inline uint64_t fbr_table_at(fbr* r, uint64_t data, uint32_t i) {
  return fbr_ref(r, data + 4 * (uint64_t)i);
}

#endif /* KILN_RT_FB_READER_H_ */
