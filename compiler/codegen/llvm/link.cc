#include "compiler/codegen/llvm/link.h"

#include <lld/Common/Driver.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Object/ELFTypes.h>
#include <llvm/Support/raw_ostream.h>

#include <unistd.h>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "compiler/codegen/llvm/module_builder.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"

LLD_HAS_DRIVER(elf)

namespace kiln {

namespace {

// A private temporary directory, removed when it goes out of scope (lld reads and writes files).
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("kilnc-link-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::vector<uint8_t> link_shared_object(const std::vector<uint8_t>& object, const TargetInfo& t) {
  TempDir dir;
  std::string obj = (dir.path / "kernels.o").string();
  std::string out = (dir.path / "kernels.so").string();
  {
    std::ofstream f(obj, std::ios::binary);
    f.write(reinterpret_cast<const char*>(object.data()),
            static_cast<std::streamsize>(object.size()));
    if (!f) throw Error("cannot write the temporary object file " + obj);
  }
  std::vector<const char*> args = {"ld.lld",     "-shared",         "--no-undefined",
                                   "-Bsymbolic", "--build-id=none", "--hash-style=gnu",
                                   "-z",         "noexecstack",     "-z",
                                   "now",        "--gc-sections",   "--no-eh-frame-hdr",
                                   "-o",         out.c_str(),       obj.c_str()};
  std::string lld_out, lld_err;
  llvm::raw_string_ostream os(lld_out), es(lld_err);
  // lld's driver keeps global state: one link at a time.
  static std::mutex mu;
  lld::Result r;
  {
    std::lock_guard<std::mutex> lock(mu);
    r = lld::lldMain(args, os, es, {{lld::Gnu, &lld::elf::link}});
  }
  if (r.retCode != 0) throw Error("linking the kernels failed (lld): " + lld_err);
  std::ifstream f(out, std::ios::binary);
  std::vector<uint8_t> so((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (so.empty()) throw Error("lld produced no output");
  std::string bad = check_shared_object(so, t);
  if (!bad.empty()) throw Error("the linked kernels are not freestanding: " + bad);
  return so;
}

std::string check_shared_object(const std::vector<uint8_t>& so, const TargetInfo& t) {
  using ELFT = llvm::object::ELF64LE;
  auto file = llvm::object::ELFFile<ELFT>::create(
      llvm::StringRef(reinterpret_cast<const char*>(so.data()), so.size()));
  if (!file) return "not an ELF64 little-endian file: " + llvm::toString(file.takeError());
  const auto& hdr = file->getHeader();
  if (hdr.e_type != llvm::ELF::ET_DYN) return "not a shared object (ET_DYN)";
  uint16_t want = t.is_x86() ? llvm::ELF::EM_X86_64 : t.is_aarch64() ? llvm::ELF::EM_AARCH64 : 0;
  if (hdr.e_machine != want)
    return "ELF machine " + std::to_string(hdr.e_machine) + ", expected " + std::to_string(want);
  auto phdrs = file->program_headers();
  if (!phdrs) return "bad program headers";
  for (const auto& ph : *phdrs)
    if (ph.p_type == llvm::ELF::PT_TLS) return "has thread-local storage (PT_TLS)";
  auto dyn = file->dynamicEntries();
  if (!dyn) return "no dynamic section";
  for (const auto& d : *dyn) {
    switch (d.d_tag) {
      case llvm::ELF::DT_NEEDED:
        return "depends on a shared library (DT_NEEDED)";
      case llvm::ELF::DT_INIT:
      case llvm::ELF::DT_INIT_ARRAY:
      case llvm::ELF::DT_PREINIT_ARRAY:
      case llvm::ELF::DT_FINI:
      case llvm::ELF::DT_FINI_ARRAY:
        return "has initializers or finalizers";
      case llvm::ELF::DT_TEXTREL:
        return "has text relocations";
      default:
        break;
    }
  }
  auto sections = file->sections();
  if (!sections) return "bad section headers";
  bool table = false;
  uint32_t relative = t.is_x86() ? static_cast<uint32_t>(llvm::ELF::R_X86_64_RELATIVE)
                                 : static_cast<uint32_t>(llvm::ELF::R_AARCH64_RELATIVE);
  for (const auto& sec : *sections) {
    if (sec.sh_type == llvm::ELF::SHT_DYNSYM) {
      auto syms = file->symbols(&sec);
      auto strtab = file->getStringTableForSymtab(sec);
      if (!syms || !strtab) return "bad dynamic symbol table";
      for (const auto& s : *syms) {
        auto name = s.getName(*strtab);
        if (!name || name->empty()) continue;
        if (s.st_shndx == llvm::ELF::SHN_UNDEF)
          return "undefined dynamic symbol '" + name->str() + "'";
        if (*name == KILN_ABI_ENTRY_TABLE_SYMBOL) table = true;
      }
    }
    if (sec.sh_type == llvm::ELF::SHT_RELA) {
      auto relas = file->relas(sec);
      if (!relas) return "bad relocation section";
      for (const auto& r : *relas)
        if (r.getType(false) != relative)
          return "relocation of type " + std::to_string(r.getType(false)) +
                 " (only RELATIVE is allowed)";
    }
    if (sec.sh_type == llvm::ELF::SHT_REL) return "REL relocations (only RELA RELATIVE is allowed)";
  }
  if (!table)
    return std::string("the entry table ") + KILN_ABI_ENTRY_TABLE_SYMBOL + " is not exported";
  return "";
}

std::string shared_object_symbols(const std::vector<uint8_t>& so) {
  using ELFT = llvm::object::ELF64LE;
  auto file = llvm::object::ELFFile<ELFT>::create(
      llvm::StringRef(reinterpret_cast<const char*>(so.data()), so.size()));
  if (!file) return "not an ELF file: " + llvm::toString(file.takeError()) + "\n";
  std::string out = str_cat("shared object: ", so.size(), " bytes\n");
  auto sections = file->sections();
  if (!sections) return out;
  for (const auto& sec : *sections) {
    auto name = file->getSectionName(sec);
    if (name && !name->empty() && (sec.sh_flags & llvm::ELF::SHF_ALLOC))
      out += str_cat("  section ", name->str(), ": ", sec.sh_size, " bytes\n");
    if (sec.sh_type != llvm::ELF::SHT_DYNSYM) continue;
    auto syms = file->symbols(&sec);
    auto strtab = file->getStringTableForSymtab(sec);
    if (!syms || !strtab) continue;
    for (const auto& s : *syms) {
      auto sym = s.getName(*strtab);
      if (!sym || sym->empty()) continue;
      char addr[32];
      std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(s.st_value));
      out += str_cat("  symbol ", sym->str(), " at ", addr, ", ", s.st_size, " bytes\n");
    }
  }
  return out;
}

}  // namespace kiln
