// Crafted packages: real packages edited the way an attacker (or a corrupting disk) would, every
// checksum recomputed afterwards (a CRC is not a MAC), each of which the runtime must refuse
// with the check that names it — or, where the edit is harmless, load and run without touching
// memory outside the package's slots. One test per hole of issue #13.
#include <elf.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>

#include "compiler/driver/compile.h"
#include "compiler/package/package_signing.h"
#include "compiler/package/package_writer.h"
#include "compiler/support/file.h"
#include "compiler/tensor/tensor.h"
#include "kiln/kiln.h"
#include "kiln/schema/kiln_generated.h"
#include "schema/kiln_abi.h"
#include "schema/kiln_sign.h"

namespace kiln {
namespace {

std::vector<uint8_t> compile_kg(const std::string& text, const SigningKey* key = nullptr) {
  auto path = std::filesystem::temp_directory_path() /
              ("kiln_crafted_" + std::to_string(::getpid()) + ".kg");
  write_file(path.string(), text);
  CompileOptions o;
  o.provenance_flags = {"--test"};
  o.signing_key = key;
  std::vector<uint8_t> pkg = compile(path.string(), o).package;
  std::filesystem::remove(path);
  return pkg;
}

// Two layers: conv -> relu -> mean, and a second output: several groups, arena slots, weights.
const char* kNet =
    "input x: float32[1, 4, 8, 8]\n"
    "weight w: float32[8, 4, 3, 3] = random(seed=1, scale=0.3)\n"
    "c = conv(x, w, padding=[[1, 1], [1, 1]])\n"
    "r = relu(c)\n"
    "m = mean(r, axes=[2, 3])\n"
    "s = sigmoid(m)\n"
    "output m\n"
    "output s\n";

// The package after `edit`, with its section and metadata checksums made right again.
std::vector<uint8_t> craft(const std::vector<uint8_t>& pkg,
                           const std::function<void(fb::PackageT&)>& edit) {
  std::unique_ptr<fb::PackageT> p(fb::GetPackage(pkg.data())->UnPack());
  edit(*p);
  for (auto& sec : p->sections) {
    const std::vector<uint8_t>& bytes = sec->name == "code" ? p->code : p->constants;
    sec->crc32c = kiln_abi_crc32c(0, bytes.data(), bytes.size(), 0);
    sec->size = bytes.size();
  }
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);
  fbb.Finish(fb::Package::Pack(fbb, p.get()), fb::PackageIdentifier());
  std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  fb::GetMutablePackage(out.data())
      ->mutate_metadata_crc32c(package_metadata_crc(out.data(), out.size()));
  return out;
}

// Loads |pkg| (64-byte aligned), creates a session and runs it with zero inputs. Returns the
// first non-OK status with its message, or KILN_OK.
struct Result {
  kiln_status status;
  std::string message;
};
// A package loaded from a 64-byte aligned copy and a session of it (single-threaded), released
// together; `status` is the first failure, with kiln's message in `message`.
struct Loaded {
  std::vector<uint8_t> store;
  kiln_model* m = nullptr;
  kiln_session* s = nullptr;
  kiln_status status = KILN_OK;
  explicit Loaded(const std::vector<uint8_t>& pkg) : store(pkg.size() + 64) {
    uint8_t* data = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) % 64;
    std::memcpy(data, pkg.data(), pkg.size());
    status = kiln_model_load_memory(data, pkg.size(), nullptr, &m);
    if (status == KILN_OK) status = kiln_session_create(m, nullptr, &s);
  }
  ~Loaded() {
    kiln_session_release(s);
    kiln_model_release(m);
  }
  // Runs the steps while each succeeds; the first failure's status and message.
  Result then(kiln_status st) {
    if (status == KILN_OK) status = st;
    return {status, status ? kiln_last_error_message() : ""};
  }
};

Result load_and_run(const std::vector<uint8_t>& pkg, size_t threads = 1,
                    const kiln_model_options* mo = nullptr) {
  std::vector<uint8_t> store(pkg.size() + 64);
  uint8_t* data = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) % 64;
  std::memcpy(data, pkg.data(), pkg.size());
  kiln_model* m = nullptr;
  kiln_status st = kiln_model_load_memory(data, pkg.size(), mo, &m);
  if (st != KILN_OK) return {st, kiln_last_error_message()};
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.num_threads = threads;
  kiln_session* s = nullptr;
  st = kiln_session_create(m, &o, &s);
  Result r{st, st ? kiln_last_error_message() : ""};
  if (st == KILN_OK) {
    size_t n = 0;
    kiln_model_input_count(m, &n);
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info info;
      info.struct_size = sizeof info;
      kiln_model_input_info(m, i, &info);
      std::vector<uint8_t> zeros(info.size_bytes);
      kiln_session_set_input(s, i, info.dtype, zeros.data(), zeros.size());
    }
    st = kiln_session_run(s);
    r = {st, st ? kiln_last_error_message() : ""};
    kiln_session_release(s);
  }
  kiln_model_release(m);
  return r;
}

