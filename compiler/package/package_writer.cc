#include "compiler/package/package_writer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "compiler/ir/printer.h"
#include "compiler/package/package_signing.h"
#include "compiler/schedule/extents.h"
#include "compiler/support/arith.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/tensor.h"
#include "kiln/schema/kiln_generated.h"
#include "schema/kiln_abi.h"

namespace kiln {

namespace {

fb::DType to_fb(DType d) {
  return static_cast<fb::DType>(package_dtype(d));
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

namespace {

// The weights of every variant, each distinct tensor once (variant 0's in buffer order, so a
// one-variant package is laid out as before variants existed), 64-byte aligned.
class ConstantPool {
 public:
  explicit ConstantPool(size_t capacity) { data_.reserve(capacity); }
  // The offset of `bytes` in the pool; `share`: reuse an equal tensor written before.
  int64_t add(const std::vector<uint8_t>& bytes, bool share) {
    std::string_view key(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    size_t h = std::hash<std::string_view>{}(key);
    if (share) {
      auto [lo, hi] = by_hash_.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (std::equal(bytes.begin(), bytes.end(), data_.begin() + it->second)) return it->second;
    }
    int64_t off = round_up(static_cast<int64_t>(data_.size()), 64);
    data_.resize(static_cast<size_t>(off), 0);
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    by_hash_.emplace(h, off);
    return off;
  }
  const std::vector<uint8_t>& bytes() const { return data_; }

 private:
  std::vector<uint8_t> data_;
  std::multimap<size_t, int64_t> by_hash_;
};

// A variant's tables, built before the table that holds them.
struct VariantTables {
  flatbuffers::Offset<fb::Target> target;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>>> inputs, outputs;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Kernel>>> kernels;
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> code;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Slot>>> slots;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Group>>> groups;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Loop>>> loops;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Count>>> counts;
  uint64_t arena_size, arena_lower_bound;
  uint32_t arena_alignment;
};

VariantTables build_variant(flatbuffers::FlatBufferBuilder& fbb, const PackageVariant& v,
                            ConstantPool& pool, bool share_constants) {
  const Plan& plan = *v.plan;
  const Graph& g = *v.graph;
  VariantTables out;

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
    uint32_t index = 0, first = 0, last = 0, in_place_of = 0;
    uint64_t offset = 0;
    switch (b.kind) {
      case BufferKind::Intermediate: {
        const MemorySlot* s = arena.at(b.id);
        offset = static_cast<uint64_t>(s->offset);
        first = static_cast<uint32_t>(s->first_group);
        last = static_cast<uint32_t>(s->last_group);
        // Slots are in buffer order: a buffer's id is its slot's index.
        if (s->in_place_of >= 0) in_place_of = static_cast<uint32_t>(s->in_place_of) + 1;
        break;
      }
      case BufferKind::Weight:
        kind = fb::SlotKind::Constant;
        offset = static_cast<uint64_t>(pool.add(g.weight(b.weight_id).bytes(), share_constants));
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
                                   first, last, to_fb(b.dtype), static_cast<uint64_t>(b.numel()),
                                   in_place_of));
  }
  out.slots = fbb.CreateVector(slots);

  auto tensor_infos = [&](const std::vector<int>& ids) {
    std::vector<flatbuffers::Offset<fb::TensorInfo>> t;
    for (int id : ids) {
      const PlanBuffer& b = plan.buffer(id);
      // A symbolic tensor (format 2.4): an input says which symbol each axis sets, an output
      // how to compute each axis's run-time size.
      std::vector<int32_t> axis_symbols;
      std::vector<int64_t> programs;
      std::vector<uint32_t> offsets;
      bool input = b.kind == BufferKind::Input;
      for (const UOp* e : b.extents) {
        if (input) {
          axis_symbols.push_back(e->op == Op::DEFINE_VAR ? static_cast<int32_t>(e->var().slot)
                                                         : -1);
        } else {
          offsets.push_back(static_cast<uint32_t>(programs.size()));
          std::vector<int64_t> p = extent_program(e);
          if (p.size() > KILN_ABI_MAX_EXTENT_PROGRAM)
            throw Error(str_cat("output '", b.name, "': the size expression ", render(e),
                                " is longer than a package allows"));
          programs.insert(programs.end(), p.begin(), p.end());
        }
      }
      bool sym = !b.extents.empty();
      std::vector<int32_t> value_symbols(b.value_symbols.begin(), b.value_symbols.end());
      t.push_back(fb::CreateTensorInfoDirect(
          fbb, b.name.c_str(), to_fb(b.dtype), &b.shape, static_cast<uint32_t>(id),
          sym && input ? &axis_symbols : nullptr, sym && !input ? &programs : nullptr,
          sym && !input ? &offsets : nullptr, value_symbols.empty() ? nullptr : &value_symbols));
    }
    return fbb.CreateVector(t);
  };
  out.inputs = tensor_infos(plan.inputs);
  out.outputs = tensor_infos(plan.outputs);

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
        fbb.CreateVectorOfStructs(extents), static_cast<uint64_t>(kernel_flops(k.ast))));
  }
  out.kernels = fbb.CreateVector(kernels);

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
  out.groups = fbb.CreateVector(groups);
  if (!plan.loops.empty()) {
    if (plan.loops.size() > KILN_ABI_MAX_LOOPS)
      throw Error(str_cat("the model has ", plan.loops.size(),
                          " loop groups; a package holds at most ", KILN_ABI_MAX_LOOPS));
    std::vector<const PlanLoop*> order;
    for (const PlanLoop& l : plan.loops) order.push_back(&l);
    std::sort(order.begin(), order.end(),
              [](const PlanLoop* a, const PlanLoop* b) { return a->first_group < b->first_group; });
    std::vector<flatbuffers::Offset<fb::Loop>> loops;
    for (const PlanLoop* l : order)
      loops.push_back(fb::CreateLoopDirect(
          fbb, l->name.c_str(), static_cast<uint32_t>(l->first_group),
          static_cast<uint32_t>(l->last_group), l->trips, l->cond, l->max_trips,
          static_cast<uint32_t>(l->iteration), static_cast<uint32_t>(l->count)));
    out.loops = fbb.CreateVector(loops);
  }
  if (!plan.counts.empty()) {
    std::vector<flatbuffers::Offset<fb::Count>> counts;
    for (const PlanCount& c : plan.counts)
      counts.push_back(fb::CreateCount(fbb, static_cast<uint32_t>(c.symbol),
                                       static_cast<uint32_t>(c.buffer),
                                       static_cast<uint32_t>(c.group)));
    out.counts = fbb.CreateVector(counts);
  }

