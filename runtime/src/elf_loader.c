/* kiln's ELF loader: maps the kernels' shared object from the package bytes into memory, applies
 * its RELATIVE relocations and finds the entry table. No dlopen, no temporary files. Anything
 * outside what kilnc produces (other relocation kinds, dependencies, initializers, TLS) is
 * refused with a message naming it. Every offset and size is checked against the blob. */
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


static int in_range(uint64_t off, uint64_t len, uint64_t size) {
  uint64_t end;
  return !kiln_add_overflow(off, len, &end) && end <= size;
}

static kiln_status bad(const char* what) { return kiln_error(KILN_INVALID_PACKAGE, "kernel code (ELF): %s", what); }

void kiln_elf_unload(kiln_code* code) {
  if (code->base) munmap(code->base, code->size);
  memset(code, 0, sizeof *code);
}

kiln_status kiln_elf_load(const uint8_t* elf, size_t size, kiln_code* out) {
  memset(out, 0, sizeof *out);
  if (size < sizeof(Elf64_Ehdr)) return bad("shorter than an ELF header");
  Elf64_Ehdr eh;
  memcpy(&eh, elf, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return bad("not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) return bad("not ELF64 little-endian");
  if (eh.e_type != ET_DYN) return bad("not a shared object");
  if (eh.e_machine != KILN_ELF_MACHINE)
    return kiln_error(KILN_UNSUPPORTED, "kernel code is for ELF machine %u, this runtime runs %s", eh.e_machine,
                      kiln_runtime_arch());
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || !in_range(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size))
    return bad("program headers out of bounds");
  if (eh.e_shnum && (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_range(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size)))
    return bad("section headers out of bounds");

  /* The image spans every PT_LOAD segment. */
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  uint64_t span = 0;
  const Elf64_Phdr* dyn_ph = NULL;
  Elf64_Phdr ph[64];
  if (eh.e_phnum > 64) return bad("too many program headers");
  memcpy(ph, elf + eh.e_phoff, (size_t)eh.e_phnum * sizeof(Elf64_Phdr));
  for (int i = 0; i < eh.e_phnum; ++i) {
    if (ph[i].p_type == PT_TLS) return bad("thread-local storage is not supported");
    if (ph[i].p_type == PT_INTERP) return bad("an interpreter request (PT_INTERP)");
    if (ph[i].p_type == PT_DYNAMIC) dyn_ph = &ph[i];
    if (ph[i].p_type != PT_LOAD) continue;
    uint64_t end;
    if (ph[i].p_filesz > ph[i].p_memsz || !in_range(ph[i].p_offset, ph[i].p_filesz, size) ||
        kiln_add_overflow(ph[i].p_vaddr, ph[i].p_memsz, &end) || end > (1ull << 32))
      return bad("a segment out of bounds");
    if (end > span) span = end;
  }
  if (span == 0) return bad("no loadable segment");
  span = (span + (uint64_t)page - 1) & ~((uint64_t)page - 1);
  uint8_t* base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return kiln_error(KILN_OUT_OF_MEMORY, "cannot map %llu bytes for kernel code", (unsigned long long)span);
  out->base = base;
  out->size = span;
  for (int i = 0; i < eh.e_phnum; ++i)
    if (ph[i].p_type == PT_LOAD && ph[i].p_filesz) memcpy(base + ph[i].p_vaddr, elf + ph[i].p_offset, ph[i].p_filesz);

  /* Dynamic section: relocations (RELA, RELATIVE only); refuse dependencies and initializers. */
  if (!dyn_ph || !in_range(dyn_ph->p_vaddr, dyn_ph->p_memsz, span)) {
    kiln_elf_unload(out);
    return bad("no dynamic section");
  }
  uint64_t rela = 0, relasz = 0, relaent = sizeof(Elf64_Rela);
  size_t ndyn = (size_t)(dyn_ph->p_memsz / sizeof(Elf64_Dyn));
  for (size_t i = 0; i < ndyn; ++i) {
    Elf64_Dyn d;
    memcpy(&d, base + dyn_ph->p_vaddr + i * sizeof(Elf64_Dyn), sizeof d);
    if (d.d_tag == DT_NULL) break;
    switch (d.d_tag) {
      case DT_NEEDED: kiln_elf_unload(out); return bad("depends on a shared library (DT_NEEDED)");
      case DT_INIT:
      case DT_INIT_ARRAY:
      case DT_PREINIT_ARRAY:
      case DT_FINI:
      case DT_FINI_ARRAY: kiln_elf_unload(out); return bad("has initializers or finalizers");
      case DT_TEXTREL: kiln_elf_unload(out); return bad("has text relocations");
      case DT_REL: kiln_elf_unload(out); return bad("has REL relocations (only RELA is supported)");
      case DT_PLTRELSZ:
        if (d.d_un.d_val) {
          kiln_elf_unload(out);
          return bad("has PLT relocations (calls to external functions)");
        }
        break;
      case DT_RELA: rela = d.d_un.d_ptr; break;
      case DT_RELASZ: relasz = d.d_un.d_val; break;
      case DT_RELAENT: relaent = d.d_un.d_val; break;
      default: break;
    }
  }
  if (relasz && (relaent != sizeof(Elf64_Rela) || !in_range(rela, relasz, span))) {
    kiln_elf_unload(out);
    return bad("relocation table out of bounds");
  }
  for (uint64_t off = 0; off + sizeof(Elf64_Rela) <= relasz; off += sizeof(Elf64_Rela)) {
    Elf64_Rela r;
    memcpy(&r, base + rela + off, sizeof r);
    if ((long)ELF64_R_TYPE(r.r_info) != KILN_R_RELATIVE) {
      kiln_elf_unload(out);
      return kiln_error(KILN_INVALID_PACKAGE, "kernel code (ELF): relocation of type %lu (only RELATIVE is supported)",
                        (unsigned long)ELF64_R_TYPE(r.r_info));
    }
    if (!in_range(r.r_offset, 8, span) || r.r_addend < 0 || (uint64_t)r.r_addend >= span) {
      kiln_elf_unload(out);
      return bad("a relocation out of bounds");
    }
    uint64_t v = (uint64_t)(uintptr_t)base + (uint64_t)r.r_addend;
    memcpy(base + r.r_offset, &v, 8);
  }

  /* The entry table: the dynamic symbol kiln_kernels_v1 (found through the section headers). */
  uint64_t table = 0;
  for (int i = 0; i < eh.e_shnum && !table; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, elf + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || !in_range(sh.sh_offset, sh.sh_size, size) || sh.sh_link >= eh.e_shnum) break;
    Elf64_Shdr str;
    memcpy(&str, elf + eh.e_shoff + (uint64_t)sh.sh_link * sizeof str, sizeof str);
    if (!in_range(str.sh_offset, str.sh_size, size)) break;
    for (uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym s;
      memcpy(&s, elf + sh.sh_offset + k * sizeof s, sizeof s);
      static const char want[] = "kiln_kernels_v1";
      if (s.st_name >= str.sh_size || str.sh_size - s.st_name < sizeof want) continue;
      if (memcmp(elf + str.sh_offset + s.st_name, want, sizeof want) != 0) continue;
      if (s.st_shndx == SHN_UNDEF || !in_range(s.st_value, 16, span)) break;
      table = s.st_value;
    }
  }
  if (!table) {
    kiln_elf_unload(out);
    return bad("no entry table (kiln_kernels_v1)");
  }
  uint32_t head[4];
  memcpy(head, base + table, sizeof head);
  if (head[0] != KILN_TABLE_MAGIC || head[1] != KILN_TABLE_VERSION) {
    kiln_elf_unload(out);
    return kiln_error(KILN_UNSUPPORTED, "kernel entry table version %u (magic 0x%08x); this runtime reads version %u", head[1],
                      head[0], KILN_TABLE_VERSION);
  }
  if (!in_range(table + 16, (uint64_t)head[2] * sizeof(void*), span)) {
    kiln_elf_unload(out);
    return bad("entry table out of bounds");
  }
  out->entries = (const kiln_kernel_fn*)(base + table + 16);
  out->num_entries = head[2];

  /* Protections from the segments' flags; every entry must point into executable memory. */
  for (int i = 0; i < eh.e_phnum; ++i) {
    if (ph[i].p_type != PT_LOAD) continue;
    uint64_t start = ph[i].p_vaddr & ~((uint64_t)page - 1);
    uint64_t end = (ph[i].p_vaddr + ph[i].p_memsz + (uint64_t)page - 1) & ~((uint64_t)page - 1);
    int prot = ((ph[i].p_flags & PF_R) ? PROT_READ : 0) | ((ph[i].p_flags & PF_W) ? PROT_WRITE : 0) |
               ((ph[i].p_flags & PF_X) ? PROT_EXEC : 0);
    if ((ph[i].p_flags & PF_W) && (ph[i].p_flags & PF_X)) {
      kiln_elf_unload(out);
      return bad("a writable and executable segment");
    }
    if (mprotect(base + start, end - start, prot) != 0) {
      kiln_elf_unload(out);
      return kiln_error(KILN_INTERNAL, "cannot protect kernel code memory");
    }
  }
  /* Data made read-only after relocation (the entry table lives there). */
  for (int i = 0; i < eh.e_phnum; ++i) {
    if (ph[i].p_type != PT_GNU_RELRO) continue;
    uint64_t start = ph[i].p_vaddr & ~((uint64_t)page - 1);
    uint64_t end = (ph[i].p_vaddr + ph[i].p_memsz) & ~((uint64_t)page - 1);
    if (end > start && end <= span && mprotect(base + start, end - start, PROT_READ) != 0) {
      kiln_elf_unload(out);
      return kiln_error(KILN_INTERNAL, "cannot protect relocated kernel data");
    }
  }
  for (uint32_t k = 0; k < out->num_entries; ++k) {
    uint64_t addr = (uint64_t)(uintptr_t)out->entries[k] - (uint64_t)(uintptr_t)base;
    int ok = 0;
    for (int i = 0; i < eh.e_phnum && !ok; ++i)
      ok = ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && addr >= ph[i].p_vaddr && addr < ph[i].p_vaddr + ph[i].p_memsz;
    if (!ok) {
      kiln_elf_unload(out);
      return bad("an entry outside executable code");
    }
  }
  return KILN_OK;
}
