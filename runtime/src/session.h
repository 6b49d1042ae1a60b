/* The session's state, shared by session.c and session_shapes.c. Not installed. */
#ifndef KILN_RT_SESSION_H_
#define KILN_RT_SESSION_H_

#include "internal.h"

struct kiln_session {
  kiln_model* model;
  const kiln_allocator* allocator;
  kiln_pool* pool;
  uint8_t* arena;
  void* owned_arena;
  void** slot_ptr;     /* the address of every slot */
  void** owned_io;     /* session storage of each input then each output */
  int* input_set;      /* nonzero once an input is set or bound */
  void*** launch_args; /* per launch: pointers to its argument buffers */
  void** arg_storage;
  int ran;
  int profile;
  uint64_t* prof_runs;
  double* prof_ms;
  /* trace mode: per launch and thread, when that thread ran the launch's tasks; an entry
   * belongs to the last run when its run number is trace_run */
  struct trace_slot {
    uint64_t start_ns, end_ns;
    uint32_t run;
  }* trace;
  uint32_t trace_threads, trace_run;
  uint64_t trace_t0;
  /* the group being run (the pool's work function reads it) */
  const kiln_group_desc* cur_group;
  uint32_t cur_launch; /* profile mode: one launch at a time */
  /* symbolic packages: the symbols' values for the run (the kernels' vars), each input's shape
   * as last set and each output's from the last run (m->input_dims / output_dims entries) */
  int64_t vars[KILN_ABI_MAX_SYMBOLS];
  int64_t* input_shapes;
  int64_t* output_shapes;
};

/* session.c: rebuilds the launches' argument arrays from the slot addresses. */
KILN_RT_PRIVATE void kiln_session_refresh_args(kiln_session* s);

/* session_shapes.c: the symbolic-shape state of a new session (allocated with the rest; the
 * shapes start as the declared ones), its release, before a run the symbols bound from the
 * inputs' shapes (checked to agree), and after it the outputs' shapes evaluated. */
KILN_RT_PRIVATE kiln_status kiln_session_shapes_init(kiln_session* s);
KILN_RT_PRIVATE void kiln_session_shapes_release(kiln_session* s);
KILN_RT_PRIVATE kiln_status kiln_session_bind_symbols(kiln_session* s);
/* After a run: the outputs' shapes from the symbols (a loop's count among them). */
KILN_RT_PRIVATE kiln_status kiln_session_output_shapes(kiln_session* s);

#endif /* KILN_RT_SESSION_H_ */
