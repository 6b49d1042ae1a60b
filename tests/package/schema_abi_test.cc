// schema/kiln_abi.h against kiln.fbs: every table has exactly the fields kiln_abi.h numbers (the
// numbers themselves are static_asserts in compiler/package/schema_abi.cc), the dtype and slot
// enums have its values, and the metadata checksum and CRC-32C agree between the compiler's
// package writer and the rule both sides share.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/package/package_writer.h"
#include "compiler/tensor/tensor.h"
#include "kiln/schema/kiln_generated.h"
#include "schema/kiln_abi.h"

namespace kiln {
namespace {

TEST(SchemaAbi, EveryTableHasTheFieldsKilnAbiNumbers) {
  struct Table {
    const char* name;
    const flatbuffers::TypeTable* type;
    size_t abi_fields;
  };
  const Table tables[] = {
      {"Package", fb::PackageTypeTable(), KILN_ABI_PACKAGE_FIELD_COUNT},
      {"Provenance", fb::ProvenanceTypeTable(), KILN_ABI_PROVENANCE_FIELD_COUNT},
      {"Target", fb::TargetTypeTable(), KILN_ABI_TARGET_FIELD_COUNT},
      {"TensorInfo", fb::TensorInfoTypeTable(), KILN_ABI_TENSOR_INFO_FIELD_COUNT},
      {"Kernel", fb::KernelTypeTable(), KILN_ABI_KERNEL_FIELD_COUNT},
      {"Slot", fb::SlotTypeTable(), KILN_ABI_SLOT_FIELD_COUNT},
      {"Launch", fb::LaunchTypeTable(), KILN_ABI_LAUNCH_FIELD_COUNT},
      {"Group", fb::GroupTypeTable(), KILN_ABI_GROUP_FIELD_COUNT},
      {"Section", fb::SectionTypeTable(), KILN_ABI_SECTION_FIELD_COUNT},
      {"SelfTest", fb::SelfTestTypeTable(), KILN_ABI_SELFTEST_FIELD_COUNT},
      {"SelfTestTensor", fb::SelfTestTensorTypeTable(), KILN_ABI_SELFTEST_TENSOR_FIELD_COUNT},
      {"Signature", fb::SignatureTypeTable(), KILN_ABI_SIGNATURE_FIELD_COUNT},
  };
  for (const Table& t : tables)
    EXPECT_EQ(t.type->num_elems, t.abi_fields)
        << t.name << ": kiln.fbs and kiln_abi.h disagree on the field count";
  EXPECT_EQ(fb::DTypeTypeTable()->num_elems, static_cast<size_t>(KILN_ABI_DTYPE_COUNT));
  EXPECT_EQ(fb::SlotKindTypeTable()->num_elems, 4u);
}

TEST(SchemaAbi, Crc32cMatchesTheStandardCheckValue) {
  const char* check = "123456789";  // CRC-32C's published check value is 0xE3069283
  EXPECT_EQ(kiln_abi_crc32c(0, check, 9, 0), 0xE3069283u);
  EXPECT_EQ(kiln_abi_crc32c(kiln_abi_crc32c(0, check, 4, 0), check + 4, 5, 0), 0xE3069283u);
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) {
    EXPECT_EQ(kiln_abi_crc32c(0, check, 9, 1), 0xE3069283u);
  }
#endif
}

TEST(SchemaAbi, MetadataChecksumSkipsThePayloadsAndTheField) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 4});
  g.add_output("y", x.exp().uop());
  CompileOptions o;
  o.model_sha256 = "0";
  std::vector<uint8_t> pkg = compile(g, o).package;
  const fb::Package* p = fb::GetPackage(pkg.data());
  EXPECT_EQ(package_metadata_crc(pkg.data(), pkg.size()), p->metadata_crc32c());
  // A byte of the code changes no metadata checksum; a byte of the metadata does.
  std::vector<uint8_t> code = pkg;
  code[static_cast<size_t>(p->code()->data() - pkg.data()) + 100] ^= 1;
  EXPECT_EQ(package_metadata_crc(code.data(), code.size()), p->metadata_crc32c());
  std::vector<uint8_t> meta = pkg;
  meta[8] ^= 1;
  EXPECT_NE(package_metadata_crc(meta.data(), meta.size()), p->metadata_crc32c());
  // Overlapping regions are refused.
  uint32_t crc;
  EXPECT_EQ(kiln_abi_metadata_crc32c(pkg.data(), pkg.size(), {16, 64}, {32, 64}, 200, 0, &crc), -1);
  EXPECT_EQ(
      kiln_abi_metadata_crc32c(pkg.data(), pkg.size(), {pkg.size() - 4, 64}, {0, 0}, 8, 0, &crc),
      -1);
}

}  // namespace
}  // namespace kiln