  const TargetInfo& t = *v.target;
  std::vector<flatbuffers::Offset<flatbuffers::String>> feats;
  for (const auto& f : t.required_features()) feats.push_back(fbb.CreateString(f));
  out.target = fb::CreateTarget(fbb, fbb.CreateString(t.triple()), fbb.CreateString(t.cpu()),
                                fbb.CreateVector(feats));
  fbb.ForceVectorAlignment(v.shared_object->size(), 1, 64);
  out.code = fbb.CreateVector(*v.shared_object);
  out.arena_size = static_cast<uint64_t>(plan.memory.arena_bytes);
  out.arena_alignment = static_cast<uint32_t>(plan.memory.alignment);
  out.arena_lower_bound = static_cast<uint64_t>(plan.memory.lower_bound_bytes);
  return out;
}

// Every variant reads and writes the same tensors: the runtime gives sessions one interface.
void check_same_interface(const std::vector<PackageVariant>& variants) {
  const Plan& first = *variants[0].plan;
  auto interface = [](const Plan& p, const std::vector<int>& ids) {
    std::vector<std::tuple<std::string, std::string, Shape>> t;
    for (int id : ids) {
      const PlanBuffer& b = p.buffer(id);
      t.emplace_back(b.name, b.dtype.str(), b.shape);
    }
    return t;
  };
  for (const PackageVariant& v : variants) {
    KILN_CHECK(interface(*v.plan, v.plan->inputs) == interface(first, first.inputs) &&
                   interface(*v.plan, v.plan->outputs) == interface(first, first.outputs),
               "the variant for ", v.target->cpu(),
               " has other inputs or outputs than the one for ", variants[0].target->cpu());
    KILN_CHECK(v.target->triple() == variants[0].target->triple(),
               "the variants of a package share one target triple");
  }
}

}  // namespace

std::vector<uint8_t> write_package(const Plan& plan, const Graph& g,
                                   const std::vector<uint8_t>& shared_object, const TargetInfo& t,
                                   const PackageProvenance& prov, const SelfTestData* selftest,
                                   uint32_t static_kernels_id, const SigningKey* signing_key) {
  return write_package({PackageVariant{&plan, &g, &shared_object, &t}}, prov, selftest,
                       static_kernels_id, signing_key);
}

