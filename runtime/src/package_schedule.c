/* Loader stages: the kernels and the schedule (argument counts, dtypes and access extents against
 * the slots; writes only to writable slots within their lifetimes; no read or write of a slot in
 * the group that writes it by another launch; write-before-read), the memory plan's overlap
 * proof, and binding each kernel to its code. Every check is linear in the package's size, or
 * n log n (the overlap proof), so a crafted package cannot make loading slow. */
#include <stdlib.h>
#include <string.h>

#include "package_loader.h"

/* Each kernel's entry, with the argument count and access extents the code's entry table records
 * for it, which the package's metadata must repeat exactly: the code's are the ones the schedule
 * is checked against. */
static kiln_status bind_entries(kiln_loader* ld) {
  kiln_model* m = ld->m;
  const kiln_code* code = &m->code;
  const kiln_allocator* a = kiln_model_allocator(m);
  uint64_t* first = kiln_alloc(a, ((size_t)code->num_entries + 1) * 8, 8);
  if (!first) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_KERNELS));
  const uint8_t* nargs_at = code->table + KILN_ABI_ENTRY_TABLE_NARGS_OFFSET(code->num_entries);
  const uint8_t* extents = code->table + KILN_ABI_ENTRY_TABLE_EXTENTS_OFFSET(code->num_entries);
  first[0] = 0;
  for (uint32_t e = 0; e < code->num_entries; ++e) {
    uint32_t n;
    memcpy(&n, nargs_at + 4 * (uint64_t)e, 4);
    first[e + 1] = first[e] + n;
  }
  kiln_status st = KILN_OK;
  for (uint32_t i = 0; i < m->num_kernels && st == KILN_OK; ++i) {
    kiln_kernel_desc* k = &m->kernel_descs[i];
    if (k->entry >= code->num_entries) {
      st = kiln_invalid(KM(KERNEL_IS_ENTRY_OF), k->name, k->entry, code->num_entries);
      break;
    }
    k->code_extents = extents + first[k->entry] * KILN_ABI_ARG_EXTENT_SIZE;
    uint64_t code_nargs = first[k->entry + 1] - first[k->entry];
    if (code_nargs != k->nargs || memcmp(k->code_extents, m->buf + k->arg_extents,
                                         (size_t)k->nargs * KILN_ABI_ARG_EXTENT_SIZE))
      st = kiln_invalid(KM(KERNEL_S_ARGUMENTS_OR_ACCESS_EXTENTS), k->name, k->nargs,
                        (unsigned long long)code_nargs);
    m->kernels[i] = code->entries[k->entry];
  }
  kiln_free(a, first);
  return st;
}

/* The kernels: names (copied), entries (bound to the code), argument counts, and where their
 * dtypes and extents are (read again, per launch, while the schedule is verified). */
