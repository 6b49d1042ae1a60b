// Links a relocatable object into one position-independent shared object with lld, in process.
// The result must be freestanding: no undefined symbols, no libc, no TLS, no initializers and
// only relative relocations; `check_shared_object` proves it by reading the ELF file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

class TargetInfo;

std::vector<uint8_t> link_shared_object(const std::vector<uint8_t>& object, const TargetInfo& t);

// "" if the ELF shared object is freestanding as above (and for the expected machine), else what
// is wrong. Checks: ELF64 little-endian of the target's machine, ET_DYN, no PT_TLS, no undefined
// dynamic symbols, no DT_NEEDED / DT_INIT / DT_INIT_ARRAY / DT_FINI*, relocations only of the
// RELATIVE kind, and the entry table symbol exported.
std::string check_shared_object(const std::vector<uint8_t>& so, const TargetInfo& t);

// The allocated sections and the exported dynamic symbols of a shared object, one per line
// (what --dump-ir=link prints).
std::string shared_object_symbols(const std::vector<uint8_t>& so);

}  // namespace kiln