void expect_refused(const std::vector<uint8_t>& pkg, const std::string& check) {
  Result r = load_and_run(pkg);
  EXPECT_EQ(r.status, KILN_INVALID_PACKAGE) << r.message;
  EXPECT_NE(r.message.find(check), std::string::npos) << "got: " << r.message;
}

const std::vector<uint8_t>& net() {
  static const std::vector<uint8_t> p = compile_kg(kNet);
  return p;
}

TEST(CraftedPackage, AnUneditedRepackLoadsAndRuns) {
  Result r = load_and_run(craft(net(), [](fb::PackageT&) {}), 2);
  EXPECT_EQ(r.status, KILN_OK) << r.message;
}

// Hole 1: the kernels' real extents. An output shrunk consistently (shape, slot size, numel)
// leaves the kernel writing its old extent: refused.
TEST(CraftedPackage, AShrunkOutputIsRefusedByTheKernelsExtent) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         fb::TensorInfoT& out = *p.outputs[0];
                         out.shape = {1, 2};
                         fb::SlotT& slot = *p.slots[out.slot];
                         slot.size = 8;
                         slot.numel = 2;
                       }),
                 "touches bytes [0, 32) of slot");
}

// Hole 1: an argument count lowered consistently in the metadata (count, dtypes, extents and
// every launch's arguments) no longer matches the code's entry table: refused.
TEST(CraftedPackage, ALoweredArgumentCountIsRefusedByTheCodesTable) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         for (size_t k = 0; k < p.kernels.size(); ++k) {
                           fb::KernelT& kern = *p.kernels[k];
                           if (kern.num_args < 2) continue;
                           kern.num_args -= 1;
                           kern.arg_dtypes.pop_back();
                           kern.arg_extents.pop_back();
                           for (auto& g : p.groups)
                             for (auto& l : g->launches)
                               if (l->kernel == k) l->args.pop_back();
                           break;
                         }
                       }),
                 "differ from its code's");
}

// Hole 1, the other half: extents edited to match a shrunk slot disagree with the code's.
TEST(CraftedPackage, MetadataExtentsThatDisagreeWithTheCodeAreRefused) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         fb::ArgExtent& e = p.kernels[0]->arg_extents[0];
                         e = fb::ArgExtent(e.begin(), e.end() / 2, e.access());
                       }),
                 "access extents differ from its code's");
}

// Hole 2: two tensors naming one slot: output 1 aliases output 0's 32-byte slot and claims
// 4,000 bytes; its own slot becomes an empty arena slot, so every slot still names a consistent
// tensor. Refused: output 1 does not own the slot it names.
TEST(CraftedPackage, TwoTensorsCannotShareASlot) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         fb::SlotT& own = *p.slots[p.outputs[1]->slot];
                         own.kind = fb::SlotKind::Arena;
                         own.size = own.numel = own.offset = 0;
                         p.outputs[1]->slot = p.outputs[0]->slot;
                         p.outputs[1]->shape = {1, 1000};
                       }),
                 "does not own an output slot");
}

// Hole 3: a launch moved into the group of the launch whose output it reads: a race.
TEST(CraftedPackage, AReadInTheGroupOfItsWriteIsARace) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         ASSERT_GE(p.groups.size(), 2u);
                         // Move the second group's launches into the first.
                         for (auto& l : p.groups[1]->launches)
                           p.groups[0]->launches.push_back(std::move(l));
                         p.groups.erase(p.groups.begin() + 1);
                         for (auto& s : p.slots)
                           if (s->kind == fb::SlotKind::Arena) {
                             s->first_group = 0;
                             s->last_group = std::max<uint32_t>(s->last_group, 1) - 1;
                           }
                       }),
                 "(a race)");
}

// Hole 3, for writes: a launch repeated in its own group writes its output twice, at once. (Two
// groups may write one slot: the parts of a concatenation, each its region.)
TEST(CraftedPackage, ASlotWrittenTwiceInOneGroupIsARace) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         auto copy = std::make_unique<fb::LaunchT>(*p.groups[0]->launches[0]);
                         p.groups[0]->launches.push_back(std::move(copy));
                       }),
                 "is written twice in group 0");
}

// A squeeze-excitation between two convolutions: the scale overwrites the map it scales, its
// slot declared in place of the map's (format 2.9).
const char* kInPlaceNet =
    "input x: float32[1, 16, 8, 8]\n"
    "weight w0: float32[16, 16, 1, 1] = random(seed=1, scale=0.3)\n"
    "weight w1: float32[4, 16, 1, 1] = random(seed=2, scale=0.3)\n"
    "weight w2: float32[16, 4, 1, 1] = random(seed=3, scale=0.3)\n"
    "weight w3: float32[8, 16, 1, 1] = random(seed=4, scale=0.3)\n"
    "c0 = conv(x, w0)\n"
    "map = relu(c0)\n"
    "pooled = mean(map, axes=[2, 3], keepdims=true)\n"
    "c1 = conv(pooled, w1)\n"
    "hidden = silu(c1)\n"
    "c2 = conv(hidden, w2)\n"
    "scale = sigmoid(c2)\n"
    "scaled = mul(map, scale)\n"
    "y = conv(scaled, w3)\n"
    "output y\n";

