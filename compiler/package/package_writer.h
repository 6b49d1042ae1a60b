// Writes the package (schema/kiln.fbs) for a compiled model: one FlatBuffers file with the
// kernels' shared object, the weights, the memory plan and the schedule, with checksums.
// Reproducible: the same inputs give byte-identical output (no timestamps, no addresses).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/schedule/plan.h"
#include "compiler/tensor/graph.h"

namespace kiln {

class TargetInfo;
struct SigningKey;

inline constexpr const char* kProducer = "kilnc " KILN_VERSION;  // KILN_VERSION: from kiln.h

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

// One target's half of a package: the plan (its weights in `graph`; its launches carry the task
// counts the optimize stage chose; program i is entry i of the kernels' entry table), the kernels'
// shared object (empty for a static library) and the target, whose required features
// (TargetInfo::required_features) are what the runtime checks at load.
struct PackageVariant {
  const Plan* plan;
  const Graph* graph;
  const std::vector<uint8_t>* shared_object;
  const TargetInfo* target;
};

// The package of `variants` (format 2.2 when there are several: variant 0 is the package's own,
// the others are its `variants`, in order). The weights are stored once per distinct tensor
// across variants; every variant must have the same inputs and outputs. A static library
// (static_kernels_id != 0) has one variant and no shared object.
std::vector<uint8_t> write_package(const std::vector<PackageVariant>& variants,
                                   const PackageProvenance& prov,
                                   const SelfTestData* selftest = nullptr,
                                   uint32_t static_kernels_id = 0,
                                   const SigningKey* signing_key = nullptr);
// The package of one variant.
std::vector<uint8_t> write_package(const Plan& plan, const Graph& g,
                                   const std::vector<uint8_t>& shared_object, const TargetInfo& t,
                                   const PackageProvenance& prov,
                                   const SelfTestData* selftest = nullptr,
                                   uint32_t static_kernels_id = 0,
                                   const SigningKey* signing_key = nullptr);

// The metadata checksum (schema/kiln_abi.h's rule) of a package's bytes.
uint32_t package_metadata_crc(const uint8_t* buf, size_t size);

// The package's dtype number (schema/kiln_abi.h) for an IR dtype; throws for one the format has
// not (index, void).
uint8_t package_dtype(DType d);

}  // namespace kiln
