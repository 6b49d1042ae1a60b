// Reading a package on the compiler side (flatc-generated C++): `kilnc inspect`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// A human-readable or JSON description of the package: inputs and outputs, kernels, groups,
// arena size and lower bound, constant bytes, target, required features, provenance. Throws
// kiln::Error if the bytes are not a valid package.
std::string describe_package(const std::vector<uint8_t>& bytes, bool json);

}  // namespace kiln
