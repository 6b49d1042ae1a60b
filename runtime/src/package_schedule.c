/* Loader stages: the kernels and the schedule (argument counts and dtypes, write-before-read),
 * the memory plan's overlap proof, and binding each kernel to its code. */
#include <string.h>

#include "package_loader.h"

#define KILN_MAX_TASKS (1u << 20)
#define KILN_MAX_LAUNCHES (1u << 24)

static kiln_status load_kernels(kiln_loader* ld) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint64_t kdata;
  uint32_t n =
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_KERNELS)), 4, &kdata);
  KILN_FB_CHECK(R);
  m->kernel_descs =
      kiln_alloc(kiln_model_allocator(m), (size_t)n * sizeof(kiln_kernel_desc) + 8, 8);
  m->kernels = kiln_alloc(kiln_model_allocator(m), (size_t)n * sizeof(kiln_kernel_fn) + 8, 8);
  if (!m->kernel_descs || !m->kernels)
    return kiln_error(KILN_OUT_OF_MEMORY, "out of memory loading kernels");
  m->num_kernels = n;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t t = fbr_table_at(R, kdata, i), dts;
    kiln_kernel_desc* k = &m->kernel_descs[i];
    k->name = fbr_string(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_KERNEL_NAME)));
    k->entry = kiln_fb_u32_field(R, t, KILN_ABI_KERNEL_ENTRY);
    k->nargs = kiln_fb_u32_field(R, t, KILN_ABI_KERNEL_NUM_ARGS);
    uint32_t ndt = fbr_vector(R, fbr_ref(R, fbr_field(R, t, KILN_ABI_KERNEL_ARG_DTYPES)), 1, &dts);
    KILN_FB_CHECK(R);
    if (!k->name || ndt != k->nargs || k->nargs == 0)
      return kiln_error(KILN_INVALID_PACKAGE,
                        "invalid package: kernel %u has a bad name or argument list", i);
    k->arg_dtypes = m->buf + dts;
  }
  return KILN_OK;
}

/* Launch |li| of group |g|: its kernel, argument count, task count and arguments, each
 * argument's slot in range with the kernel's dtype; argument 0 is written (an arena or output
 * slot, once, within its lifetime), the others are read (written in an earlier group, within
 * their lifetime). |written| is the group that wrote each slot (-1 inputs and constants,
 * INT32_MAX not yet, -2 in this group). */
static kiln_status check_launch(kiln_loader* ld, uint32_t li, uint32_t g, int32_t* written) {
  kiln_model* m = ld->m;
  kiln_launch_desc* L = &m->launches[li];
  if (L->kernel >= m->num_kernels)
    return kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u names kernel %u of %u", li,
                      L->kernel, m->num_kernels);
  const kiln_kernel_desc* k = &m->kernel_descs[L->kernel];
  if (L->nargs != k->nargs)
    return kiln_error(KILN_INVALID_PACKAGE,
                      "invalid package: launch %u passes %u arguments, kernel %s takes %u", li,
                      L->nargs, k->name, k->nargs);
  if (L->ntasks == 0 || L->ntasks > KILN_MAX_TASKS)
    return kiln_error(KILN_INVALID_PACKAGE, "invalid package: launch %u has %u tasks", li,
                      L->ntasks);
  for (uint32_t a = 0; a < L->nargs; ++a) {
    uint32_t s = L->args[a];
    if (s >= m->num_slots)
      return kiln_error(KILN_INVALID_PACKAGE,
                        "invalid package: launch %u argument %u names slot %u of %u", li, a, s,
                        m->num_slots);
    const kiln_slot_desc* sd = &m->slots[s];
    if (sd->dtype != k->arg_dtypes[a])
      return kiln_error(KILN_INVALID_PACKAGE,
                        "invalid package: launch %u argument %u has dtype %u, kernel %s wants %u",
                        li, a, sd->dtype, k->name, k->arg_dtypes[a]);
    if (a == 0) {
      if (sd->kind != KILN_ABI_SLOT_ARENA && sd->kind != KILN_ABI_SLOT_OUTPUT)
        return kiln_error(KILN_INVALID_PACKAGE,
                          "invalid package: launch %u writes an input or a constant (slot %u)", li,
                          s);
      if (written[s] != INT32_MAX)
        return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u is written twice", s);
      if (sd->kind == KILN_ABI_SLOT_ARENA && sd->first_group > g)
        return kiln_error(KILN_INVALID_PACKAGE,
                          "invalid package: slot %u is written in group %u before its lifetime "
                          "starts",
                          s, g);
    } else {
      if (written[s] >= (int32_t)g)
        return kiln_error(KILN_INVALID_PACKAGE,
                          "invalid package: launch %u in group %u reads slot %u before it is "
                          "written",
                          li, g, s);
      if (sd->kind == KILN_ABI_SLOT_ARENA && sd->last_group < g)
        return kiln_error(KILN_INVALID_PACKAGE,
                          "invalid package: slot %u is read in group %u after its lifetime ends", s,
                          g);
    }
  }
  written[L->args[0]] = -2; /* written in this group: visible from the next */
  return KILN_OK;
}

