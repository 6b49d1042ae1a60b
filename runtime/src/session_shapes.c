/* Sessions of symbolic packages (format 2.4): inputs set with their run-time shapes, the
 * symbols bound from them before each run, and the outputs' run-time shapes. Buffers stay laid
 * out at the symbols' bounds (their memory is planned there): an input's values are copied into
 * the corner [0, shape) of its layout (row by row when a symbolic axis is not its first one, a
 * text line's width), and after a run an output's corner is moved to its layout's first bytes
 * (one block, in place, when its symbolic axes lead), where kiln_session_output reads it. */
#include <string.h>

#include "session.h"

kiln_status kiln_session_shapes_init(kiln_session* s) {
  const kiln_model* m = s->model;
  if (!m->num_symbols) return KILN_OK;
  s->input_shapes = kiln_alloc(s->allocator, 8 * (size_t)(m->input_dims + m->output_dims) + 8, 16);
  if (!s->input_shapes) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_CREATING_A_SESSION));
  s->output_shapes = s->input_shapes + m->input_dims;
  /* (A scalar has no shape to copy: its pointer may be NULL.) */
  for (uint32_t i = 0; i < m->num_inputs; ++i)
    if (m->inputs[i].rank)
      memcpy(s->input_shapes + m->inputs[i].dims_offset, m->inputs[i].shape,
             8 * (size_t)m->inputs[i].rank);
  for (uint32_t i = 0; i < m->num_outputs; ++i)
    if (m->outputs[i].rank)
      memcpy(s->output_shapes + m->outputs[i].dims_offset, m->outputs[i].shape,
             8 * (size_t)m->outputs[i].rank);
  return KILN_OK;
}

void kiln_session_shapes_release(kiln_session* s) {
  kiln_free(s->allocator, s->input_shapes);
}

kiln_status kiln_session_bind_symbols(kiln_session* s) {
  const kiln_model* m = s->model;
  uint32_t from[KILN_ABI_MAX_SYMBOLS]; /* the input that set each symbol, +1 (0: none yet) */
  memset(from, 0, sizeof from);
  for (uint32_t i = 0; i < m->num_inputs && m->num_symbols; ++i) {
    const kiln_tensor_desc* t = &m->inputs[i];
    for (uint32_t a = 0; t->axis_symbols && a < t->rank; ++a) {
      int32_t k = t->axis_symbols[a];
      int64_t v = s->input_shapes[t->dims_offset + a];
      if (k < 0) continue;
      if (from[k] && s->vars[k] != v)
        return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_RUN_INPUT_AXIS_IS), t->name, a,
                          (long long)v, m->symbols[k].name, (long long)s->vars[k],
                          m->inputs[from[k] - 1].name);
      s->vars[k] = v;
      from[k] = i + 1;
    }
  }
  /* Shape operands fed as inputs: each element's value sets its symbol (unbounded: the checks
   * below say which values the package takes). */
  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    const kiln_tensor_desc* t = &m->inputs[i];
    const uint8_t* data = s->slot_ptr[t->slot];
    size_t es = kiln_dtype_size((kiln_dtype)t->dtype);
    for (uint32_t e = 0; t->value_symbols && e < t->size_bytes / es; ++e) {
      int64_t v;
      int32_t w;
      if (es == 8) {
        memcpy(&v, data + 8 * (size_t)e, 8);
      } else if (es == 4) { /* int32, or (format 2.6) a float32's bit pattern: range checks */
        memcpy(&w, data + 4 * (size_t)e, 4);
        v = w;
      } else { /* bool (format 2.6): Compress's condition, NonZero's input */
        v = data[e];
      }
      s->vars[t->value_symbols[e]] = v;
    }
  }
  /* What the package was compiled under: a shape operand gives the shape the model declares. */
  for (uint32_t c = 0; c < m->num_checks; ++c) {
    int64_t holds;
    if (kiln_abi_extent_eval(m->check_code[c], m->check_len[c], s->vars, m->num_symbols, &holds) ||
        !holds)
      return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_RUN_CHECK), m->check_messages[c]);
  }
  return KILN_OK;
}

/* Moves the corner [0, shape) of an array laid out at |layout| (at |base|) to or from a
 * row-major array of |shape|: from |src| into the layout (an input), or, with |src| NULL, to the
 * layout's first bytes in place (an output: each block moves to a lower address, in order, so
 * none overwrites one not yet moved). The trailing axes that are whole, and the partial one
 * before them, are contiguous in both: one block per index of the axes before. */
static void move_corner(uint8_t* base, const int64_t* layout, const uint8_t* src,
                        const int64_t* shape, uint32_t rank, size_t es) {
  uint32_t inner = rank;
  size_t block = es;
  while (inner > 0 && shape[inner - 1] == layout[inner - 1]) block *= (size_t)shape[--inner];
  if (inner > 0) block *= (size_t)shape[--inner];
  uint64_t stride[KILN_ABI_MAX_RANK], at[KILN_ABI_MAX_RANK] = {0}, rows = 1, st = 1;
  for (uint32_t i = rank; i-- > 0;) {
    stride[i] = st;
    st *= (uint64_t)layout[i];
  }
  for (uint32_t i = 0; i < inner; ++i) rows *= (uint64_t)shape[i];
  for (uint64_t r = 0; r < rows && block; ++r) {
    uint64_t off = 0;
    for (uint32_t i = 0; i < inner; ++i) off += at[i] * stride[i];
    if (src)
      memcpy(base + off * es, src + r * block, block);
    else
      memmove(base + r * block, base + off * es, block);
    for (uint32_t i = inner; i-- > 0;) {
      if (++at[i] < (uint64_t)shape[i]) break;
      at[i] = 0;
    }
  }
}

