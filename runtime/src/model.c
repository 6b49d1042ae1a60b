/* Models: loading (file mapping or memory), inspection, release. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

const kiln_allocator* kiln_model_allocator(const kiln_model* m) {
  return m->has_allocator ? &m->allocator : NULL;
}

void kiln_model_options_init(kiln_model_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
}

/* The signature options, from an options struct of any version (older ones have none). */
static kiln_trust trust_of(const kiln_model_options* o) {
  kiln_trust t = {NULL, 0, 0, NULL};
  if (o && o->struct_size >= offsetof(kiln_model_options, pinned_sha256) + sizeof(void*)) {
    t.keys = o->trusted_keys;
    t.num_keys = o->num_trusted_keys;
    t.require = o->require_signature;
    t.pinned_sha256 = o->pinned_sha256;
  }
  return t;
}

static kiln_status check_options(const kiln_model_options* o) {
  if (o && o->struct_size < sizeof(size_t) + sizeof(void*) + sizeof(int))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_OPTIONS_STRUCT_SIZE_IS), o->struct_size);
  if (o && o->allocator && (!o->allocator->alloc || !o->allocator->free))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(THE_ALLOCATOR_NEEDS_BOTH_ALLOC_AND));
  kiln_trust t = trust_of(o);
  if (t.num_keys && !t.keys)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_OPTIONS_TRUSTED_KEYS_AT), t.num_keys);
  if (t.require && !t.num_keys)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_OPTIONS_REQUIRE_SIGNATURE_NEEDS));
  return KILN_OK;
}

/* The variant the application asks for (NULL: the best this CPU runs; older options have none). */
static const char* variant_of(const kiln_model_options* o) {
  if (o && o->struct_size >= offsetof(kiln_model_options, variant) + sizeof(void*))
    return o->variant;
  return NULL;
}

static kiln_status finish_load(kiln_model* m, const kiln_model_options* o, kiln_model** out_model) {
  kiln_trust trust = trust_of(o);
  kiln_status st = kiln_package_load(m, !(o && o->skip_checksums), &trust, variant_of(o));
  if (st != KILN_OK) { /* (the loader released what it loaded) */
    if (m->mapping) munmap(m->mapping, m->size);
    kiln_free(kiln_model_allocator(m), m->owned_copy);
    kiln_allocator a = m->allocator;
    int has = m->has_allocator;
    kiln_free(has ? &a : NULL, m);
    return st;
  }
  *out_model = m;
  return KILN_OK;
}

static kiln_model* new_model(const kiln_model_options* o) {
  const kiln_allocator* a = o ? o->allocator : NULL;
  kiln_model* m = kiln_alloc(a, sizeof *m, 16);
  if (!m) return NULL;
  memset(m, 0, sizeof *m);
  if (a) {
    m->allocator = *a;
    m->has_allocator = 1;
  }
  return m;
}

kiln_status kiln_model_load_file(const char* path, const kiln_model_options* options,
                                 kiln_model** out_model) {
  if (!out_model) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_LOAD_FILE_OUT_MODEL));
  *out_model = NULL;
  if (!path) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_LOAD_FILE_PATH_IS));
  KILN_RETURN_IF_ERROR(check_options(options));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    kiln_status s = errno == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR;
    return kiln_error(s, KM(CANNOT_OPEN), path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return kiln_error(KILN_IO_ERROR, KM(IS_NOT_A_REGULAR_FILE), path);
  }
  if (st.st_size < 8) {
    close(fd);
    return kiln_invalid(KM(HAS_BYTES), path, (long long)st.st_size);
  }
  void* map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return kiln_error(KILN_IO_ERROR, KM(CANNOT_MAP), path, strerror(errno));
  kiln_model* m = new_model(options);
  if (!m) {
    munmap(map, (size_t)st.st_size);
    return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING), path);
  }
  m->buf = map;
  m->size = (size_t)st.st_size;
  m->mapping = map;
  return finish_load(m, options, out_model);
}