// The index of the slot written in place of another (-1 if none).
int in_place_slot(const std::vector<uint8_t>& pkg) {
  const fb::Package* p = fb::GetPackage(pkg.data());
  for (uint32_t i = 0; i < p->slots()->size(); ++i)
    if (p->slots()->Get(i)->in_place_of() != 0) return static_cast<int>(i);
  return -1;
}

TEST(CraftedPackage, ASlotWrittenInPlaceIsVerifiedAgainstItsSource) {
  static const std::vector<uint8_t> pkg = compile_kg(kInPlaceNet);
  const int i = in_place_slot(pkg);
  ASSERT_GE(i, 0);
  const auto at = static_cast<size_t>(i);
  EXPECT_EQ(load_and_run(pkg).status, KILN_OK);
  // Undeclared, the pair overlaps in the group where one is read and the other written.
  expect_refused(craft(pkg, [&](fb::PackageT& p) { p.slots[at]->in_place_of = 0; }),
                 "overlaps another while both are live");
  // Declared in place of itself, of a slot past the end, or of the input's slot.
  expect_refused(
      craft(pkg,
            [&](fb::PackageT& p) { p.slots[at]->in_place_of = static_cast<uint32_t>(at) + 1; }),
      "not another arena slot");
  expect_refused(craft(pkg,
                       [&](fb::PackageT& p) {
                         p.slots[at]->in_place_of = static_cast<uint32_t>(p.slots.size()) + 1;
                       }),
                 "not another arena slot");
  expect_refused(
      craft(pkg, [&](fb::PackageT& p) { p.slots[at]->in_place_of = p.inputs[0]->slot + 1; }),
      "not another arena slot");
  // A source whose lifetime goes on past the group of the write, or at another offset.
  expect_refused(craft(pkg,
                       [&](fb::PackageT& p) {
                         fb::SlotT& src = *p.slots[p.slots[at]->in_place_of - 1];
                         src.last_group += 1;
                       }),
                 ": offset ");
  expect_refused(craft(pkg,
                       [&](fb::PackageT& p) {
                         fb::SlotT& src = *p.slots[p.slots[at]->in_place_of - 1];
                         src.offset += 64;
                       }),
                 ": offset ");
}

// Hole 4: an arena slot whose lifetime ends before the group that writes it.
TEST(CraftedPackage, AWriteOutsideTheSlotsLifetimeIsRefused) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         for (auto& g : p.groups)
                           for (auto& l : g->launches) {
                             fb::SlotT& out = *p.slots[l->args[0]];
                             if (out.kind == fb::SlotKind::Arena && out.first_group > 0) {
                               out.first_group = out.last_group = 0;
                               return;
                             }
                           }
                         FAIL() << "no arena slot written after group 0";
                       }),
                 "outside its lifetime");
}

// ---- hole 5: the ELF's protections ----

struct Elf {
  Elf64_Ehdr* eh;
  Elf64_Phdr* ph;
  Elf64_Phdr* find(uint32_t type, uint32_t flags_with = 0) {
    for (int i = 0; i < eh->e_phnum; ++i)
      if (ph[i].p_type == type && (ph[i].p_flags & flags_with) == flags_with) return &ph[i];
    return nullptr;
  }
};
Elf elf_of(std::vector<uint8_t>& code) {
  auto* eh = reinterpret_cast<Elf64_Ehdr*>(code.data());
  return {eh, reinterpret_cast<Elf64_Phdr*>(code.data() + eh->e_phoff)};
}

TEST(CraftedPackage, RelroOverTheCodeIsRefused) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         Elf e = elf_of(p.code);
                         Elf64_Phdr* relro = e.find(PT_GNU_RELRO);
                         Elf64_Phdr* text = e.find(PT_LOAD, PF_X);
                         ASSERT_TRUE(relro && text);
                         relro->p_vaddr = text->p_vaddr;
                         relro->p_memsz = text->p_memsz;
                       }),
                 "RELRO region outside a writable segment");
}

// The table's segment without read permission (and without RELRO, which would make it
// read-only): a check of the segment flags alone would accept it and the loader would fault.
TEST(CraftedPackage, ATableInUnreadableMemoryIsRefused) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         Elf e = elf_of(p.code);
                         Elf64_Phdr* data = e.find(PT_LOAD, PF_W);
                         ASSERT_TRUE(data);
                         data->p_flags = PF_W;
                         if (Elf64_Phdr* relro = e.find(PT_GNU_RELRO)) relro->p_type = PT_NULL;
                       }),
                 "the entry table is not in readable memory");
}

