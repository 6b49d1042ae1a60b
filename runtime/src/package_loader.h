/* The package loader's stages (package.c runs them in order). Each stage reads the package
 * through the loader's bounds-checked reader, checks what it reads, and stores what it loads in
 * the model; a stage that fails returns its status and the loader releases everything once
 * (kiln_package_unload), so no stage has cleanup code of its own. Later stages may rely on what
 * earlier ones verified. Not installed. */
#ifndef KILN_RT_PACKAGE_LOADER_H_
#define KILN_RT_PACKAGE_LOADER_H_

#include "fb_reader.h"
#include "internal.h"

typedef struct kiln_loader {
  kiln_model* m;
  fbr r;
  uint64_t root;
  int verify_checksums;
  const kiln_trust* trust;
  /* found by verify_header */
  uint64_t code, constants; /* payload positions (0: absent) */
  uint32_t code_size, constants_size;
  uint64_t crc_field; /* position of metadata_crc32c (0: absent) */
  uint32_t static_id; /* static_kernels_id (0: the package carries its code) */
  /* found by select_variant: each variant's table (variants[0] is the root), and the one the
   * later stages read: its target, tensors, slots, kernels, code and schedule */
  uint64_t variants[KILN_ABI_MAX_VARIANTS];
  uint64_t variant;
  const char* want_variant; /* the application's choice, or NULL */
} kiln_loader;

/* A KILN_INVALID_PACKAGE error for the reader's first failure, naming its byte offset. */
KILN_RT_PRIVATE kiln_status kiln_loader_structure_error(const fbr* r);

#define KILN_FB_CHECK(r)                                   \
  do {                                                     \
    if ((r)->error) return kiln_loader_structure_error(r); \
  } while (0)

/* Scalar fields (0 when absent, as FlatBuffers defaults are). */
KILN_RT_PRIVATE uint32_t kiln_fb_u32_field(fbr* r, uint64_t table, int field);
KILN_RT_PRIVATE uint64_t kiln_fb_u64_field(fbr* r, uint64_t table, int field);
KILN_RT_PRIVATE uint8_t kiln_fb_u8_field(fbr* r, uint64_t table, int field);

/* package.c */
KILN_RT_PRIVATE kiln_status
kiln_verify_header(kiln_loader* ld); /* identifier, root, format version, payloads */
KILN_RT_PRIVATE kiln_status
kiln_verify_signature(kiln_loader* ld); /* the pinned digest, the signature */
KILN_RT_PRIVATE kiln_status kiln_verify_checksums(kiln_loader* ld); /* metadata and section CRCs */
KILN_RT_PRIVATE kiln_status
kiln_select_variant(kiln_loader* ld); /* the variant to load: architecture and CPU features */
/* Makes variant |v| the one the later stages read (its code included). */
KILN_RT_PRIVATE kiln_status kiln_use_variant(kiln_loader* ld, uint32_t v);
/* package_tensors.c */
KILN_RT_PRIVATE kiln_status kiln_load_tensors(kiln_loader* ld); /* inputs, outputs, the self-test */
KILN_RT_PRIVATE kiln_status kiln_load_slots(kiln_loader* ld);   /* arena, slots and their tensors */
/* package_symbols.c */
KILN_RT_PRIVATE kiln_status kiln_load_symbols(kiln_loader* ld); /* symbols, axis symbols, extents */
/* package_schedule.c */
KILN_RT_PRIVATE kiln_status
kiln_load_code(kiln_loader* ld); /* the ELF, or the linked entry table */
KILN_RT_PRIVATE kiln_status
kiln_load_schedule(kiln_loader* ld); /* kernels bound to their code's entries and
                        extents, groups, launches, write-before-read */
KILN_RT_PRIVATE kiln_status
kiln_verify_memory_plan(kiln_loader* ld); /* live arena slots never overlap */
/* package_loops.c */
KILN_RT_PRIVATE kiln_status kiln_load_loops(kiln_loader* ld); /* loop groups, their slots */

#endif /* KILN_RT_PACKAGE_LOADER_H_ */
