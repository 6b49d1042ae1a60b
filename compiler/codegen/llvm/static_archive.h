// --emit static-lib, the code side: an `ar` archive (GNU format, deterministic) of the kernels'
// relocatable object and, when the package is embedded, an object defining its bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

class TargetInfo;

// `kernels_object` defines the entry table `<symbol>_kernels`; with `embed`, the package bytes
// go into the archive as `<symbol>_package` (64-byte aligned) and `<symbol>_package_size`.
std::vector<uint8_t> static_archive(const std::string& symbol,
                                    const std::vector<uint8_t>& kernels_object,
                                    const std::vector<uint8_t>* embed, const TargetInfo& t);

}  // namespace kiln
