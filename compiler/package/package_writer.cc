#include "compiler/package/package_writer.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/package/package_signing.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "kiln/schema/kiln_generated.h"
#include "schema/kiln_abi.h"

namespace kiln {

namespace {

fb::DType to_fb(DType d) {
  return static_cast<fb::DType>(package_dtype(d));
}

int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

uint8_t package_dtype(DType d) {
  switch (d.scalar) {
    case ScalarKind::Bool:
      return KILN_ABI_DTYPE_BOOL;
    case ScalarKind::Int8:
      return KILN_ABI_DTYPE_INT8;
    case ScalarKind::Int16:
      return KILN_ABI_DTYPE_INT16;
    case ScalarKind::Int32:
      return KILN_ABI_DTYPE_INT32;
    case ScalarKind::Int64:
      return KILN_ABI_DTYPE_INT64;
    case ScalarKind::UInt8:
      return KILN_ABI_DTYPE_UINT8;
    case ScalarKind::UInt16:
      return KILN_ABI_DTYPE_UINT16;
    case ScalarKind::UInt32:
      return KILN_ABI_DTYPE_UINT32;
    case ScalarKind::UInt64:
      return KILN_ABI_DTYPE_UINT64;
    case ScalarKind::Float16:
      return KILN_ABI_DTYPE_FLOAT16;
    case ScalarKind::BFloat16:
      return KILN_ABI_DTYPE_BFLOAT16;
    case ScalarKind::Float32:
      return KILN_ABI_DTYPE_FLOAT32;
    case ScalarKind::Float64:
      return KILN_ABI_DTYPE_FLOAT64;
    case ScalarKind::Void:
    case ScalarKind::Index:
      break;
  }
  throw Error("the package format has no dtype " + d.str());
}

uint32_t package_metadata_crc(const uint8_t* buf, size_t size) {
  const fb::Package* p = fb::GetPackage(buf);
  auto region = [&](const flatbuffers::Vector<uint8_t>* v) {
    if (!v || v->size() == 0) return kiln_abi_region{0, 0};
    return kiln_abi_region{static_cast<uint64_t>(v->data() - buf), v->size()};
  };
  const uint8_t* field =
      reinterpret_cast<const flatbuffers::Table*>(p)->GetAddressOf(fb::Package::VT_METADATA_CRC32C);
  KILN_CHECK(field, "the package has no metadata_crc32c field");
  uint32_t crc = 0;
  KILN_CHECK(kiln_abi_metadata_crc32c(buf, size, region(p->code()), region(p->constants()),
                                      static_cast<uint64_t>(field - buf), 0, &crc) == 0,
             "the package's payloads overlap");
  return crc;
}

std::vector<uint8_t> write_package(const Plan& plan, const Graph& g,
                                   const std::vector<uint8_t>& shared_object, const TargetInfo& t,
                                   const PackageProvenance& prov, const SelfTestData* selftest,
                                   uint32_t static_kernels_id, const SigningKey* signing_key) {
  KILN_CHECK(static_kernels_id == 0 || shared_object.empty(),
             "a static-library package carries no shared object");
  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  fbb.ForceDefaults(true);  // every scalar present, so that the checksum field can be patched

  // Constants: the weights the plan reads, each 64-byte aligned, in buffer order.
  std::vector<uint8_t> constants;
  std::map<int, int64_t> const_offset;
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind != BufferKind::Weight) continue;
    const NDArray& w = g.weight(b.weight_id);
    int64_t off = align_up(static_cast<int64_t>(constants.size()), 64);
    constants.resize(static_cast<size_t>(off), 0);
    constants.insert(constants.end(), w.bytes().begin(), w.bytes().end());
    const_offset[b.id] = off;
  }

  // Slots: one per plan buffer, in buffer order.
  std::map<int, const MemorySlot*> arena;
  for (const MemorySlot& s : plan.memory.slots) arena[s.buffer] = &s;
  std::map<int, uint32_t> input_index, output_index;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    input_index[plan.inputs[i]] = static_cast<uint32_t>(i);
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    output_index[plan.outputs[i]] = static_cast<uint32_t>(i);
  std::vector<flatbuffers::Offset<fb::Slot>> slots;
  for (const PlanBuffer& b : plan.buffers) {
    fb::SlotKind kind = fb::SlotKind::Arena;
    uint32_t index = 0, first = 0, last = 0;
    uint64_t offset = 0;
    switch (b.kind) {
      case BufferKind::Intermediate: {
        const MemorySlot* s = arena.at(b.id);
        offset = static_cast<uint64_t>(s->offset);
        first = static_cast<uint32_t>(s->first_group);
        last = static_cast<uint32_t>(s->last_group);
        break;
      }
      case BufferKind::Weight:
        kind = fb::SlotKind::Constant;
        offset = static_cast<uint64_t>(const_offset.at(b.id));
        break;
      case BufferKind::Input:
        kind = fb::SlotKind::Input;
        index = input_index.at(b.id);
        break;
      case BufferKind::Output:
        kind = fb::SlotKind::Output;
        index = output_index.at(b.id);
        break;
    }
    slots.push_back(fb::CreateSlot(fbb, kind, index, offset, static_cast<uint64_t>(b.bytes()),
                                   first, last, to_fb(b.dtype), static_cast<uint64_t>(b.numel())));
  }

