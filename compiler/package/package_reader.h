// Reading a package on the compiler side (flatc-generated C++): `kilnc inspect`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

namespace fb {
struct Package;
}

// The package's root table after FlatBuffers verification (the bytes must outlive it). Throws
// kiln::Error if the bytes are not a valid package.
const fb::Package* verified_package(const std::vector<uint8_t>& bytes);

// A human-readable or JSON description of the package: inputs and outputs, kernels, groups,
// arena size and lower bound, constant bytes, target, required features, provenance. Throws
// kiln::Error if the bytes are not a valid package.
std::string describe_package(const std::vector<uint8_t>& bytes, bool json);

}  // namespace kiln