// The table's segment with no permissions at all: its relocations cannot be applied.
TEST(CraftedPackage, ASegmentWithoutPermissionsCannotBeRelocated) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         Elf e = elf_of(p.code);
                         Elf64_Phdr* data = e.find(PT_LOAD, PF_W);
                         ASSERT_TRUE(data);
                         data->p_flags = 0;
                         if (Elf64_Phdr* relro = e.find(PT_GNU_RELRO)) relro->p_type = PT_NULL;
                       }),
                 "relocation patches a segment that is not writable");
}

TEST(CraftedPackage, OverlappingSegmentsAreRefused) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         Elf e = elf_of(p.code);
                         Elf64_Phdr* text = e.find(PT_LOAD, PF_X);
                         Elf64_Phdr* data = e.find(PT_LOAD, PF_W);
                         ASSERT_TRUE(text && data);
                         data->p_vaddr = text->p_vaddr + 16;
                       }),
                 "overlapping loadable segments");
}

TEST(CraftedPackage, ARelocationIntoTheCodeIsRefused) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         Elf e = elf_of(p.code);
                         Elf64_Phdr* text = e.find(PT_LOAD, PF_X);
                         Elf64_Phdr* dyn = e.find(PT_DYNAMIC);
                         ASSERT_TRUE(text && dyn);
                         // The first RELA entry (found through DT_RELA) now patches .text.
                         auto* d = reinterpret_cast<Elf64_Dyn*>(p.code.data() + dyn->p_offset);
                         uint64_t rela = 0;
                         for (; d->d_tag != DT_NULL; ++d)
                           if (d->d_tag == DT_RELA) rela = d->d_un.d_ptr;
                         ASSERT_NE(rela, 0u);
                         // (vaddr == file offset for the first segments lld writes)
                         auto* r = reinterpret_cast<Elf64_Rela*>(p.code.data() + rela);
                         r->r_offset = text->p_vaddr + 64;
                       }),
                 "relocation patches a segment that is not writable");
}

TEST(CraftedPackage, SegmentsSharingAPageWithOtherPermissionsAreRefused) {
  expect_refused(craft(net(),
                       [](fb::PackageT& p) {
                         Elf e = elf_of(p.code);
                         Elf64_Phdr* text = e.find(PT_LOAD, PF_X);
                         Elf64_Phdr* data = e.find(PT_LOAD, PF_W);
                         ASSERT_TRUE(text && data);
                         // Right after the code, on its last page.
                         uint64_t delta = data->p_vaddr - (text->p_vaddr + text->p_memsz);
                         data->p_vaddr -= delta;
                         if (Elf64_Phdr* relro = e.find(PT_GNU_RELRO)) relro->p_type = PT_NULL;
                         if (Elf64_Phdr* d = e.find(PT_DYNAMIC)) d->p_vaddr -= delta;
                       }),
                 "share a page");
}

// Hole 6: the package file rewritten after loading: the session reads no metadata from it.
TEST(CraftedPackage, AFileRewrittenAfterLoadingCannotCrashASession) {
  auto path = std::filesystem::temp_directory_path() /
              ("kiln_rewritten_" + std::to_string(::getpid()) + ".kiln");
  write_file(path.string(), net());
  kiln_model* m = nullptr;
  ASSERT_EQ(kiln_model_load_file(path.c_str(), nullptr, &m), KILN_OK) << kiln_last_error_message();
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    std::vector<char> junk(net().size(), static_cast<char>(0xFF));  // every offset and count huge
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  kiln_session* s = nullptr;
  ASSERT_EQ(kiln_session_create(m, nullptr, &s), KILN_OK) << kiln_last_error_message();
  std::vector<float> x(4 * 8 * 8, 1.0f);
  ASSERT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, x.data(), x.size() * 4), KILN_OK);
  EXPECT_EQ(kiln_session_run(s), KILN_OK) << kiln_last_error_message();
  kiln_tensor_info info;
  info.struct_size = sizeof info;
  ASSERT_EQ(kiln_model_output_info(m, 0, &info), KILN_OK);
  EXPECT_STREQ(info.name, "m");  // the model's own copy
  kiln_session_release(s);
  kiln_model_release(m);
  std::filesystem::remove(path);
}

