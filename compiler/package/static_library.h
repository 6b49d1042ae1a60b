// --emit static-lib, the package side: the library's C symbol, the id binding the code-less
// package to its linked entry table, and the C header declaring them. (The archive itself, an
// object file holding the kernels and optionally the package bytes, is made by codegen:
// codegen/llvm/static_archive.h.) The runtime then needs no ELF loader: kiln_model_load_static.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// The output path without a trailing ".a": NAME.a, NAME.h and NAME.kiln are written there.
std::string static_library_prefix(const std::string& output_path);

// The C identifier for output path NAME (its file name without ".a", non-identifier characters
// as '_').
std::string static_library_symbol(const std::string& output_path);

// The id binding a static package to its entry table: CRC-32C of the model digest and the flags
// (never 0).
uint32_t static_kernels_id(const std::string& model_sha256, const std::vector<std::string>& flags);

// NAME.h: the entry table `<symbol>_kernels` (kiln_abi.h's layout, `num_kernels` entries) and,
// with `embedded`, the package bytes `<symbol>_package` and `<symbol>_package_size`; else the
// name of the package file written next to it.
std::string static_library_header(const std::string& symbol, size_t num_kernels, bool embedded,
                                  const std::string& package_file);

}  // namespace kiln
