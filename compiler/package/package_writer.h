// Writes the package (schema/kiln.fbs) for a compiled model: one FlatBuffers file with the
// kernels' shared object, the weights, the memory plan and the schedule, with checksums.
// Reproducible: the same inputs give byte-identical output (no timestamps, no addresses).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/driver/codegen_driver.h"
#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"

namespace kiln {

class Target;

inline constexpr uint32_t kPackageFormatMajor = 1;
inline constexpr uint32_t kPackageFormatMinor = 1;  // 1.1: the optional self-test
inline constexpr const char* kProducer = "kilnc 0.1.0";

struct PackageProvenance {
  std::vector<std::string> flags;
  std::string model_sha256;
};

// Reference inputs and outputs for the on-device self-test (--embed-selftest).
struct SelfTestData {
  std::vector<std::vector<uint8_t>> inputs;   // per model input, in plan input order
  std::vector<std::vector<uint8_t>> outputs;  // per model output, in plan output order
  float tolerance = 1e-4f;
};

std::vector<uint8_t> write_package(const Plan& plan, const Graph& g, const CodegenArtifacts& code,
                                   const Target& t, const PackageProvenance& prov,
                                   const SelfTestData* selftest = nullptr,
                                   uint32_t static_kernels_id = 0);

// The CPU features a package records as required: the target's features that the runtime can
// check (docs/package-format.md lists them). Code is generated with exactly these enabled.
std::vector<std::string> checkable_features(const Target& t);

// The metadata checksum: CRC-32C of the buffer, skipping the code and constants payloads and
// reading the metadata_crc32c field as zero.
uint32_t package_metadata_crc(const uint8_t* buf, size_t size);

}  // namespace kiln