// Hole 9: verification is linear. A package with 200,000 groups (one launch each, writing its
// own slot, all at offset 0 with disjoint lifetimes: a valid plan) loads in well under a second;
// one with more slots than the limit is refused by name.
TEST(CraftedPackage, LargePackagesVerifyInLinearTime) {
  std::vector<uint8_t> fill = compile_kg(
      "c = const(value=1.0, dtype=float32)\nr = reshape(c, shape=[1])\ne = expand(r, shape=[16])\n"
      "output e\n");
  const uint32_t n = 200000;
  std::vector<uint8_t> big = craft(fill, [&](fb::PackageT& p) {
    ASSERT_EQ(p.kernels.size(), 1u);
    ASSERT_EQ(p.kernels[0]->num_args, 1u);
    p.outputs.clear();
    p.slots.clear();
    p.groups.clear();
    for (uint32_t g = 0; g < n; ++g) {
      auto slot = std::make_unique<fb::SlotT>();
      slot->kind = fb::SlotKind::Arena;
      slot->size = 64;
      slot->numel = 16;
      slot->dtype = fb::DType::Float32;
      slot->first_group = slot->last_group = g;
      p.slots.push_back(std::move(slot));
      auto launch = std::make_unique<fb::LaunchT>();
      launch->kernel = 0;
      launch->args = {g};
      launch->ntasks = 1;
      auto group = std::make_unique<fb::GroupT>();
      group->launches.push_back(std::move(launch));
      p.groups.push_back(std::move(group));
    }
    p.arena_size = 64;
  });
  auto t0 = std::chrono::steady_clock::now();
  std::vector<uint8_t> store(big.size() + 64);
  uint8_t* data = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) % 64;
  std::memcpy(data, big.data(), big.size());
  kiln_model* m = nullptr;
  ASSERT_EQ(kiln_model_load_memory(data, big.size(), nullptr, &m), KILN_OK)
      << kiln_last_error_message();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kiln_model_release(m);
  EXPECT_LT(s, 1.0) << "verifying " << n << " groups and slots took " << s << " s";
  std::printf("verified %u groups, %u slots in %.3f s\n", n, n, s);

  // A million slots (empty arena slots besides the one the launch writes): verified too.
  std::vector<uint8_t> million = craft(fill, [&](fb::PackageT& p) {
    p.outputs.clear();
    p.slots.clear();
    for (uint32_t i = 0; i < 1000000; ++i) {
      auto slot = std::make_unique<fb::SlotT>();
      slot->kind = fb::SlotKind::Arena;
      slot->dtype = fb::DType::Float32;
      slot->size = i == 0 ? 64 : 0;
      slot->numel = i == 0 ? 16 : 0;
      p.slots.push_back(std::move(slot));
    }
    p.groups.resize(1);
    p.groups[0]->launches.resize(1);
    p.groups[0]->launches[0]->args = {0};
    p.arena_size = 64;
  });
  std::vector<uint8_t> store2(million.size() + 64);
  uint8_t* data2 = store2.data() + (64 - reinterpret_cast<uintptr_t>(store2.data()) % 64) % 64;
  std::memcpy(data2, million.data(), million.size());
  t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kiln_model_load_memory(data2, million.size(), nullptr, &m), KILN_OK)
      << kiln_last_error_message();
  s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kiln_model_release(m);
  EXPECT_LT(s, 1.0) << "verifying 1,000,000 slots took " << s << " s";
  std::printf("verified 1000000 slots in %.3f s\n", s);

  // Beyond the slot limit: refused before anything is allocated for them.
  std::vector<uint8_t> too_many = craft(fill, [&](fb::PackageT& p) {
    p.slots.resize(KILN_ABI_MAX_SLOTS + 1);
    for (auto& sl : p.slots)
      if (!sl) sl = std::make_unique<fb::SlotT>();
  });
  expect_refused(too_many, "slots (the limit is");
}

// With the signer's key trusted, any edit at all — here a consistent shrink whose checksums are
// right — is refused before the rest of the package is read.
TEST(CraftedPackage, ASignedPackageEditedAfterSigningIsRefusedUnderTrust) {
  SigningKey key = generate_signing_key();
  std::vector<uint8_t> signed_pkg = compile_kg(kNet, &key);
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  const uint8_t(*keys)[32] = reinterpret_cast<const uint8_t(*)[32]>(key.public_key.data());
  mo.trusted_keys = keys;
  mo.num_trusted_keys = 1;
  mo.require_signature = 1;
  Result ok = load_and_run(signed_pkg, 1, &mo);
  EXPECT_EQ(ok.status, KILN_OK) << ok.message;
  std::vector<uint8_t> edited =
      craft(signed_pkg, [](fb::PackageT& p) { p.outputs[0]->name = "logits"; });
  Result r = load_and_run(edited, 1, &mo);
  EXPECT_EQ(r.status, KILN_SIGNATURE_INVALID) << r.message;
  EXPECT_NE(r.message.find("does not verify"), std::string::npos) << r.message;
  EXPECT_EQ(load_and_run(edited).status, KILN_OK) << "without trusted keys the edit is harmless";
}

// An application that ships with one known package pins its SHA-256.
TEST(CraftedPackage, APinnedDigestAcceptsOnlyThatPackage) {
  kiln_sha256 h;
  kiln_sha256_init(&h);
  kiln_sha256_update(&h, net().data(), net().size());
  uint8_t digest[32];
  kiln_sha256_final(&h, digest);
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.pinned_sha256 = digest;
  EXPECT_EQ(load_and_run(net(), 1, &mo).status, KILN_OK);
  digest[5] ^= 1;
  Result r = load_and_run(net(), 1, &mo);
  EXPECT_EQ(r.status, KILN_SIGNATURE_INVALID) << r.message;
  EXPECT_NE(r.message.find("pinned"), std::string::npos) << r.message;
}

