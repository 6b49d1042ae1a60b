/* kiln's ELF loader: maps the kernels' shared object from the package bytes into memory, applies
 * its RELATIVE relocations and finds the entry table. No dlopen, no temporary files. Anything
 * outside what kilnc produces (other relocation kinds, dependencies, initializers, TLS) is
 * refused with a message naming it. Every offset and size is checked against the blob.
 *
 * Memory protection is decided from one model of the final image, before anything is protected:
 * loadable segments may not overlap nor share a page with different permissions, relocations may
 * only patch writable segments, RELRO must lie inside a writable segment, and the entry table and
 * every entry are checked against the pages' final protection (readable; read-execute), never
 * against the segment flags alone. Pages no segment covers end up inaccessible.
 *
 * The steps are functions of their own, run in order by kiln_elf_load; the first failure goes
 * to its one cleanup path (unmap the image). */
#include <elf.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#if defined(__x86_64__)
#define KILN_ELF_MACHINE EM_X86_64
#define KILN_R_RELATIVE R_X86_64_RELATIVE
#elif defined(__aarch64__)
#define KILN_ELF_MACHINE EM_AARCH64
#define KILN_R_RELATIVE R_AARCH64_RELATIVE
#else
#define KILN_ELF_MACHINE (-1)
#define KILN_R_RELATIVE (-1)
#endif

#define KILN_ELF_MAX_PHDRS 64

/* What the steps share: the file, its program headers, and the image being built. */
typedef struct elf_image {
  const uint8_t* elf;
  size_t size;
  Elf64_Ehdr eh;
  Elf64_Phdr ph[KILN_ELF_MAX_PHDRS];
  const Elf64_Phdr* dynamic;
  uint64_t page;
  uint64_t table; /* the entry table's address in the image */
  kiln_code* out;
} elf_image;

static int in_range(uint64_t off, uint64_t len, uint64_t size) {
  uint64_t end;
  return !kiln_add_overflow(off, len, &end) && end <= size;
}

static kiln_status bad(const char* what) {
  return kiln_error(KILN_INVALID_PACKAGE, KM(KERNEL_CODE_ELF), what);
}

static uint64_t page_down(const elf_image* im, uint64_t a) {
  return a & ~(im->page - 1);
}
static uint64_t page_up(const elf_image* im, uint64_t a) {
  return (a + im->page - 1) & ~(im->page - 1);
}

static int prot_of(const Elf64_Phdr* p) {
  return ((p->p_flags & PF_R) ? PROT_READ : 0) | ((p->p_flags & PF_W) ? PROT_WRITE : 0) |
         ((p->p_flags & PF_X) ? PROT_EXEC : 0);
}

/* The loadable segment whose pages hold address |a|, or NULL. */
static const Elf64_Phdr* segment_at(const elf_image* im, uint64_t a) {
  for (int i = 0; i < im->eh.e_phnum; ++i) {
    const Elf64_Phdr* p = &im->ph[i];
    if (p->p_type == PT_LOAD && p->p_memsz && a >= page_down(im, p->p_vaddr) &&
        a < page_up(im, p->p_vaddr + p->p_memsz))
      return p;
  }
  return NULL;
}

/* The protection the page of |a| has once loading is done (protect() applies the same model). */
static int final_prot(const elf_image* im, uint64_t a) {
  const Elf64_Phdr* seg = segment_at(im, a);
  if (!seg) return PROT_NONE;
  for (int i = 0; i < im->eh.e_phnum; ++i) {
    const Elf64_Phdr* p = &im->ph[i];
    if (p->p_type == PT_GNU_RELRO && a >= page_down(im, p->p_vaddr) &&
        a < page_down(im, p->p_vaddr + p->p_memsz))
      return PROT_READ;
  }
  return prot_of(seg);
}

/* Every page of [a, a + n) has all of |want| in its final protection. */
static int range_has_prot(const elf_image* im, uint64_t a, uint64_t n, int want) {
  for (uint64_t pg = page_down(im, a); pg < a + n; pg += im->page)
    if ((final_prot(im, pg) & want) != want) return 0;
  return 1;
}

/* [a, a + n) lies in a writable loadable segment. */
static int in_writable_segment(const elf_image* im, uint64_t a, uint64_t n) {
  for (int i = 0; i < im->eh.e_phnum; ++i) {
    const Elf64_Phdr* p = &im->ph[i];
    if (p->p_type == PT_LOAD && (p->p_flags & PF_W) && a >= p->p_vaddr &&
        a + n <= p->p_vaddr + p->p_memsz)
      return 1;
  }
  return 0;
}