static kiln_status load_memory(const void* data, size_t size, const void* static_table,
                               const kiln_model_options* options, kiln_model** out_model,
                               const char* fn) {
  if (!out_model) return kiln_error(KILN_INVALID_ARGUMENT, KM(OUT_MODEL_IS_NULL), fn);
  *out_model = NULL;
  if (!data) return kiln_error(KILN_INVALID_ARGUMENT, KM(DATA_IS_NULL), fn);
  KILN_RETURN_IF_ERROR(check_options(options));
  kiln_model* m = new_model(options);
  if (!m) return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_LOADING_A_PACKAGE));
  if ((uintptr_t)data % 64 == 0) {
    m->buf = data;
  } else {
    /* The constants must be 64-byte aligned in memory: copy to aligned storage. */
    m->owned_copy = kiln_alloc(kiln_model_allocator(m), size, 64);
    if (!m->owned_copy) {
      kiln_free(options ? options->allocator : NULL, m);
      return kiln_error(KILN_OUT_OF_MEMORY, KM(OUT_OF_MEMORY_COPYING_A_BYTE), size);
    }
    memcpy(m->owned_copy, data, size);
    m->buf = m->owned_copy;
  }
  m->size = size;
  m->static_table = static_table;
  return finish_load(m, options, out_model);
}

kiln_status kiln_model_load_memory(const void* data, size_t size, const kiln_model_options* options,
                                   kiln_model** out_model) {
  return load_memory(data, size, NULL, options, out_model, "kiln_model_load_memory");
}

kiln_status kiln_model_load_static(const void* data, size_t size, const void* kernels,
                                   const kiln_model_options* options, kiln_model** out_model) {
  if (out_model) *out_model = NULL;
  if (!kernels) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_LOAD_STATIC_KERNELS_IS_2));
  return load_memory(data, size, kernels, options, out_model, "kiln_model_load_static");
}

kiln_status kiln_model_release(kiln_model* m) {
  if (!m) return KILN_OK;
  int live = __atomic_load_n(&m->live_sessions, __ATOMIC_ACQUIRE);
  if (live > 0)
    return kiln_error(KILN_FAILED_PRECONDITION, KM(KILN_MODEL_RELEASE_SESSION_S_STILL), live);
  kiln_package_unload(m);
  if (m->mapping) munmap(m->mapping, m->size);
  kiln_free(kiln_model_allocator(m), m->owned_copy);
  kiln_allocator a = m->allocator;
  int has = m->has_allocator;
  kiln_free(has ? &a : NULL, m);
  return KILN_OK;
}

kiln_status kiln_model_input_count(const kiln_model* m, size_t* out_count) {
  if (!m || !out_count)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_INPUT_COUNT_NULL_ARGUMENT));
  *out_count = m->num_inputs;
  return KILN_OK;
}

kiln_status kiln_model_output_count(const kiln_model* m, size_t* out_count) {
  if (!m || !out_count)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_OUTPUT_COUNT_NULL_ARGUMENT));
  *out_count = m->num_outputs;
  return KILN_OK;
}

static kiln_status info(const kiln_tensor_desc* t, uint32_t n, size_t index, kiln_tensor_info* out,
                        const char* what) {
  if (!out) return kiln_error(KILN_INVALID_ARGUMENT, KM(OUT_INFO_IS_NULL), what);
  /* (the first version ended before axis_symbols) */
  if (out->struct_size < offsetof(kiln_tensor_info, axis_symbols))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(OUT_INFO_STRUCT_SIZE_IS_EXPECTED), what,
                      out->struct_size, offsetof(kiln_tensor_info, axis_symbols));
  if (index >= n)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(INDEX_OUT_OF_RANGE_THE_MODEL), what, index, n);
  out->name = t[index].name;
  out->dtype = (kiln_dtype)t[index].dtype;
  out->rank = t[index].rank;
  out->shape = t[index].shape;
  out->size_bytes = (size_t)t[index].size_bytes;
  if (out->struct_size >= sizeof(kiln_tensor_info)) out->axis_symbols = t[index].axis_symbols;
  return KILN_OK;
}

kiln_status kiln_model_input_info(const kiln_model* m, size_t index, kiln_tensor_info* out_info) {
  if (!m) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_INPUT_INFO_MODEL_IS));
  return info(m->inputs, m->num_inputs, index, out_info, "kiln_model_input_info");
}