kiln_status kiln_session_output_shapes(kiln_session* s) {
  const kiln_model* m = s->model;
  for (uint32_t i = 0; i < m->num_outputs && m->num_symbols; ++i) {
    const kiln_tensor_desc* t = &m->outputs[i];
    if (!t->extent_code) continue;
    int64_t* shape = &s->output_shapes[t->dims_offset];
    for (uint32_t a = 0; a < t->rank; ++a) {
      uint32_t b = t->extent_offsets[a], e = t->extent_offsets[a + 1];
      if (kiln_abi_extent_eval(t->extent_code + b, e - b, s->vars, m->num_symbols, &shape[a]) ||
          shape[a] < 0 || shape[a] > t->shape[a])
        return kiln_error(KILN_INTERNAL, KM(KILN_SESSION_RUN_OUTPUT_LEAVES_ITS), t->name);
    }
    /* The values to the layout's first bytes, row-major at the run's shape. */
    move_corner(s->slot_ptr[t->slot], t->shape, NULL, shape, t->rank,
                kiln_dtype_size((kiln_dtype)t->dtype));
  }
  return KILN_OK;
}

kiln_status kiln_session_set_input_shaped(kiln_session* s, size_t index, kiln_dtype dtype,
                                          const void* data, size_t size_bytes, size_t rank,
                                          const int64_t* shape) {
  if (!s || index >= s->model->num_inputs || (rank && !shape))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_SET_INPUT_SHAPED_NULL));
  const kiln_model* m = s->model;
  const kiln_tensor_desc* t = &m->inputs[index];
  uint64_t n = kiln_dtype_size((kiln_dtype)t->dtype);
  if (rank != t->rank)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_SET_INPUT_SHAPED_HAS), t->name,
                      t->rank, rank);
  for (uint32_t a = 0; a < t->rank; ++a) {
    int32_t k = t->axis_symbols ? t->axis_symbols[a] : -1;
    int64_t lo = k < 0 ? t->shape[a] : m->symbols[k].min;
    int64_t hi = k < 0 ? t->shape[a] : m->symbols[k].max;
    if (k < 0 && shape[a] != lo)
      return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_SET_INPUT_SHAPED_STATIC_AXIS),
                        t->name, a, (long long)shape[a], (long long)lo);
    if (shape[a] < lo || shape[a] > hi)
      return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_SET_INPUT_SHAPED_AXIS), t->name, a,
                        (long long)shape[a], m->symbols[k].name, (long long)lo, (long long)hi);
    n *= (uint64_t)shape[a];
  }
  if (!t->axis_symbols) return kiln_session_set_input(s, index, dtype, data, size_bytes);
  if ((unsigned)dtype != t->dtype || size_bytes != n || (!data && n))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_SET_INPUT_SHAPED_OF), t->name,
                      kiln_dtype_name((kiln_dtype)t->dtype), (unsigned long long)n,
                      kiln_dtype_name(dtype), size_bytes);
  size_t es = kiln_dtype_size((kiln_dtype)t->dtype);
  move_corner(s->owned_io[index], t->shape, data, shape, t->rank, es);
  memcpy(s->input_shapes + t->dims_offset, shape, 8 * (size_t)t->rank);
  if (s->slot_ptr[t->slot] != s->owned_io[index]) {
    s->slot_ptr[t->slot] = s->owned_io[index];
    kiln_session_refresh_args(s);
  }
  s->input_set[index] = 1;
  return KILN_OK;
}

kiln_status kiln_session_output_shape(const kiln_session* s, size_t index, size_t* out_rank,
                                      const int64_t** out_shape) {
  const void* data;
  size_t size;
  KILN_RETURN_IF_ERROR(kiln_session_output(s, index, &data, &size));
  if (!out_rank || !out_shape)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_OUTPUT_SHAPE_NULL_ARGUMENT));
  const kiln_tensor_desc* t = &s->model->outputs[index];
  *out_rank = t->rank;
  *out_shape = s->output_shapes ? s->output_shapes + t->dims_offset : t->shape;
  return KILN_OK;
}

kiln_status kiln_model_symbol_info(const kiln_model* m, size_t index, const char** out_name,
                                   int64_t* out_min, int64_t* out_max) {
  if (!m || !out_name || !out_min || !out_max || index >= m->num_symbols)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_SYMBOL_INFO_NULL_ARGUMENT));
  *out_name = m->symbols[index].name;
  *out_min = m->symbols[index].min;
  *out_max = m->symbols[index].max;
  return KILN_OK;
}

kiln_status kiln_model_symbol_count(const kiln_model* m, size_t* out_count) {
  if (!m || !out_count)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_SYMBOL_COUNT_NULL_ARGUMENT));
  *out_count = m->num_symbols;
  return KILN_OK;
}