// Format 2.5: a Reshape whose shape is a model input (value symbols, checks). x [2, 3, 4] to the
// declared [2, 4, 3].
std::vector<uint8_t> run_time_reshape() {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("reshape");
  auto tensor = [](onnx::ValueInfoProto* v, const char* name, int type, std::vector<int64_t> d) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t x : d) t->mutable_shape()->add_dim()->set_dim_value(x);
  };
  tensor(g.add_input(), "x", onnx::TensorProto::FLOAT, {2, 3, 4});
  tensor(g.add_input(), "shape", onnx::TensorProto::INT64, {3});
  tensor(g.add_output(), "y", onnx::TensorProto::FLOAT, {2, 4, 3});
  onnx::NodeProto& n = *g.add_node();
  n.set_op_type("Reshape");
  n.set_name("r");
  n.add_input("x");
  n.add_input("shape");
  n.add_output("y");
  auto path = std::filesystem::temp_directory_path() /
              ("kiln_crafted_" + std::to_string(::getpid()) + ".onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  CompileOptions o;
  o.provenance_flags = {"--test"};
  std::vector<uint8_t> pkg = compile(path.string(), o).package;
  std::filesystem::remove(path);
  return pkg;
}

Result run_reshape(const std::vector<uint8_t>& pkg, std::vector<int64_t> shape) {
  Loaded l(pkg);
  std::vector<float> x(24, 1.0f);
  if (l.status == KILN_OK)
    l.status = kiln_session_set_input(l.s, 0, KILN_DTYPE_FLOAT32, x.data(), 96);
  if (l.status == KILN_OK)
    l.status = kiln_session_set_input(l.s, 1, KILN_DTYPE_INT64, shape.data(), 24);
  return l.then(l.status == KILN_OK ? kiln_session_run(l.s) : l.status);
}

TEST(CraftedPackage, AShapeInputIsCheckedAtEveryRun) {
  const std::vector<uint8_t> pkg = run_time_reshape();
  EXPECT_EQ(run_reshape(pkg, {2, 4, 3}).status, KILN_OK);
  EXPECT_EQ(run_reshape(pkg, {0, -1, 3}).status, KILN_OK);
  Result r = run_reshape(pkg, {4, 2, 3});
  EXPECT_EQ(r.status, KILN_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("node 'r' (Reshape, opset 13): input 'shape' must give the shape"),
            std::string::npos)
      << r.message;
}

TEST(CraftedPackage, MalformedChecksAndValueSymbolsAreRefused) {
  const std::vector<uint8_t> pkg = run_time_reshape();
  ASSERT_FALSE(fb::GetPackage(pkg.data())->checks()->size() == 0);
  expect_refused(craft(pkg, [](fb::PackageT& p) { p.checks[0]->code.push_back(0); }),
                 "check 0: a malformed program");
  expect_refused(craft(pkg, [](fb::PackageT& p) { p.checks[0]->code = {1, 99}; }),
                 "check 0: a malformed program");
  expect_refused(craft(pkg, [](fb::PackageT& p) { p.checks[1]->message.clear(); }),
                 "check 1: a malformed program or no message");
  // A bounded value symbol would be a bound the runtime never checks: refused.
  expect_refused(craft(pkg, [](fb::PackageT& p) { p.symbols[0]->min = 0; }),
                 "input 'shape': 3 value symbols, or a bounded one");
  expect_refused(craft(pkg, [](fb::PackageT& p) { p.inputs[1]->value_symbols.pop_back(); }),
                 "input 'shape': 2 value symbols");
  expect_refused(craft(pkg, [](fb::PackageT& p) { p.inputs[0]->value_symbols = {0}; }),
                 "input 'x': 1 value symbols");
  // Without its checks the package loads (they are optional) and takes any shape value: the
  // checks are what a signature or pinned digest protects.
  EXPECT_EQ(run_reshape(craft(pkg, [](fb::PackageT& p) { p.checks.clear(); }), {4, 2, 3}).status,
            KILN_OK);
}

// Format 2.8: a loop group over a trip count given as an input, its stacked rows at most 8:
// y = y0; for i < trips: y = (y + x) * 1; rows[i] = y * 2.
std::vector<uint8_t> loop_package() {
  Graph g;
  Tensor trips = Tensor::input(g, "trips", dtypes::int64, {});
  Tensor y0 = Tensor::input(g, "y0", dtypes::float32, {3});
  Tensor x = Tensor::input(g, "x", dtypes::float32, {3});
  int l = g.begin_loop("node 'l' (Loop, opset 16)", trips.uop(), 8);
  Tensor y(&g, g.add_loop_state(l, y0.uop()));
  // (Two kernels in the body: the sum lives inside it, between them.)
  Tensor sum = y.add(x).contiguous();
  Tensor next = sum.mul(sum.like(1));
  std::vector<const UOp*> out = g.end_loop(l, {next.uop()}, {next.mul(next.like(2)).uop()});
  g.add_output("y", out[0]);
  g.add_output("rows", out[1]);
  CompileOptions o;
  o.provenance_flags = {"--test"};
  return compile(g, o).package;
}