  auto tensor_infos = [&](const std::vector<int>& ids) {
    std::vector<flatbuffers::Offset<fb::TensorInfo>> v;
    for (int id : ids) {
      const PlanBuffer& b = plan.buffer(id);
      v.push_back(fb::CreateTensorInfoDirect(fbb, b.name.c_str(), to_fb(b.dtype), &b.shape,
                                             static_cast<uint32_t>(id)));
    }
    return v;
  };
  auto inputs = tensor_infos(plan.inputs);
  auto outputs = tensor_infos(plan.outputs);

  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    const KernelProgram& k = plan.programs[i];
    std::vector<uint8_t> dts;
    for (DType d : kernel_arg_dtypes(k.ast)) dts.push_back(package_dtype(d));
    std::vector<fb::ArgExtent> extents;
    for (const ArgAccess& a : kernel_arg_accesses(k.ast))
      extents.emplace_back(static_cast<uint64_t>(a.begin), static_cast<uint64_t>(a.end),
                           (a.read ? uint32_t{KILN_ABI_ACCESS_READ} : 0u) |
                               (a.written ? uint32_t{KILN_ABI_ACCESS_WRITE} : 0u));
    kernels.push_back(fb::CreateKernel(
        fbb, fbb.CreateString(k.name), static_cast<uint32_t>(i), static_cast<uint32_t>(dts.size()),
        fbb.CreateVector(reinterpret_cast<const fb::DType*>(dts.data()), dts.size()),
        fbb.CreateVectorOfStructs(extents)));
  }

  std::vector<flatbuffers::Offset<fb::Group>> groups;
  for (const auto& grp : plan.groups) {
    std::vector<flatbuffers::Offset<fb::Launch>> launches;
    for (int li : grp) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      std::vector<uint32_t> args(l.args.begin(), l.args.end());
      uint32_t ntasks = static_cast<uint32_t>(l.ntasks);
      std::string label = l.label(plan.programs[static_cast<size_t>(l.program)].name);
      launches.push_back(fb::CreateLaunchDirect(fbb, static_cast<uint32_t>(l.program), &args,
                                                ntasks, label.c_str()));
    }
    groups.push_back(fb::CreateGroupDirect(fbb, &launches));
  }

  std::vector<flatbuffers::Offset<flatbuffers::String>> flags;
  for (const auto& f : prov.flags) flags.push_back(fbb.CreateString(f));
  auto provenance = fb::CreateProvenance(fbb, KILN_ABI_FORMAT_MAJOR, KILN_ABI_FORMAT_MINOR,
                                         fbb.CreateString(kProducer), fbb.CreateVector(flags),
                                         fbb.CreateString(prov.model_sha256));
  std::vector<std::string> feats = t.required_features();
  std::vector<flatbuffers::Offset<flatbuffers::String>> feat_offsets;
  for (const auto& f : feats) feat_offsets.push_back(fbb.CreateString(f));
  auto target = fb::CreateTarget(fbb, fbb.CreateString(t.triple()), fbb.CreateString(t.cpu()),
                                 fbb.CreateVector(feat_offsets));

  fbb.ForceVectorAlignment(shared_object.size(), 1, 64);
  auto code_vec = fbb.CreateVector(shared_object);
  fbb.ForceVectorAlignment(constants.size(), 1, 64);
  auto const_vec = fbb.CreateVector(constants);
  std::vector<flatbuffers::Offset<fb::Section>> sections = {
      fb::CreateSectionDirect(fbb, "code",
                              kiln_abi_crc32c(0, shared_object.data(), shared_object.size(), 0),
                              shared_object.size()),
      fb::CreateSectionDirect(fbb, "constants",
                              kiln_abi_crc32c(0, constants.data(), constants.size(), 0),
                              constants.size())};

  flatbuffers::Offset<fb::SelfTest> selftest_table = 0;
  if (selftest) {
    auto tensors = [&](const std::vector<std::vector<uint8_t>>& list, const std::vector<int>& ids,
                       const char* what) {
      KILN_CHECK(list.size() == ids.size(), "self-test: ", list.size(), " ", what, " for ",
                 ids.size());
      std::vector<flatbuffers::Offset<fb::SelfTestTensor>> out;
      for (size_t i = 0; i < list.size(); ++i) {
        KILN_CHECK(static_cast<int64_t>(list[i].size()) == plan.buffer(ids[i]).bytes(),
                   "self-test ", what, " ", i, " has the wrong size");
        fbb.ForceVectorAlignment(list[i].size(), 1, 64);
        out.push_back(fb::CreateSelfTestTensor(fbb, fbb.CreateVector(list[i])));
      }
      return fbb.CreateVector(out);
    };
    auto ins = tensors(selftest->inputs, plan.inputs, "inputs");
    auto outs = tensors(selftest->outputs, plan.outputs, "outputs");
    selftest_table = fb::CreateSelfTest(fbb, ins, outs, selftest->tolerance);
  }

  flatbuffers::Offset<fb::Signature> signature = 0;
  if (signing_key) {
    std::vector<uint8_t> zeros(64, 0);
    signature = fb::CreateSignature(
        fbb, fbb.CreateVector(signing_key->public_key.data(), signing_key->public_key.size()),
        fbb.CreateVector(zeros));
  }
  auto pkg = fb::CreatePackage(
      fbb, provenance, target, fbb.CreateVector(inputs), fbb.CreateVector(outputs),
      fbb.CreateVector(kernels), code_vec, const_vec, fbb.CreateVector(slots),
      static_cast<uint64_t>(plan.memory.arena_bytes), static_cast<uint32_t>(plan.memory.alignment),
      static_cast<uint64_t>(plan.memory.lower_bound_bytes), fbb.CreateVector(groups),
      fbb.CreateVector(sections), 0, selftest_table, static_kernels_id, signature);
  fbb.Finish(pkg, fb::PackageIdentifier());
  std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  if (signing_key) {
    sign_package(out, *signing_key);  // (which then sets the metadata checksum)
    return out;
  }
  uint32_t crc = package_metadata_crc(out.data(), out.size());
  fb::GetMutablePackage(out.data())->mutate_metadata_crc32c(crc);
  return out;
}

}  // namespace kiln
