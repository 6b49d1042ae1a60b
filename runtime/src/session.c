/* Sessions: the arena, input/output storage and bindings, per-launch argument arrays and the
 * thread pool, all allocated at creation; kiln_session_run allocates nothing. */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "session.h"

void kiln_session_options_init(kiln_session_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->num_threads = 1;
}

/* Rebuilds the argument arrays from the slot addresses (after a binding changes). */
void kiln_session_refresh_args(kiln_session* s) {
  const kiln_model* m = s->model;
  for (uint32_t l = 0; l < m->num_launches; ++l)
    for (uint32_t a = 0; a < m->launches[l].nargs; ++a)
      s->launch_args[l][a] = s->slot_ptr[m->launches[l].args[a]];
}

kiln_status kiln_session_release(kiln_session* s) {
  if (!s) return KILN_OK;
  const kiln_allocator* a = s->allocator;
  kiln_pool_destroy(a, s->pool);
  if (s->owned_io)
    for (uint32_t i = 0; i < s->model->num_inputs + s->model->num_outputs; ++i)
      kiln_free(a, s->owned_io[i]);
  kiln_free(a, s->owned_io);
  kiln_free(a, s->owned_arena);
  kiln_free(a, s->slot_ptr);
  kiln_free(a, s->input_set);
  kiln_free(a, s->launch_args);
  kiln_free(a, s->arg_storage);
  kiln_free(a, s->prof_runs);
  kiln_free(a, s->prof_ms);
  kiln_free(a, s->trace);
  kiln_session_shapes_release(s);
  __atomic_fetch_sub(&s->model->live_sessions, 1, __ATOMIC_ACQ_REL);
  kiln_free(a, s);
  return KILN_OK;
}