void kiln_elf_unload(kiln_code* code) {
  if (code->base) munmap(code->base, code->size);
  memset(code, 0, sizeof *code);
}

static kiln_status read_headers(elf_image* im) {
  if (im->size < sizeof(Elf64_Ehdr)) return bad("shorter than an ELF header");
  Elf64_Ehdr* eh = &im->eh;
  memcpy(eh, im->elf, sizeof *eh);
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return bad("not an ELF file");
  if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
    return bad("not ELF64 little-endian");
  if (eh->e_type != ET_DYN) return bad("not a shared object");
  if (eh->e_machine != KILN_ELF_MACHINE)
    return kiln_error(KILN_UNSUPPORTED, KM(KERNEL_CODE_IS_FOR_ELF_MACHINE), eh->e_machine,
                      kiln_runtime_arch());
  if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
      !in_range(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), im->size))
    return bad("program headers out of bounds");
  if (eh->e_shnum && (eh->e_shentsize != sizeof(Elf64_Shdr) ||
                      !in_range(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), im->size)))
    return bad("section headers out of bounds");
  if (eh->e_phnum > KILN_ELF_MAX_PHDRS) return bad("too many program headers");
  memcpy(im->ph, im->elf + eh->e_phoff, (size_t)eh->e_phnum * sizeof(Elf64_Phdr));
  return KILN_OK;
}

/* Maps an image spanning every PT_LOAD segment and copies the segments' bytes in. */
static kiln_status map_segments(elf_image* im) {
  uint64_t span = 0;
  for (int i = 0; i < im->eh.e_phnum; ++i) {
    const Elf64_Phdr* p = &im->ph[i];
    if (p->p_type == PT_TLS) return bad("thread-local storage is not supported");
    if (p->p_type == PT_INTERP) return bad("an interpreter request (PT_INTERP)");
    if (p->p_type == PT_DYNAMIC) im->dynamic = p;
    if (p->p_type != PT_LOAD) continue;
    uint64_t end;
    if (p->p_filesz > p->p_memsz || !in_range(p->p_offset, p->p_filesz, im->size) ||
        kiln_add_overflow(p->p_vaddr, p->p_memsz, &end) || end > (1ull << 32))
      return bad("a segment out of bounds");
    if (end > span) span = end;
  }
  if (span == 0) return bad("no loadable segment");
  /* No two segments overlap, nor share a page unless their permissions are the same. */
  for (int i = 0; i < im->eh.e_phnum; ++i)
    for (int j = i + 1; j < im->eh.e_phnum; ++j) {
      const Elf64_Phdr *a = &im->ph[i], *b = &im->ph[j];
      if (a->p_type != PT_LOAD || b->p_type != PT_LOAD || !a->p_memsz || !b->p_memsz) continue;
      if (a->p_vaddr < b->p_vaddr + b->p_memsz && b->p_vaddr < a->p_vaddr + a->p_memsz)
        return bad("overlapping loadable segments");
      if (prot_of(a) != prot_of(b) &&
          page_down(im, a->p_vaddr) < page_up(im, b->p_vaddr + b->p_memsz) &&
          page_down(im, b->p_vaddr) < page_up(im, a->p_vaddr + a->p_memsz))
        return bad("segments with different permissions share a page");
    }
  /* RELRO protects data the relocations wrote: it lies inside one writable segment. */
  for (int i = 0; i < im->eh.e_phnum; ++i) {
    const Elf64_Phdr* p = &im->ph[i];
    if (p->p_type == PT_GNU_RELRO && !in_writable_segment(im, p->p_vaddr, p->p_memsz))
      return bad("a RELRO region outside a writable segment");
  }
  span = (span + im->page - 1) & ~(im->page - 1);
  uint8_t* base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return kiln_error(KILN_OUT_OF_MEMORY, KM(CANNOT_MAP_BYTES_FOR_KERNEL_CODE),
                      (unsigned long long)span);
  im->out->base = base;
  im->out->size = span;
  for (int i = 0; i < im->eh.e_phnum; ++i)
    if (im->ph[i].p_type == PT_LOAD && im->ph[i].p_filesz)
      memcpy(base + im->ph[i].p_vaddr, im->elf + im->ph[i].p_offset, im->ph[i].p_filesz);
  return KILN_OK;
}

/* The dynamic section: refuses dependencies and initializers; applies the RELA relocations,
 * which must all be RELATIVE. */