kiln_status kiln_model_output_info(const kiln_model* m, size_t index, kiln_tensor_info* out_info) {
  if (!m) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_OUTPUT_INFO_MODEL_IS));
  return info(m->outputs, m->num_outputs, index, out_info, "kiln_model_output_info");
}

static kiln_status find(const kiln_tensor_desc* t, uint32_t n, const char* name, size_t* out,
                        const char* what) {
  if (!name || !out) return kiln_error(KILN_INVALID_ARGUMENT, KM(NULL_ARGUMENT), what);
  for (uint32_t i = 0; i < n; ++i)
    if (!strcmp(t[i].name, name)) {
      *out = i;
      return KILN_OK;
    }
  return kiln_error(KILN_NOT_FOUND, KM(NO_TENSOR_NAMED), what, name);
}

kiln_status kiln_model_find_input(const kiln_model* m, const char* name, size_t* out_index) {
  if (!m) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_FIND_INPUT_MODEL_IS));
  return find(m->inputs, m->num_inputs, name, out_index, "kiln_model_find_input");
}

kiln_status kiln_model_find_output(const kiln_model* m, const char* name, size_t* out_index) {
  if (!m) return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_FIND_OUTPUT_MODEL_IS));
  return find(m->outputs, m->num_outputs, name, out_index, "kiln_model_find_output");
}

kiln_status kiln_model_arena_requirements(const kiln_model* m, size_t* out_size,
                                          size_t* out_alignment) {
  if (!m || !out_size || !out_alignment)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_ARENA_REQUIREMENTS_NULL_ARGUMENT));
  *out_size = (size_t)m->arena_size;
  *out_alignment = m->arena_alignment;
  return KILN_OK;
}

kiln_status kiln_model_kernel_count(const kiln_model* m, size_t* out_count) {
  if (!m || !out_count)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_KERNEL_COUNT_NULL_ARGUMENT));
  *out_count = m->num_kernels;
  return KILN_OK;
}

kiln_status kiln_model_kernel_name(const kiln_model* m, size_t index, const char** out_name) {
  if (!m || !out_name)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_KERNEL_NAME_NULL_ARGUMENT));
  if (index >= m->num_kernels)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_KERNEL_NAME_INDEX_OUT), index);
  *out_name = m->kernel_descs[index].name;
  return KILN_OK;
}

kiln_status kiln_model_launch_count(const kiln_model* m, size_t* out_count) {
  if (!m || !out_count)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_LAUNCH_COUNT_NULL_ARGUMENT));
  *out_count = m->num_launches;
  return KILN_OK;
}

kiln_status kiln_model_launch_info(const kiln_model* m, size_t index, kiln_launch_info* out) {
  if (!m || !out)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_LAUNCH_INFO_NULL_ARGUMENT));
  if (out->struct_size < offsetof(kiln_launch_info, flops))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_LAUNCH_INFO_STRUCT_SIZE),
                      out->struct_size);
  if (index >= m->num_launches)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_LAUNCH_INFO_INDEX_OUT), index);
  const kiln_launch_desc* L = &m->launches[index];
  out->kernel = L->kernel;
  out->group = L->group;
  out->num_tasks = L->ntasks;
  out->label = L->label;
  if (out->struct_size >= sizeof(kiln_launch_info)) out->flops = m->kernel_descs[L->kernel].flops;
  return KILN_OK;
}

kiln_status kiln_model_variant_count(const kiln_model* m, size_t* out_count) {
  if (!m || !out_count)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_VARIANT_COUNT_NULL_ARGUMENT));
  *out_count = m->num_variants;
  return KILN_OK;
}

kiln_status kiln_model_variant_info(const kiln_model* m, size_t index, kiln_variant_info* out) {
  if (!m || !out)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_VARIANT_INFO_NULL_ARGUMENT));
  if (out->struct_size < sizeof(kiln_variant_info))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_VARIANT_INFO_STRUCT_SIZE),
                      out->struct_size);
  if (index >= m->num_variants)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_VARIANT_INFO_INDEX_OUT), index);
  out->cpu = m->variant_cpu[index];
  out->runs_here = m->variant_runs[index];
  out->chosen = index == m->variant;
  return KILN_OK;
}