kiln_status kiln_session_create(kiln_model* m, const kiln_session_options* o,
                                kiln_session** out_session) {
  if (!out_session)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_CREATE_OUT_SESSION_IS));
  *out_session = NULL;
  if (!m) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_CREATE_MODEL_IS_NULL));
  kiln_session_options opts;
  kiln_session_options_init(&opts);
  if (o) {
    /* Callers built against the first version pass a struct without `trace`. */
    if (o->struct_size < offsetof(kiln_session_options, trace) ||
        o->struct_size > sizeof(kiln_session_options))
      return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_OPTIONS_STRUCT_SIZE_IS),
                        o->struct_size);
    memcpy(&opts, o, o->struct_size);
  }
  o = &opts;
  if (o->num_threads > KILN_MAX_THREADS)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_CREATE_THREADS_A_SESSION),
                      o->num_threads, KILN_MAX_THREADS);
  if (o->arena) {
    if (o->arena_size < m->arena_size)
      return kiln_error(KILN_INVALID_ARGUMENT, KM(THE_SUPPLIED_ARENA_HAS_BYTES_THE), o->arena_size,
                        (unsigned long long)m->arena_size);
    if ((uintptr_t)o->arena % m->arena_alignment)
      return kiln_error(KILN_INVALID_ARGUMENT, KM(THE_SUPPLIED_ARENA_IS_NOT_ALIGNED),
                        m->arena_alignment);
  }
  const kiln_allocator* a = kiln_model_allocator(m);
  kiln_session* s = kiln_alloc(a, sizeof *s, 16);
  if (!s) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_CREATING_A_SESSION));
  memset(s, 0, sizeof *s);
  s->model = m;
  s->allocator = a;
  s->profile = o->profile;
  __atomic_fetch_add(&m->live_sessions, 1, __ATOMIC_ACQ_REL);
  kiln_status st = KILN_OK;
  uint32_t nio = m->num_inputs + m->num_outputs;
  uint64_t nargs = 0;
  for (uint32_t l = 0; l < m->num_launches; ++l) nargs += m->launches[l].nargs;
  /* (owned_io first, zeroed at once: release frees its entries whatever failed later.) */
  s->owned_io = kiln_alloc(a, (size_t)nio * sizeof(void*) + 8, 16);
  if (s->owned_io) memset(s->owned_io, 0, (size_t)nio * sizeof(void*));
  s->slot_ptr = kiln_alloc(a, (size_t)m->num_slots * sizeof(void*) + 8, 16);
  s->input_set = kiln_alloc(a, (size_t)m->num_inputs * sizeof(int) + 8, 16);
  s->launch_args = kiln_alloc(a, (size_t)m->num_launches * sizeof(void**) + 8, 16);
  s->arg_storage = kiln_alloc(a, (size_t)nargs * sizeof(void*) + 8, 16);
  if (!s->slot_ptr || !s->owned_io || !s->input_set || !s->launch_args || !s->arg_storage) {
    st = kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_CREATING_A_SESSION));
    goto fail;
  }
  memset(s->input_set, 0, (size_t)m->num_inputs * sizeof(int));
  if (o->arena) {
    s->arena = o->arena;
  } else {
    s->owned_arena =
        kiln_alloc(a, (size_t)m->arena_size, m->arena_alignment < 64 ? 64 : m->arena_alignment);
    if (!s->owned_arena) {
      st = kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_ALLOCATING_A_BYTE),
                      (unsigned long long)m->arena_size);
      goto fail;
    }
    s->arena = s->owned_arena;
    /* Every page of the arena is touched now, not by the first run: a 4.8 MB intermediate's
     * first writes page-faulted 1200 times inside a kernel (mobilenet_v2's first run took ~14
     * ms more than the next ones on a virtual machine). */
    memset(s->owned_arena, 0, (size_t)m->arena_size);
  }
  for (uint32_t i = 0; i < nio; ++i) {
    const kiln_tensor_desc* t = i < m->num_inputs ? &m->inputs[i] : &m->outputs[i - m->num_inputs];
    s->owned_io[i] = kiln_alloc(a, (size_t)t->size_bytes, 64);
    if (!s->owned_io[i]) {
      st = kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_ALLOCATING_TENSOR), t->name);
      goto fail;
    }
    memset(s->owned_io[i], 0, (size_t)t->size_bytes);
  }
  for (uint32_t k = 0; k < m->num_slots; ++k) {
    const kiln_slot_desc* d = &m->slots[k];
    switch (d->kind) {
      case KILN_ABI_SLOT_ARENA:
        s->slot_ptr[k] = s->arena + d->offset;
        break;
      case KILN_ABI_SLOT_CONSTANT:
        s->slot_ptr[k] = (void*)(m->constants + d->offset);
        break;
      case KILN_ABI_SLOT_INPUT:
        s->slot_ptr[k] = s->owned_io[d->index];
        break;
      default:
        s->slot_ptr[k] = s->owned_io[m->num_inputs + d->index];
        break;
    }
  }
  {
    void** p = s->arg_storage;
    for (uint32_t l = 0; l < m->num_launches; ++l) {
      s->launch_args[l] = p;
      p += m->launches[l].nargs;
    }
  }
  kiln_session_refresh_args(s);
  if (o->profile) {
    s->prof_runs = kiln_alloc(a, (size_t)m->num_launches * sizeof(uint64_t) + 8, 16);
    s->prof_ms = kiln_alloc(a, (size_t)m->num_launches * sizeof(double) + 8, 16);
    if (!s->prof_runs || !s->prof_ms) {
      st = kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_FOR_PROFILES));
      goto fail;
    }
    memset(s->prof_runs, 0, (size_t)m->num_launches * sizeof(uint64_t));
    memset(s->prof_ms, 0, (size_t)m->num_launches * sizeof(double));
  }
  if (o->trace) {
    s->trace_threads = o->num_threads > 1 ? (uint32_t)o->num_threads : 1;
    size_t n = (size_t)m->num_launches * s->trace_threads;
    s->trace = kiln_alloc(a, n * sizeof *s->trace + 8, 16);
    if (!s->trace) {
      st = kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_FOR_TRACES));
      goto fail;
    }
    memset(s->trace, 0, n * sizeof *s->trace);
  }
  st = kiln_session_shapes_init(s);
  if (st != KILN_OK) goto fail;
  st = kiln_pool_create(a, o->num_threads > 1 ? o->num_threads - 1 : 0, &s->pool);
  if (st != KILN_OK) goto fail;
  *out_session = s;
  return KILN_OK;