static kiln_status load_kernels(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint64_t kdata;
  uint32_t n =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->variant, KILN_ABI_PACKAGE_KERNELS)), 4, &kdata);
  KILN_FB_CHECK(R);
  if (n > KILN_ABI_MAX_KERNELS)
    return kiln_invalid(KM(KERNELS_THE_LIMIT_IS), n, KILN_ABI_MAX_KERNELS);
  const kiln_allocator* a = kiln_model_allocator(m);
  m->kernel_descs = kiln_alloc(a, (size_t)n * sizeof(kiln_kernel_desc) + 8, 8);
  m->kernels = kiln_alloc(a, (size_t)n * sizeof(kiln_kernel_fn) + 8, 8);
  if (!m->kernel_descs || !m->kernels)
    return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_KERNELS));
  m->num_kernels = n;
  uint64_t name_bytes = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(R, kdata, i);
    kiln_kernel_desc* k = &m->kernel_descs[i];
    k->name = fbr_string(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_KERNEL_NAME)));
    k->entry = kiln_fb_u32_field(R, t, KILN_ABI_KERNEL_ENTRY);
    k->nargs = kiln_fb_u32_field(R, t, KILN_ABI_KERNEL_NUM_ARGS);
    k->flops = kiln_fb_u64_field(R, t, KILN_ABI_KERNEL_FLOPS);
    uint32_t ndt =
        fbr_vector(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_KERNEL_ARG_DTYPES)), 1, &k->arg_dtypes);
    uint32_t next = fbr_vector(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_KERNEL_ARG_EXTENTS)),
                               KILN_ABI_ARG_EXTENT_SIZE, &k->arg_extents);
    KILN_FB_CHECK(R);
    if (!k->name || k->nargs == 0 || k->nargs > KILN_ABI_MAX_KERNEL_ARGS || ndt != k->nargs ||
        next != k->nargs)
      return kiln_invalid(KM(KERNEL_HAS_A_BAD_NAME_OR), i);
    name_bytes += strlen(k->name) + 1;
  }
  KILN_RETURN_IF_ERROR(bind_entries(ld));
  m->kernel_strings = kiln_alloc(a, (size_t)name_bytes + 1, 8);
  if (!m->kernel_strings) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_KERNELS));
  char* p = m->kernel_strings;
  for (uint32_t i = 0; i < n; ++i) {
    /* (Bounded again: a file another process writes may change between the passes.) */
    size_t len = strlen(m->kernel_descs[i].name) + 1;
    if (len > name_bytes) return kiln_invalid(KM(THE_PACKAGE_CHANGED_WHILE_LOADING));
    name_bytes -= len;
    memcpy(p, m->kernel_descs[i].name, len);
    m->kernel_descs[i].name = p;
    p += len;
  }
  return KILN_OK;
}

/* What the schedule check knows of each slot. */
typedef struct slot_use {
  int32_t written; /* the group that writes it: -1 inputs and constants, INT32_MAX not yet */
  int32_t read;    /* the last group that read it, -1 none */
} slot_use;

/* Argument |a| of launch |li| (group |g|) with its access extent. */
static kiln_status check_argument(kiln_loader* ld, uint32_t li, uint32_t g, uint32_t a,
                                  slot_use* use) {
  kiln_model* m = ld->m;
  const kiln_launch_desc* L = &m->launches[li];
  const kiln_kernel_desc* k = &m->kernel_descs[L->kernel];
  uint32_t s = L->args[a];
  if (s >= m->num_slots)
    return kiln_invalid(KM(LAUNCH_ARGUMENT_NAMES_SLOT_OF), li, a, s, m->num_slots);
  const kiln_slot_desc* sd = &m->slots[s];
  uint8_t dtype = m->buf[k->arg_dtypes + a];
  if (sd->dtype != dtype)
    return kiln_invalid(KM(LAUNCH_ARGUMENT_HAS_DTYPE_KERNEL_WANTS), li, a, sd->dtype, k->name,
                        dtype);
  const uint8_t* ext = k->code_extents + (uint64_t)a * KILN_ABI_ARG_EXTENT_SIZE;
  uint64_t begin, end;
  uint32_t access;
  memcpy(&begin, ext + KILN_ABI_ARG_EXTENT_BEGIN, 8);
  memcpy(&end, ext + KILN_ABI_ARG_EXTENT_END, 8);
  memcpy(&access, ext + KILN_ABI_ARG_EXTENT_ACCESS, 4);
  if (begin > end || end > sd->size)
    return kiln_invalid(KM(LAUNCH_ARGUMENT_KERNEL_TOUCHES_BYTES_OF), li, a, k->name,
                        (unsigned long long)begin, (unsigned long long)end, s,
                        (unsigned long long)sd->size);
  if (access & ~(uint32_t)(KILN_ABI_ACCESS_READ | KILN_ABI_ACCESS_WRITE))
    return kiln_invalid(KM(KERNEL_ARGUMENT_ACCESS), k->name, a, access);
  /* Argument 0 is the kernel's output (the compiler's convention), written even when empty. */
  int writes = (access & KILN_ABI_ACCESS_WRITE) || a == 0;
  if (writes) {
    if (sd->kind != KILN_ABI_SLOT_ARENA && sd->kind != KILN_ABI_SLOT_OUTPUT)
      return kiln_invalid(KM(LAUNCH_WRITES_AN_INPUT_OR_A), li, s);
    /* (Several groups may write one slot: the parts of a concatenation, each its region.) */
    if (use[s].written == (int32_t)g) return kiln_invalid(KM(SLOT_IS_WRITTEN_TWICE), s, g);
    if (use[s].read == (int32_t)g) return kiln_invalid(KM(SLOT_IS_WRITTEN_AND_READ_IN), s, g);
    if (sd->kind == KILN_ABI_SLOT_ARENA && (sd->first_group > g || sd->last_group < g))
      return kiln_invalid(KM(SLOT_IS_WRITTEN_IN_GROUP_OUTSIDE), s, g, sd->first_group,
                          sd->last_group);
    use[s].written = (int32_t)g;
  }
  if ((access & KILN_ABI_ACCESS_READ) || !writes) {
    if (use[s].written == (int32_t)g)
      return kiln_invalid(
          writes ? KM(LAUNCH_READS_SLOT_IT_WRITES) : KM(LAUNCH_READS_SLOT_GROUP_WRITES), li, g, s);
    if (use[s].written > (int32_t)g)
      return kiln_invalid(KM(LAUNCH_IN_GROUP_READS_SLOT_BEFORE), li, g, s);
    if (sd->kind == KILN_ABI_SLOT_ARENA && (sd->first_group > g || sd->last_group < g))
      return kiln_invalid(KM(SLOT_IS_READ_IN_GROUP_OUTSIDE), s, g, sd->first_group, sd->last_group);
    use[s].read = (int32_t)g;
  }
  return KILN_OK;
}