Result run_loop(const std::vector<uint8_t>& pkg, int64_t trips, std::vector<float>* y = nullptr,
                size_t* rows = nullptr) {
  Loaded l(pkg);
  std::vector<float> y0 = {1, 2, 3}, x = {0.5f, 0.25f, -1};
  for (auto [i, dtype, data, size] :
       {std::tuple<size_t, kiln_dtype, const void*, size_t>{0, KILN_DTYPE_INT64, &trips, 8},
        {1, KILN_DTYPE_FLOAT32, y0.data(), 12},
        {2, KILN_DTYPE_FLOAT32, x.data(), 12}})
    if (l.status == KILN_OK) l.status = kiln_session_set_input(l.s, i, dtype, data, size);
  Result r = l.then(l.status == KILN_OK ? kiln_session_run(l.s) : l.status);
  const void* out = nullptr;
  size_t size = 0, rank = 0;
  const int64_t* shape = nullptr;
  if (r.status == KILN_OK && y && kiln_session_output(l.s, 0, &out, &size) == KILN_OK)
    y->assign(static_cast<const float*>(out), static_cast<const float*>(out) + size / 4);
  if (r.status == KILN_OK && rows && kiln_session_output_shape(l.s, 1, &rank, &shape) == KILN_OK)
    *rows = static_cast<size_t>(shape[0]);
  return r;
}

TEST(CraftedPackage, ALoopGroupRunsItsTripCountAndReportsItsRows) {
  const std::vector<uint8_t> pkg = loop_package();
  ASSERT_TRUE(fb::GetPackage(pkg.data())->loops());
  for (int64_t trips : {0, 3, 8}) {
    std::vector<float> y;
    size_t rows = 99;
    ASSERT_EQ(run_loop(pkg, trips, &y, &rows).status, KILN_OK) << trips;
    EXPECT_EQ(rows, static_cast<size_t>(trips));
    EXPECT_EQ(y, (std::vector<float>{1 + 0.5f * trips, 2 + 0.25f * trips, 3.0f - trips}));
  }
  Result r = run_loop(pkg, 9);
  EXPECT_EQ(r.status, KILN_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("node 'l' (Loop, opset 16): trip count 9: it would run past the 8 "
                           "iterations it is planned for"),
            std::string::npos)
      << r.message;
}

TEST(CraftedPackage, MalformedLoopGroupsAreRefused) {
  const std::vector<uint8_t> pkg = loop_package();
  const fb::Loop* l = fb::GetPackage(pkg.data())->loops()->Get(0);
  const uint32_t first = l->first_group(), last = l->last_group();
  const uint32_t groups = fb::GetPackage(pkg.data())->groups()->size();
  ASSERT_LT(last + 1, groups);
  auto loop = [](fb::PackageT& p) -> fb::LoopT& { return *p.loops[0]; };
  const std::string bad = "loop 0: its groups, trip count or condition slot, symbols or bound";
  expect_refused(craft(pkg, [&](fb::PackageT& p) { loop(p).first_group = last + 1; }), bad);
  expect_refused(craft(pkg, [&](fb::PackageT& p) { loop(p).last_group = groups; }), bad);
  // The trip count must be an int64 slot (input 1 is y0, float32).
  expect_refused(craft(pkg, [&](fb::PackageT& p) { loop(p).trips_slot = p.inputs[1]->slot; }), bad);
  expect_refused(craft(pkg, [&](fb::PackageT& p) { loop(p).cond_slot = p.inputs[0]->slot; }), bad);
  // More iterations than the iteration symbol bounds: kernels were proved at that bound.
  expect_refused(craft(pkg, [&](fb::PackageT& p) { loop(p).max_trips = 9; }), bad);
  expect_refused(
      craft(pkg, [&](fb::PackageT& p) { loop(p).count_symbol = loop(p).iteration_symbol; }),
      "loop 0: its groups");
  // Two loops over the same groups.
  expect_refused(craft(pkg,
                       [&](fb::PackageT& p) {
                         p.loops.push_back(std::make_unique<fb::LoopT>(loop(p)));
                         p.loops[1]->iteration_symbol = 0;
                         p.loops[1]->count_symbol = 0;
                       }),
                 "loop 1: its groups");
  // A slot live inside the body stretched to before the loop: in the next iteration another
  // slot could take its memory while it still holds a value from before the loop.
  expect_refused(craft(pkg,
                       [&](fb::PackageT& p) {
                         for (auto& s : p.slots)
                           if (s->kind == fb::SlotKind::Arena && s->first_group >= first &&
                               s->last_group < last) {
                             s->first_group = first - 1;
                             return;
                           }
                         FAIL() << "no slot lives inside the loop's body";
                       }),
                 "lives in part of loop 0's groups");
}