fail:
  kiln_session_release(s);
  return st;
}

static kiln_status check_io(const kiln_session* s, size_t index, kiln_dtype dtype, const void* data,
                            size_t size, int output, const char* what) {
  if (!s) return kiln_error(KILN_INVALID_ARGUMENT, KM(SESSION_IS_NULL), what);
  const kiln_model* m = s->model;
  uint32_t n = output ? m->num_outputs : m->num_inputs;
  if (index >= n)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(INDEX_OUT_OF_RANGE_THE_MODEL_2), what, index, n,
                      output ? "outputs" : "inputs");
  const kiln_tensor_desc* t = output ? &m->outputs[index] : &m->inputs[index];
  /* A tensor with no elements has no bytes to point at: NULL is fine there. */
  if (!data && t->size_bytes)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(DATA_FOR_IS_NULL), what, t->name);
  if ((unsigned)dtype != t->dtype)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(IS_GIVEN), what, t->name,
                      kiln_dtype_name((kiln_dtype)t->dtype), kiln_dtype_name(dtype));
  if (size != t->size_bytes)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(HAS_BYTES_GIVEN), what, t->name,
                      (unsigned long long)t->size_bytes, size);
  return KILN_OK;
}

/* Kernels read and write whole elements: bound memory is aligned to the element size. */
static kiln_status check_alignment(const kiln_session* s, size_t index, const void* data,
                                   int output, const char* what) {
  const kiln_model* m = s->model;
  const kiln_tensor_desc* t = output ? &m->outputs[index] : &m->inputs[index];
  size_t es = kiln_dtype_size((kiln_dtype)t->dtype);
  if ((uintptr_t)data % es)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(MEMORY_FOR_IS_NOT_ALIGNED_TO), what, t->name, es);
  return KILN_OK;
}

kiln_status kiln_session_set_input(kiln_session* s, size_t index, kiln_dtype dtype,
                                   const void* data, size_t size) {
  KILN_RETURN_IF_ERROR(check_io(s, index, dtype, data, size, 0, "kiln_session_set_input"));
  const kiln_model* m = s->model;
  uint32_t slot = m->inputs[index].slot;
  if (size) memcpy(s->owned_io[index], data, size);
  /* The whole layout: a symbolic input at its bounds. */
  if (s->input_shapes && m->inputs[index].rank)
    memcpy(s->input_shapes + m->inputs[index].dims_offset, m->inputs[index].shape,
           8 * (size_t)m->inputs[index].rank);
  if (s->slot_ptr[slot] != s->owned_io[index]) {
    s->slot_ptr[slot] = s->owned_io[index];
    kiln_session_refresh_args(s);
  }
  s->input_set[index] = 1;
  return KILN_OK;
}

kiln_status kiln_session_bind_input(kiln_session* s, size_t index, kiln_dtype dtype,
                                    const void* data, size_t size) {
  KILN_RETURN_IF_ERROR(check_io(s, index, dtype, data, size, 0, "kiln_session_bind_input"));
  if (s->model->inputs[index].axis_symbols)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_BIND_INPUT_HAS_SYMBOLIC),
                      s->model->inputs[index].name);
  KILN_RETURN_IF_ERROR(check_alignment(s, index, data, 0, "kiln_session_bind_input"));
  s->slot_ptr[s->model->inputs[index].slot] = (void*)data;
  kiln_session_refresh_args(s);
  s->input_set[index] = 1;
  return KILN_OK;
}

kiln_status kiln_session_bind_output(kiln_session* s, size_t index, kiln_dtype dtype, void* data,
                                     size_t size) {
  KILN_RETURN_IF_ERROR(check_io(s, index, dtype, data, size, 1, "kiln_session_bind_output"));
  if (s->model->outputs[index].extent_code)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_BIND_OUTPUT_HAS_SYMBOLIC),
                      s->model->outputs[index].name);
  KILN_RETURN_IF_ERROR(check_alignment(s, index, data, 1, "kiln_session_bind_output"));
  s->slot_ptr[s->model->outputs[index].slot] = data;
  kiln_session_refresh_args(s);
  return KILN_OK;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double now_ms(void) {
  return (double)now_ns() / 1e6;
}