/* The groups' launches, read into m->launches, each checked in schedule order. */
static kiln_status load_groups(kiln_loader* ld, uint64_t gdata, int32_t* written) {
  kiln_model* m = ld->m;
  fbr* R = &ld->r;
  uint32_t li = 0;
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
      KILN_FB_CHECK(R);
      if (args % 4) return kiln_loader_invalid("misaligned launch arguments");
      L->args = (const uint32_t*)(m->buf + args);
      KILN_RETURN_IF_ERROR(check_launch(ld, li, g, written));
      items += L->ntasks;
    }
    if (items > UINT32_MAX) return kiln_loader_invalid("too many tasks in a group");
    m->groups[g].num_items = (uint32_t)items;
    for (uint32_t s = 0; s < m->num_slots; ++s)
      if (written[s] == -2) written[s] = (int32_t)g;
  }
  /* (An empty tensor has nothing to write.) */
  for (uint32_t s = 0; s < m->num_slots; ++s) {
    const kiln_slot_desc* sd = &m->slots[s];
    if ((sd->kind == KILN_ABI_SLOT_OUTPUT || sd->kind == KILN_ABI_SLOT_ARENA) &&
        written[s] == INT32_MAX && sd->size != 0)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: %s slot %u is never written",
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
      fbr_vector(R, fbr_ref(R, fbr_field(R, ld->root, KILN_ABI_PACKAGE_GROUPS)), 4, &gdata);
  KILN_FB_CHECK(R);
  uint64_t total = 0; /* launches, to size m->launches */
  for (uint32_t g = 0; g < ngroups; ++g) {
    uint64_t gt = fbr_table_at(R, gdata, g), unused;
    total += fbr_vector(R, fbr_ref(R, fbr_field(R, gt, KILN_ABI_GROUP_LAUNCHES)), 4, &unused);
  }
  KILN_FB_CHECK(R);
  if (total > KILN_MAX_LAUNCHES) return kiln_loader_invalid("too many launches");
  const kiln_allocator* a = kiln_model_allocator(m);
  m->groups = kiln_alloc(a, (size_t)ngroups * sizeof(kiln_group_desc) + 8, 8);
  m->launches = kiln_alloc(a, (size_t)total * sizeof(kiln_launch_desc) + 8, 8);
  int32_t* written = kiln_alloc(a, (size_t)m->num_slots * sizeof(int32_t) + 8, 8);
  kiln_status st = KILN_OK;
  if (!m->groups || !m->launches || !written) {
    st = kiln_error(KILN_OUT_OF_MEMORY, "out of memory loading the schedule");
  } else {
    m->num_groups = ngroups;
    m->num_launches = (uint32_t)total;
    for (uint32_t s = 0; s < m->num_slots; ++s)
      written[s] =
          (m->slots[s].kind == KILN_ABI_SLOT_INPUT || m->slots[s].kind == KILN_ABI_SLOT_CONSTANT)
              ? -1
              : INT32_MAX;
    st = load_groups(ld, gdata, written);
  }
  kiln_free(a, written);
  return st;
}

static int ranges_overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn) {
  return a < b + bn && b < a + an;
}

kiln_status kiln_verify_memory_plan(kiln_loader* ld) {
  const kiln_model* m = ld->m;
  for (uint32_t i = 0; i < m->num_slots; ++i) {
    const kiln_slot_desc* a = &m->slots[i];
    if (a->kind != KILN_ABI_SLOT_ARENA) continue;
    if (a->last_group >= m->num_groups)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: slot %u lives past the last group",
                        i);
    for (uint32_t j = i + 1; j < m->num_slots; ++j) {
      const kiln_slot_desc* b = &m->slots[j];
      if (b->kind != KILN_ABI_SLOT_ARENA) continue;
      int live = a->first_group <= b->last_group && b->first_group <= a->last_group;
      if (live && ranges_overlap(a->offset, a->size, b->offset, b->size))
        return kiln_error(KILN_INVALID_PACKAGE,
                          "invalid package: arena slots %u and %u overlap while both are live", i,
                          j);
    }
  }
  return KILN_OK;
}

/* A static library's entry table, linked into the application (kiln_abi.h's layout). */
static kiln_status bind_static_table(kiln_loader* ld) {
  kiln_model* m = ld->m;
  kiln_abi_entry_table_header head;
  memcpy(&head, m->static_table, sizeof head);
  if (head.magic != KILN_ABI_ENTRY_TABLE_MAGIC || head.version != KILN_ABI_ENTRY_TABLE_VERSION)
    return kiln_loader_invalid("kiln_model_load_static: |kernels| is not a kiln entry table");
  if (head.id != ld->static_id)
    return kiln_error(
        KILN_INVALID_PACKAGE,
        "invalid package: the linked kernels (id %08x) belong to another package (id %08x)",
        head.id, ld->static_id);
  m->code.entries = (const kiln_kernel_fn*)((const uint8_t*)m->static_table +
                                            KILN_ABI_ENTRY_TABLE_ENTRIES_OFFSET);
  m->code.num_entries = head.count;
  return KILN_OK;
}

kiln_status kiln_bind_code(kiln_loader* ld) {
  kiln_model* m = ld->m;
  if (ld->static_id)
    KILN_RETURN_IF_ERROR(bind_static_table(ld));
  else
    KILN_RETURN_IF_ERROR(kiln_elf_load(m->buf + ld->code, ld->code_size, &m->code));
  for (uint32_t i = 0; i < m->num_kernels; ++i) {
    const kiln_kernel_desc* k = &m->kernel_descs[i];
    if (k->entry >= m->code.num_entries)
      return kiln_error(KILN_INVALID_PACKAGE, "invalid package: kernel %s is entry %u of %u",
                        k->name, k->entry, m->code.num_entries);
    m->kernels[i] = m->code.entries[k->entry];
  }
  return KILN_OK;
}