// Format 2.8, a size computed from data: rows = 0.5 * (0, 1, 2, 3) counted by 2 * k.
std::vector<uint8_t> count_package() {
  Graph g;
  Tensor k = Tensor::input(g, "k", dtypes::int64, {});
  NDArray v(dtypes::float32, {4});
  for (int64_t i = 0; i < 4; ++i) v.set(i, ConstValue::of_float(0.5 * static_cast<double>(i)));
  Tensor rows(&g, g.counted("node 'c' (Test)", "c.count", Tensor::weight(g, "v", v).uop(),
                            k.mul(k.like(2)).uop()));
  g.add_output("rows", rows.uop());
  CompileOptions o;
  o.provenance_flags = {"--test"};
  return compile(g, o).package;
}

Result run_count(const std::vector<uint8_t>& pkg, int64_t k, size_t* rows) {
  Loaded l(pkg);
  if (l.status == KILN_OK) l.status = kiln_session_set_input(l.s, 0, KILN_DTYPE_INT64, &k, 8);
  Result r = l.then(l.status == KILN_OK ? kiln_session_run(l.s) : l.status);
  const int64_t* shape = nullptr;
  size_t rank = 0;
  if (r.status == KILN_OK && kiln_session_output_shape(l.s, 0, &rank, &shape) == KILN_OK)
    *rows = static_cast<size_t>(shape[0]);
  return r;
}

TEST(CraftedPackage, ASizeComputedFromDataIsReadAfterItsGroupAndChecked) {
  const std::vector<uint8_t> pkg = count_package();
  ASSERT_TRUE(fb::GetPackage(pkg.data())->counts());
  size_t rows = 99;
  ASSERT_EQ(run_count(pkg, 2, &rows).status, KILN_OK);
  EXPECT_EQ(rows, 4u);
  ASSERT_EQ(run_count(pkg, 1, &rows).status, KILN_OK);
  EXPECT_EQ(rows, 2u);
  Result r = run_count(pkg, 3, &rows);
  EXPECT_EQ(r.status, KILN_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("the size 'c.count' is 6, outside the [0, 4] the package is planned "
                           "for"),
            std::string::npos)
      << r.message;
  auto count = [](fb::PackageT& p) -> fb::CountT& { return *p.counts[0]; };
  const std::string bad = "count 0: its symbol, slot or group is malformed";
  expect_refused(craft(pkg, [&](fb::PackageT& p) { count(p).symbol = 1; }), bad);
  expect_refused(craft(pkg, [&](fb::PackageT& p) { count(p).slot = p.outputs[0]->slot; }), bad);
  expect_refused(craft(pkg, [&](fb::PackageT& p) { count(p).group = 99; }), bad);
  // Two counts setting one symbol.
  expect_refused(
      craft(pkg,
            [&](fb::PackageT& p) { p.counts.push_back(std::make_unique<fb::CountT>(count(p))); }),
      "count 1: its symbol");
}

// Format 2.8: a symbolic output whose symbolic axis does not lead ([2, seq]): the runtime moves
// its rows to the first bytes of its layout after the run (a 2.7 runtime read them in place, at
// the wrong places, and kilnc refused such outputs).
TEST(CraftedPackage, ASymbolicOutputWhoseRowsDoNotLeadIsReadAtItsShape) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {2, 5});
  g.set_axis_symbol("x", 1, g.add_symbol("seq", 1, 5));
  g.add_output("y", x.mul(x).add(x.like(1)).uop());
  CompileOptions o;
  o.provenance_flags = {"--test"};
  Loaded l(compile(g, o).package);
  ASSERT_EQ(l.status, KILN_OK) << kiln_last_error_message();
  kiln_session* s = l.s;
  for (int64_t seq : {3, 5, 1}) {
    std::vector<float> in(static_cast<size_t>(2 * seq));
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    const int64_t shape[2] = {2, seq};
    ASSERT_EQ(
        kiln_session_set_input_shaped(s, 0, KILN_DTYPE_FLOAT32, in.data(), in.size() * 4, 2, shape),
        KILN_OK);
    ASSERT_EQ(kiln_session_run(s), KILN_OK) << kiln_last_error_message();
    const void* out = nullptr;
    size_t size = 0;
    ASSERT_EQ(kiln_session_output(s, 0, &out, &size), KILN_OK);
    ASSERT_EQ(size, in.size() * 4);
    const float* y = static_cast<const float*>(out);
    for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(y[i], in[i] * in[i] + 1) << seq << " " << i;
  }
}

}  // namespace
}  // namespace kiln