/* Launch |li| of group |g|: its kernel, argument count, task count and every argument. */
static kiln_status check_launch(kiln_loader* ld, uint32_t li, uint32_t g, slot_use* use) {
  kiln_model* m = ld->m;
  const kiln_launch_desc* L = &m->launches[li];
  if (L->kernel >= m->num_kernels)
    return kiln_invalid(KM(LAUNCH_NAMES_KERNEL_OF), li, L->kernel, m->num_kernels);
  const kiln_kernel_desc* k = &m->kernel_descs[L->kernel];
  if (L->nargs != k->nargs)
    return kiln_invalid(KM(LAUNCH_PASSES_ARGUMENTS_KERNEL_TAKES), li, L->nargs, k->name, k->nargs);
  if (L->ntasks == 0 || L->ntasks > KILN_ABI_MAX_TASKS)
    return kiln_invalid(KM(LAUNCH_HAS_TASKS), li, L->ntasks);
  for (uint32_t a = 0; a < L->nargs; ++a) KILN_RETURN_IF_ERROR(check_argument(ld, li, g, a, use));
  return KILN_OK;
}

/* The groups' launches, copied into m->launches and m->launch_args, each checked in schedule
 * order. */
static kiln_status load_groups(kiln_loader* ld, uint64_t gdata, slot_use* use, size_t label_room) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint32_t li = 0;
  uint32_t* args_out = m->launch_args;
  char* labels_out = m->launch_strings;
  for (uint32_t g = 0; g < m->num_groups; ++g) {
    uint64_t gt = fbr_table_at(R, gdata, g), ld_data;
    uint32_t nl = fbr_vector(R, fbr_ref(R, fbr_field(R, gt, KILN_ABI_GROUP_LAUNCHES)), 4, &ld_data);
    KILN_FB_CHECK(R);
    m->groups[g].first_launch = li;
    m->groups[g].num_launches = nl;
    uint64_t items = 0;
    for (uint32_t k = 0; k < nl; ++k, ++li) {
      uint64_t lt = fbr_table_at(R, ld_data, k), args;
      kiln_launch_desc* L = &m->launches[li];
      L->kernel = kiln_fb_u32_field(R, lt, KILN_ABI_LAUNCH_KERNEL);
      L->nargs = fbr_vector(R, fbr_ref(R, fbr_field(R, lt, KILN_ABI_LAUNCH_ARGS)), 4, &args);
      L->ntasks = kiln_fb_u32_field(R, lt, KILN_ABI_LAUNCH_NTASKS);
      L->group = g;
      uint64_t label = fbr_field(R, lt, KILN_ABI_LAUNCH_LABEL);
      const char* text = label ? fbr_string(R, fbr_ref(R, label)) : NULL;
      KILN_FB_CHECK(R);
      memcpy(args_out, m->buf + args, 4 * (size_t)L->nargs); /* (counted in load_schedule) */
      L->args = args_out;
      args_out += L->nargs;
      KILN_RETURN_IF_ERROR(check_launch(ld, li, g, use));
      L->label = m->kernel_descs[L->kernel].name; /* (check_launch proved the index) */
      if (text) {
        /* (Bounded again: a file another process writes may change between the passes.) */
        size_t len = strlen(text) + 1;
        if (len > label_room) return kiln_invalid(KM(THE_PACKAGE_CHANGED_WHILE_LOADING));
        label_room -= len;
        memcpy(labels_out, text, len);
        L->label = labels_out;
        labels_out += len;
      }
      items += L->ntasks;
    }
    if (items > UINT32_MAX) return kiln_invalid(KM(TOO_MANY_TASKS_IN_A_GROUP));
    m->groups[g].num_items = (uint32_t)items;
  }
  /* (An empty tensor has nothing to write.) */
  for (uint32_t s = 0; s < m->num_slots; ++s) {
    const kiln_slot_desc* sd = &m->slots[s];
    if ((sd->kind == KILN_ABI_SLOT_OUTPUT || sd->kind == KILN_ABI_SLOT_ARENA) &&
        use[s].written == INT32_MAX && sd->size != 0)
      return kiln_invalid(KM(SLOT_IS_NEVER_WRITTEN),
                          sd->kind == KILN_ABI_SLOT_OUTPUT ? "output" : "arena", s);
  }
  return KILN_OK;
}