static kiln_status relocate(elf_image* im) {
  uint8_t* base = im->out->base;
  uint64_t span = im->out->size;
  const Elf64_Phdr* dyn = im->dynamic;
  if (!dyn || !in_range(dyn->p_vaddr, dyn->p_memsz, span)) return bad("no dynamic section");
  uint64_t rela = 0, relasz = 0, relaent = sizeof(Elf64_Rela);
  size_t ndyn = (size_t)(dyn->p_memsz / sizeof(Elf64_Dyn));
  for (size_t i = 0; i < ndyn; ++i) {
    Elf64_Dyn d;
    memcpy(&d, base + dyn->p_vaddr + i * sizeof(Elf64_Dyn), sizeof d);
    if (d.d_tag == DT_NULL) break;
    switch (d.d_tag) {
      case DT_NEEDED:
        return bad("depends on a shared library (DT_NEEDED)");
      case DT_INIT:
      case DT_INIT_ARRAY:
      case DT_PREINIT_ARRAY:
      case DT_FINI:
      case DT_FINI_ARRAY:
        return bad("has initializers or finalizers");
      case DT_TEXTREL:
        return bad("has text relocations");
      case DT_REL:
        return bad("has REL relocations (only RELA is supported)");
      case DT_PLTRELSZ:
        if (d.d_un.d_val) return bad("has PLT relocations (calls to external functions)");
        break;
      case DT_RELA:
        rela = d.d_un.d_ptr;
        break;
      case DT_RELASZ:
        relasz = d.d_un.d_val;
        break;
      case DT_RELAENT:
        relaent = d.d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (relasz && (relaent != sizeof(Elf64_Rela) || !in_range(rela, relasz, span)))
    return bad("relocation table out of bounds");
  for (uint64_t off = 0; off + sizeof(Elf64_Rela) <= relasz; off += sizeof(Elf64_Rela)) {
    Elf64_Rela r;
    memcpy(&r, base + rela + off, sizeof r);
    if ((long)ELF64_R_TYPE(r.r_info) != KILN_R_RELATIVE)
      return kiln_error(KILN_INVALID_PACKAGE, KM(KERNEL_CODE_ELF_RELOCATION_OF_TYPE),
                        (unsigned long)ELF64_R_TYPE(r.r_info));
    if (!in_range(r.r_offset, 8, span) || r.r_addend < 0 || (uint64_t)r.r_addend >= span)
      return bad("a relocation out of bounds");
    if (!in_writable_segment(im, r.r_offset, 8))
      return bad("a relocation patches a segment that is not writable (such as code)");
    uint64_t v = (uint64_t)(uintptr_t)base + (uint64_t)r.r_addend;
    memcpy(base + r.r_offset, &v, 8);
  }
  return KILN_OK;
}

/* The entry table: the dynamic symbol KILN_ABI_ENTRY_TABLE_SYMBOL (through the section
 * headers), with a header of the version this runtime reads. */
static kiln_status find_entry_table(elf_image* im) {
  static const char want[] = KILN_ABI_ENTRY_TABLE_SYMBOL;
  const uint8_t* elf = im->elf;
  uint64_t span = im->out->size, table = 0;
  for (int i = 0; i < im->eh.e_shnum && !table; ++i) {
    Elf64_Shdr sh, str;
    memcpy(&sh, elf + im->eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || !in_range(sh.sh_offset, sh.sh_size, im->size) ||
        sh.sh_link >= im->eh.e_shnum)
      break;
    memcpy(&str, elf + im->eh.e_shoff + (uint64_t)sh.sh_link * sizeof str, sizeof str);
    if (!in_range(str.sh_offset, str.sh_size, im->size)) break;
    for (uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym s;
      memcpy(&s, elf + sh.sh_offset + k * sizeof s, sizeof s);
      if (s.st_name >= str.sh_size || str.sh_size - s.st_name < sizeof want) continue;
      if (memcmp(elf + str.sh_offset + s.st_name, want, sizeof want) != 0) continue;
      if (s.st_shndx == SHN_UNDEF ||
          !in_range(s.st_value, sizeof(kiln_abi_entry_table_header), span))
        break;
      table = s.st_value;
    }
  }
  if (!table) return bad("no entry table (" KILN_ABI_ENTRY_TABLE_SYMBOL ")");
  kiln_abi_entry_table_header head;
  memcpy(&head, im->out->base + table, sizeof head);
  if (head.magic != KILN_ABI_ENTRY_TABLE_MAGIC || head.version != KILN_ABI_ENTRY_TABLE_VERSION)
    return kiln_error(KILN_UNSUPPORTED, KM(KERNEL_ENTRY_TABLE_VERSION_MAGIC_0X), head.version,
                      head.magic, KILN_ABI_ENTRY_TABLE_VERSION);
  /* Header, entries, argument counts, then extents: all inside the image and readable. */
  uint64_t nargs_at = KILN_ABI_ENTRY_TABLE_NARGS_OFFSET(head.count), extents = 0;
  if (head.count > KILN_ABI_MAX_KERNELS ||
      !in_range(table + nargs_at, 4 * (uint64_t)head.count, span))
    return bad("entry table out of bounds");
  for (uint32_t k = 0; k < head.count; ++k) {
    uint32_t n;
    memcpy(&n, im->out->base + table + nargs_at + 4 * (uint64_t)k, 4);
    if (n > KILN_ABI_MAX_KERNEL_ARGS) return bad("an entry with too many arguments");
    extents += n;
  }
  uint64_t table_size =
      KILN_ABI_ENTRY_TABLE_EXTENTS_OFFSET(head.count) + extents * KILN_ABI_ARG_EXTENT_SIZE;
  if (!in_range(table, table_size, span)) return bad("entry table out of bounds");
  if (!range_has_prot(im, table, table_size, PROT_READ))
    return bad("the entry table is not in readable memory once loaded");
  im->out->table = im->out->base + table;
  im->out->entries =
      (const kiln_kernel_fn*)(im->out->base + table + KILN_ABI_ENTRY_TABLE_ENTRIES_OFFSET);
  im->out->num_entries = head.count;
  return KILN_OK;
}

/* Applies final_prot's model: everything inaccessible, then each segment's pages with its
 * permissions, then RELRO read-only. */
static kiln_status protect(elf_image* im) {
  uint8_t* base = im->out->base;
  if (mprotect(base, im->out->size, PROT_NONE) != 0)
    return kiln_error(KILN_INTERNAL, KM(CANNOT_PROTECT_KERNEL_CODE_MEMORY));
  for (int i = 0; i < im->eh.e_phnum; ++i) {
    const Elf64_Phdr* p = &im->ph[i];
    if (p->p_type != PT_LOAD || !p->p_memsz) continue;
    if ((p->p_flags & PF_W) && (p->p_flags & PF_X)) return bad("a writable and executable segment");
    uint64_t start = page_down(im, p->p_vaddr), end = page_up(im, p->p_vaddr + p->p_memsz);
    if (mprotect(base + start, end - start, prot_of(p)) != 0)
      return kiln_error(KILN_INTERNAL, KM(CANNOT_PROTECT_KERNEL_CODE_MEMORY));
  }
  for (int i = 0; i < im->eh.e_phnum; ++i) {
    const Elf64_Phdr* p = &im->ph[i];
    if (p->p_type != PT_GNU_RELRO) continue;
    uint64_t start = page_down(im, p->p_vaddr), end = page_down(im, p->p_vaddr + p->p_memsz);
    if (end > start && mprotect(base + start, end - start, PROT_READ) != 0)
      return kiln_error(KILN_INTERNAL, KM(CANNOT_PROTECT_RELOCATED_KERNEL_DATA));
  }
  return KILN_OK;
}

/* Every entry points into memory that is executable once loaded. */
static kiln_status check_entries(elf_image* im) {
  for (uint32_t k = 0; k < im->out->num_entries; ++k) {
    uint64_t addr = (uint64_t)(uintptr_t)im->out->entries[k] - (uint64_t)(uintptr_t)im->out->base;
    if (addr >= im->out->size || !range_has_prot(im, addr, 1, PROT_READ | PROT_EXEC))
      return bad("an entry outside executable code");
  }
  return KILN_OK;
}

kiln_status kiln_elf_load(const uint8_t* elf, size_t size, kiln_code* out) {
  typedef kiln_status (*step_fn)(elf_image*);
  /* (Entries are checked against the model of the final protections before it is applied.) */
  static const step_fn steps[] = {read_headers,     map_segments,  relocate,
                                  find_entry_table, check_entries, protect};
  elf_image im;
  memset(&im, 0, sizeof im);
  long page = sysconf(_SC_PAGESIZE);
  im.elf = elf;
  im.size = size;
  im.page = page > 0 ? (uint64_t)page : 4096;
  im.out = out;
  memset(out, 0, sizeof *out);
  kiln_status st = KILN_OK;
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; ++i) {
    st = steps[i](&im);
    if (st != KILN_OK) goto fail;
  }
  return KILN_OK;
fail:
  kiln_elf_unload(out);
  return st;
}