/* Item |i| of the current group: find its launch (groups have few) and task. */
static void run_item(void* ctx, uint32_t i) {
  kiln_session* s = ctx;
  const kiln_model* m = s->model;
  const kiln_group_desc* g = s->cur_group;
  uint32_t l = g->first_launch;
  if (s->profile) {
    l = s->cur_launch;
  } else {
    while (i >= m->launches[l].ntasks) i -= m->launches[l++].ntasks;
  }
  const kiln_launch_desc* L = &m->launches[l];
  if (!s->trace) {
    m->kernels[L->kernel](s->launch_args[l], s->vars, i, L->ntasks);
    return;
  }
  /* Each thread writes only its own entry of each launch: no races. */
  struct trace_slot* t = &s->trace[(size_t)l * s->trace_threads + kiln_pool_thread_index()];
  uint64_t t0 = now_ns();
  m->kernels[L->kernel](s->launch_args[l], s->vars, i, L->ntasks);
  if (t->run != s->trace_run) {
    t->run = s->trace_run;
    t->start_ns = t0;
  }
  t->end_ns = now_ns();
}

static void run_group(kiln_session* s, uint32_t g) {
  const kiln_model* m = s->model;
  s->cur_group = &m->groups[g];
  if (!s->profile) {
    kiln_pool_run(s->pool, m->groups[g].num_items, run_item, s);
    return;
  }
  for (uint32_t l = m->groups[g].first_launch;
       l < m->groups[g].first_launch + m->groups[g].num_launches; ++l) {
    s->cur_launch = l;
    double t0 = now_ms();
    kiln_pool_run(s->pool, m->launches[l].ntasks, run_item, s);
    s->prof_ms[l] += now_ms() - t0;
    s->prof_runs[l] += 1;
  }
}

/* A loop group: its groups once per iteration, while kiln_abi_loop_continues says so. */
static kiln_status run_loop(kiln_session* s, const kiln_loop_desc* d) {
  const kiln_model* m = s->model;
  int64_t trips = -1, i = 0;
  if (d->trips_slot >= 0) memcpy(&trips, s->slot_ptr[d->trips_slot], 8);
  for (;; ++i) {
    int cond = d->cond_slot < 0 ? -1 : *(const uint8_t*)s->slot_ptr[d->cond_slot] != 0;
    int go = kiln_abi_loop_continues(i, trips, cond, d->max_trips);
    if (go < 0)
      return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_RUN_LOOP_PAST), d->name,
                        (long long)trips, (long long)d->max_trips);
    if (!go) break;
    s->vars[d->iteration] = i;
    for (uint32_t g = d->first_group; g <= d->last_group; ++g) run_group(s, g);
  }
  const kiln_symbol_desc* c = &m->symbols[d->count];
  if (i < c->min || i > c->max)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_RUN_LOOP_COUNT), d->name, (long long)i,
                      c->name, (long long)c->min, (long long)c->max);
  s->vars[d->count] = i;
  return KILN_OK;
}