kiln_status kiln_load_schedule(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  KILN_RETURN_IF_ERROR(load_kernels(ld));
  uint64_t gdata;
  uint32_t ngroups =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->variant, KILN_ABI_PACKAGE_GROUPS)), 4, &gdata);
  KILN_FB_CHECK(R);
  if (ngroups > KILN_ABI_MAX_GROUPS)
    return kiln_invalid(KM(GROUPS_THE_LIMIT_IS), ngroups, KILN_ABI_MAX_GROUPS);
  /* to size m->launches, m->launch_args and m->launch_strings */
  uint64_t launches = 0, args = 0, label_bytes = 0;
  for (uint32_t g = 0; g < ngroups && launches <= KILN_ABI_MAX_LAUNCHES; ++g) {
    uint64_t gt = fbr_table_at(R, gdata, g), ldata;
    uint32_t nl = fbr_vector(R, fbr_ref(R, fbr_field(R, gt, KILN_ABI_GROUP_LAUNCHES)), 4, &ldata);
    for (uint32_t k = 0; k < nl && R->error == NULL && args <= KILN_ABI_MAX_LAUNCH_ARGS; ++k) {
      uint64_t unused, lt = fbr_table_at(R, ldata, k);
      args += fbr_vector(R, fbr_ref(R, fbr_field(R, lt, KILN_ABI_LAUNCH_ARGS)), 4, &unused);
      uint64_t label = fbr_field(R, lt, KILN_ABI_LAUNCH_LABEL);
      const char* text = label ? fbr_string(R, fbr_ref(R, label)) : NULL;
      label_bytes += text ? strlen(text) + 1 : 0; /* (at most the package's size in all) */
    }
    launches += nl;
  }
  KILN_FB_CHECK(R);
  if (launches > KILN_ABI_MAX_LAUNCHES) return kiln_invalid(KM(TOO_MANY_LAUNCHES));
  if (args > KILN_ABI_MAX_LAUNCH_ARGS) return kiln_invalid(KM(TOO_MANY_LAUNCH_ARGUMENTS));
  const kiln_allocator* a = kiln_model_allocator(m);
  m->groups = kiln_alloc(a, (size_t)ngroups * sizeof(kiln_group_desc) + 8, 8);
  m->launches = kiln_alloc(a, (size_t)launches * sizeof(kiln_launch_desc) + 8, 8);
  m->launch_args = kiln_alloc(a, (size_t)args * 4 + 8, 8);
  m->launch_strings = kiln_alloc(a, (size_t)label_bytes + 1, 8);
  slot_use* use = kiln_alloc(a, (size_t)m->num_slots * sizeof(slot_use) + 8, 8);
  kiln_status st = KILN_OK;
  if (!m->groups || !m->launches || !m->launch_args || !m->launch_strings || !use) {
    st = kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_THE_SCHEDULE));
  } else {
    m->num_groups = ngroups;
    m->num_launches = (uint32_t)launches;
    for (uint32_t s = 0; s < m->num_slots; ++s) {
      uint8_t kind = m->slots[s].kind;
      use[s].written =
          kind == KILN_ABI_SLOT_INPUT || kind == KILN_ABI_SLOT_CONSTANT ? -1 : INT32_MAX;
      use[s].read = -1;
    }
    st = load_groups(ld, gdata, use, (size_t)label_bytes);
  }
  kiln_free(a, use);
  return st;
}

