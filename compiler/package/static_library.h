// --emit static-lib: the kernels as a static archive an application links at build time, a C
// header declaring them, and the package data without code (a file, or with --embed-data a C
// array inside the archive). The runtime then needs no ELF loader: kiln_model_load_static.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

class Target;

// The C identifier for output path NAME (its file name, non-identifier characters as '_').
std::string static_library_symbol(const std::string& output_path);

// The id binding a static package to its entry table: CRC-32C of the model digest and the flags
// (never 0).
uint32_t static_kernels_id(const std::string& model_sha256, const std::vector<std::string>& flags);

struct StaticLibrary {
  std::vector<uint8_t> archive;  // NAME.a
  std::string header;            // NAME.h
};

// `kernels_object` defines the entry table `<symbol>_kernels`; with `embed`, the package bytes
// go into the archive as `<symbol>_package` (64-byte aligned) and `<symbol>_package_size`.
StaticLibrary make_static_library(const std::string& symbol, const std::vector<uint8_t>& kernels_object,
                                  size_t num_kernels, const std::vector<uint8_t>* embed,
                                  const std::string& package_file, const Target& t);

}  // namespace kiln