std::vector<uint8_t> write_package(const std::vector<PackageVariant>& variants,
                                   const PackageProvenance& prov, const SelfTestData* selftest,
                                   uint32_t static_kernels_id, const SigningKey* signing_key) {
  KILN_CHECK(!variants.empty(), "a package needs a variant");
  KILN_CHECK(variants.size() <= KILN_ABI_MAX_VARIANTS, "a package holds at most ",
             KILN_ABI_MAX_VARIANTS, " variants, not ", variants.size());
  KILN_CHECK(static_kernels_id == 0 || (variants.size() == 1 && variants[0].shared_object->empty()),
             "a static-library package has one variant and carries no shared object");
  check_same_interface(variants);
  const Plan& plan = *variants[0].plan;
  const std::vector<uint8_t>& shared_object = *variants[0].shared_object;
  // Room for every weight and the code up front (at most: a graph also keeps the weights its
  // folds replaced): the builder and the pool grew by doubling, copying resnet50's 100 MB of
  // weights several times over.
  size_t room = size_t{1} << 20;
  for (const PackageVariant& v : variants) {
    room += v.shared_object->size();
    for (const auto& [id, w] : v.graph->weights()) room += static_cast<size_t>(w.nbytes()) + 64;
  }
  flatbuffers::FlatBufferBuilder fbb(room);
  fbb.ForceDefaults(true);  // every scalar present, so that the checksum field can be patched

  ConstantPool pool(room);
  std::vector<VariantTables> built;
  for (size_t i = 0; i < variants.size(); ++i)
    built.push_back(build_variant(fbb, variants[i], pool, i > 0));
  std::vector<flatbuffers::Offset<fb::Variant>> more;
  for (size_t i = 1; i < built.size(); ++i) {
    const VariantTables& v = built[i];
    fb::VariantBuilder vb(fbb);
    vb.add_target(v.target);
    vb.add_inputs(v.inputs);
    vb.add_outputs(v.outputs);
    vb.add_kernels(v.kernels);
    vb.add_code(v.code);
    vb.add_slots(v.slots);
    vb.add_arena_size(v.arena_size);
    vb.add_arena_alignment(v.arena_alignment);
    vb.add_arena_lower_bound(v.arena_lower_bound);
    vb.add_groups(v.groups);
    if (!v.loops.IsNull()) vb.add_loops(v.loops);
    if (!v.counts.IsNull()) vb.add_counts(v.counts);
    more.push_back(vb.Finish());
  }
  const VariantTables& v0 = built[0];
  const std::vector<uint8_t>& constants = pool.bytes();

  std::vector<flatbuffers::Offset<flatbuffers::String>> flags;
  for (const auto& f : prov.flags) flags.push_back(fbb.CreateString(f));
  auto provenance = fb::CreateProvenance(fbb, KILN_ABI_FORMAT_MAJOR, KILN_ABI_FORMAT_MINOR,
                                         fbb.CreateString(kProducer), fbb.CreateVector(flags),
                                         fbb.CreateString(prov.model_sha256));
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
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Symbol>>> symbols = 0;
  if (!plan.symbols.empty()) {
    if (plan.symbols.size() > KILN_ABI_MAX_SYMBOLS)
      throw Error(str_cat("the model has ", plan.symbols.size(),
                          " symbolic dims; a package holds at most ", KILN_ABI_MAX_SYMBOLS));
    std::vector<flatbuffers::Offset<fb::Symbol>> list;
    for (const Symbol& sy : plan.symbols)
      list.push_back(fb::CreateSymbolDirect(fbb, sy.name.c_str(), sy.min, sy.max));
    symbols = fbb.CreateVector(list);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Check>>> checks = 0;
  if (!plan.checks.empty()) {
    if (plan.checks.size() > KILN_ABI_MAX_CHECKS)
      throw Error(str_cat("the model has ", plan.checks.size(),
                          " run-time value checks; a package holds at most ", KILN_ABI_MAX_CHECKS));
    std::vector<flatbuffers::Offset<fb::Check>> list;
    for (const GraphCheck& c : plan.checks) {
      std::vector<int64_t> code = extent_program(c.holds);
      if (code.size() > KILN_ABI_MAX_CHECK_PROGRAM)
        throw Error(str_cat("the check '", c.message, "' is longer than a package allows"));
      list.push_back(fb::CreateCheckDirect(fbb, &code, c.message.c_str()));
    }
    checks = fbb.CreateVector(list);
  }
  auto pkg = fb::CreatePackage(
      fbb, provenance, v0.target, v0.inputs, v0.outputs, v0.kernels, v0.code, const_vec, v0.slots,
      v0.arena_size, v0.arena_alignment, v0.arena_lower_bound, v0.groups,
      fbb.CreateVector(sections), 0, selftest_table, static_kernels_id, signature,
      more.empty() ? 0 : fbb.CreateVector(more), symbols, checks, v0.loops, v0.counts);
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