/* ---- the memory plan's overlap proof ----
 * Arena slots are rectangles: bytes [offset, offset + size) × groups [first, last]. Taken in
 * order of offset, a slot overlaps an earlier one exactly when some earlier slot alive in one of
 * its groups ends past its offset. A segment tree over the groups keeps, per group, the largest
 * end of the slots seen so far that are alive then (range "max-assign", range max: each node
 * holds the max assigned to its whole range and the max inside it, so nothing is pushed down).
 * n log n time, memory linear in the number of groups. */

typedef struct max_tree {
  uint64_t* whole; /* max assigned to the node's whole range */
  uint64_t* inner; /* max of any point in the node's range */
  uint32_t size;   /* leaves: a power of two >= the number of groups */
} max_tree;

static void tree_assign(max_tree* t, uint32_t node, uint32_t lo, uint32_t hi, uint32_t a,
                        uint32_t b, uint64_t v) {
  if (b < lo || hi < a) return;
  if (v > t->inner[node]) t->inner[node] = v;
  if (a <= lo && hi <= b) {
    if (v > t->whole[node]) t->whole[node] = v;
    return;
  }
  uint32_t mid = lo + (hi - lo) / 2;
  tree_assign(t, 2 * node, lo, mid, a, b, v);
  tree_assign(t, 2 * node + 1, mid + 1, hi, a, b, v);
}

static uint64_t tree_max(const max_tree* t, uint32_t node, uint32_t lo, uint32_t hi, uint32_t a,
                         uint32_t b) {
  if (b < lo || hi < a) return 0;
  if (a <= lo && hi <= b) return t->inner[node];
  uint32_t mid = lo + (hi - lo) / 2;
  uint64_t l = tree_max(t, 2 * node, lo, mid, a, b),
           r = tree_max(t, 2 * node + 1, mid + 1, hi, a, b);
  uint64_t best = t->whole[node];
  if (l > best) best = l;
  if (r > best) best = r;
  return best;
}

typedef struct placed_slot {
  uint64_t offset;
  uint32_t index;
} placed_slot;

static int by_offset(const void* x, const void* y) {
  const placed_slot *a = x, *b = y;
  return a->offset < b->offset ? -1 : a->offset > b->offset ? 1 : 0;
}