kiln_status kiln_session_run(kiln_session* s) {
  if (!s) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_RUN_SESSION_IS_NULL));
  const kiln_model* m = s->model;
  for (uint32_t i = 0; i < m->num_inputs; ++i)
    if (!s->input_set[i])
      return kiln_error(KILN_FAILED_PRECONDITION, KM(KILN_SESSION_RUN_INPUT_IS_NOT),
                        m->inputs[i].name);
  KILN_RETURN_IF_ERROR(kiln_session_bind_symbols(s));
  if (s->trace) {
    s->trace_run = s->trace_run + 1 ? s->trace_run + 1 : 1; /* (0: never ran) */
    s->trace_t0 = now_ns();
  }
  s->ran = 0;        /* (a loop that fails leaves no outputs) */
  uint32_t loop = 0; /* the next loop group (they are in group order) */
  for (uint32_t g = 0; g < m->num_groups; ++g) {
    if (loop < m->num_loops && g == m->loops[loop].first_group) {
      KILN_RETURN_IF_ERROR(run_loop(s, &m->loops[loop]));
      g = m->loops[loop++].last_group;
      continue;
    }
    run_group(s, g);
    for (uint32_t c = 0; c < m->num_counts; ++c) { /* a size computed from data, read now */
      const kiln_count_desc* d = &m->counts[c];
      const kiln_symbol_desc* k = &m->symbols[d->symbol];
      int64_t v;
      if (d->group != g) continue;
      memcpy(&v, s->slot_ptr[d->slot], 8);
      if (v < k->min || v > k->max)
        return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_RUN_COUNT), k->name, (long long)v,
                          (long long)k->min, (long long)k->max);
      s->vars[d->symbol] = v;
    }
  }
  KILN_RETURN_IF_ERROR(kiln_session_output_shapes(s));
  s->ran = 1;
  return KILN_OK;
}

kiln_status kiln_session_output(const kiln_session* s, size_t index, const void** out_data,
                                size_t* out_size) {
  if (!s || !out_data || !out_size)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_OUTPUT_NULL_ARGUMENT));
  const kiln_model* m = s->model;
  if (index >= m->num_outputs)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_OUTPUT_INDEX_OUT_OF), index,
                      m->num_outputs);
  if (!s->ran) return kiln_error(KILN_FAILED_PRECONDITION, KM(KILN_SESSION_OUTPUT_NO_RUN_HAS));
  const kiln_tensor_desc* t = &m->outputs[index];
  *out_data = s->slot_ptr[t->slot];
  *out_size = (size_t)t->size_bytes;
  if (t->extent_code) {
    uint64_t n = kiln_dtype_size((kiln_dtype)t->dtype);
    for (uint32_t k = 0; k < t->rank; ++k) n *= (uint64_t)s->output_shapes[t->dims_offset + k];
    *out_size = (size_t)n;
  }
  return KILN_OK;
}

kiln_status kiln_session_launch_count(const kiln_session* s, size_t* out_count) {
  if (!s || !out_count)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_LAUNCH_COUNT_NULL_ARGUMENT));
  *out_count = s->model->num_launches;
  return KILN_OK;
}

kiln_status kiln_session_launch_profile(const kiln_session* s, size_t index, size_t* out_kernel,
                                        uint64_t* out_runs, double* out_total_ms) {
  if (!s || !out_kernel || !out_runs || !out_total_ms)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_LAUNCH_PROFILE_NULL_ARGUMENT));
  if (!s->profile)
    return kiln_error(KILN_FAILED_PRECONDITION, KM(KILN_SESSION_LAUNCH_PROFILE_THE_SESSION));
  if (index >= s->model->num_launches)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_LAUNCH_PROFILE_INDEX_OUT), index);
  *out_kernel = s->model->launches[index].kernel;
  *out_runs = s->prof_runs[index];
  *out_total_ms = s->prof_ms[index];
  return KILN_OK;
}

kiln_status kiln_session_trace(const kiln_session* s, kiln_trace_event* events, size_t capacity,
                               size_t* out_count) {
  if (!s || !out_count || (!events && capacity))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_SESSION_TRACE_NULL_ARGUMENT));
  if (!s->trace)
    return kiln_error(KILN_FAILED_PRECONDITION, KM(KILN_SESSION_TRACE_THE_SESSION_WAS));
  size_t n = 0;
  for (uint32_t l = 0; l < s->model->num_launches; ++l)
    for (uint32_t t = 0; t < s->trace_threads; ++t) {
      const struct trace_slot* e = &s->trace[(size_t)l * s->trace_threads + t];
      if (!s->ran || e->run != s->trace_run) continue;
      if (n < capacity) {
        events[n].launch = l;
        events[n].thread = t;
        events[n].start_ms = (double)(e->start_ns - s->trace_t0) / 1e6;
        events[n].end_ms = (double)(e->end_ns - s->trace_t0) / 1e6;
      }
      ++n;
    }
  *out_count = n;
  return KILN_OK;
}