kiln_status kiln_verify_memory_plan(kiln_loader* ld) {
  const kiln_model* m = ld->m;
  const kiln_allocator* al = kiln_model_allocator(m);
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->num_slots; ++i) {
    const kiln_slot_desc* s = &m->slots[i];
    if (s->kind != KILN_ABI_SLOT_ARENA) continue;
    if (s->last_group >= m->num_groups) return kiln_invalid(KM(SLOT_LIVES_PAST_THE_LAST_GROUP), i);
    n += s->size != 0; /* an empty slot touches no memory */
    if (!s->in_place_of) continue;
    /* Written in place of slot p (format 2.9): p's bytes exactly, from the group where p's
     * lifetime ends, which p began earlier; the overlap proof below then takes this slot from
     * the next group on, its first group being p's last (where the one kernel overwrites each
     * element of p after reading it). */
    uint32_t p = s->in_place_of - 1;
    if (p >= m->num_slots || p == i || m->slots[p].kind != KILN_ABI_SLOT_ARENA)
      return kiln_invalid(KM(SLOT_IS_IN_PLACE_OF_NO_ARENA_SLOT), i, p);
    const kiln_slot_desc* src = &m->slots[p];
    if (src->offset != s->offset || src->size != s->size || src->last_group != s->first_group ||
        src->first_group >= s->first_group || s->first_group >= s->last_group)
      return kiln_invalid(KM(SLOT_IS_IN_PLACE_OF_BUT_DOES_NOT_FOLLOW), i, p,
                          (unsigned long long)s->offset, (unsigned long long)src->offset,
                          (unsigned long long)s->size, (unsigned long long)src->size,
                          s->first_group, s->last_group, src->first_group, src->last_group);
  }
  if (n < 2) return KILN_OK;
  max_tree t = {NULL, NULL, 1};
  while (t.size < m->num_groups) t.size *= 2;
  placed_slot* order = kiln_alloc(al, (size_t)n * sizeof(placed_slot), 8);
  t.whole = kiln_alloc(al, (size_t)t.size * 2 * 8, 8);
  t.inner = kiln_alloc(al, (size_t)t.size * 2 * 8, 8);
  kiln_status st = KILN_OK;
  if (!order || !t.whole || !t.inner) {
    st = kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_VERIFYING_THE_MEMORY));
    goto done;
  }
  memset(t.whole, 0, (size_t)t.size * 2 * 8);
  memset(t.inner, 0, (size_t)t.size * 2 * 8);
  n = 0;
  for (uint32_t i = 0; i < m->num_slots; ++i)
    if (m->slots[i].kind == KILN_ABI_SLOT_ARENA && m->slots[i].size)
      order[n++] = (placed_slot){m->slots[i].offset, i};
  qsort(order, n, sizeof(placed_slot), by_offset);
  for (uint32_t k = 0; k < n; ++k) {
    const kiln_slot_desc* s = &m->slots[order[k].index];
    uint32_t first = s->first_group + (s->in_place_of != 0); /* its first group is its source's */
    /* Ends are stored + 1 so that 0 means "none". */
    if (tree_max(&t, 1, 0, t.size - 1, first, s->last_group) > s->offset + 1) {
      st = kiln_invalid(KM(ARENA_SLOT_OVERLAPS_ANOTHER_WHILE_BOTH), order[k].index);
      goto done;
    }
    tree_assign(&t, 1, 0, t.size - 1, first, s->last_group, s->offset + s->size + 1);
  }
done:
  kiln_free(al, order);
  kiln_free(al, t.whole);
  kiln_free(al, t.inner);
  return st;
}

/* A static library's entry table, linked into the application (kiln_abi.h's layout). */
static kiln_status load_static_table(kiln_loader* ld) {
  kiln_model* m = ld->m;
  kiln_abi_entry_table_header head;
  memcpy(&head, m->static_table, sizeof head);
  if (head.magic != KILN_ABI_ENTRY_TABLE_MAGIC || head.version != KILN_ABI_ENTRY_TABLE_VERSION)
    return kiln_invalid(KM(KILN_MODEL_LOAD_STATIC_KERNELS_IS));
  if (head.id != ld->static_id)
    return kiln_invalid(KM(THE_LINKED_KERNELS_ID_BELONG_TO), head.id, ld->static_id);
  if (head.count > KILN_ABI_MAX_KERNELS) return kiln_invalid(KM(A_STATIC_TABLE_OF_TOO_MANY));
  m->code.table = m->static_table;
  m->code.entries = (const kiln_kernel_fn*)((const uint8_t*)m->static_table +
                                            KILN_ABI_ENTRY_TABLE_ENTRIES_OFFSET);
  m->code.num_entries = head.count;
  return KILN_OK;
}

kiln_status kiln_load_code(kiln_loader* ld) {
  kiln_model* m = ld->m;
  if (ld->static_id) return load_static_table(ld);
  return kiln_elf_load(m->buf + ld->code, ld->code_size, &m->code);
}
