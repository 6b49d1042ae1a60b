// Kernel variants (issue #19): one package compiled for a fleet of CPUs (x86-64-v2, -v3, -v4 on
// x86-64; generic and cortex-a76 on AArch64). The runtime loads the best variant this CPU runs,
// each variant forced by kiln_model_options.variant matches the host package's outputs where
// the CPU can run it, and is refused naming what this CPU lacks where it cannot. A variant the
// host cannot run is still checked without executing it: its code is byte for byte the code a
// single-target compile for that CPU produces (which the codegen-shape tests pin), and the
// verifier refuses a corrupt variant even when another one is chosen.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

#include "compiler/driver/compile.h"
#include "compiler/package/package_reader.h"
#include "compiler/package/package_writer.h"
#include "compiler/support/file.h"
#include "compiler/target/target_info.h"
#include "kiln/kiln.h"
#include "kiln/schema/kiln_generated.h"
#include "schema/kiln_abi.h"

namespace kiln {
namespace {

// Two convolutions, a pooled head and two outputs: several kernels, groups and weights.
const char* kNet =
    "input x: float32[1, 4, 12, 12]\n"
    "weight w1: float32[16, 4, 3, 3] = random(seed=1, scale=0.3)\n"
    "weight w2: float32[8, 16, 3, 3] = random(seed=2, scale=0.2)\n"
    "c1 = conv(x, w1, padding=[[1, 1], [1, 1]])\n"
    "r1 = relu(c1)\n"
    "c2 = conv(r1, w2, padding=[[1, 1], [1, 1]])\n"
    "m = mean(c2, axes=[2, 3])\n"
    "s = sigmoid(m)\n"
    "output c2\n"
    "output s\n";

// The fleet for the host's architecture, most portable first.
std::vector<std::string> fleet() {
  if (TargetInfo::host().is_aarch64()) return {"generic", "cortex-a76"};
  return {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
}

// The graph file the packages are compiled from, written once per process and removed when the
// process exits (each test runs in a process of its own under ctest).
struct ModelFile {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("kiln_variants_" + std::to_string(::getpid()) + ".kg"))
                         .string();
  ModelFile() { write_file(path, kNet); }
  ~ModelFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

std::string model_file() {
  static const ModelFile file;
  return file.path;
}

// The package for `cpus` (empty: the host), and the targets it was made for.
std::vector<uint8_t> compile_for(const std::vector<std::string>& cpus) {
  std::vector<TargetInfo> targets;
  for (const std::string& cpu : cpus) targets.push_back(TargetInfo::create({"", cpu}));
  CompileOptions o;
  o.provenance_flags = {"--test"};
  if (!targets.empty()) o.target = &targets[0];
  for (size_t i = 1; i < targets.size(); ++i) o.variant_targets.push_back(&targets[i]);
  return compile(model_file(), o).package;
}

const std::vector<uint8_t>& fat() {
  static const std::vector<uint8_t> p = compile_for(fleet());
  return p;
}

struct Loaded {
  kiln_status status;
  std::string message;
  kiln_model* model = nullptr;
};

Loaded load(const std::vector<uint8_t>& pkg, const char* variant = nullptr) {
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.variant = variant;
  Loaded l;
  l.status = kiln_model_load_memory(pkg.data(), pkg.size(), &mo, &l.model);
  if (l.status != KILN_OK) l.message = kiln_last_error_message();
  return l;
}

// Every output's floats, for a fixed input.
std::vector<std::vector<float>> run(kiln_model* m) {
  kiln_session* s = nullptr;
  EXPECT_EQ(kiln_session_create(m, nullptr, &s), KILN_OK) << kiln_last_error_message();
  std::vector<float> x(1 * 4 * 12 * 12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  EXPECT_EQ(kiln_session_set_input(s, 0, KILN_DTYPE_FLOAT32, x.data(), x.size() * 4), KILN_OK);
  EXPECT_EQ(kiln_session_run(s), KILN_OK) << kiln_last_error_message();
  std::vector<std::vector<float>> outs;
  size_t n = 0;
  kiln_model_output_count(m, &n);
  for (size_t o = 0; o < n; ++o) {
    const void* data = nullptr;
    size_t size = 0;
    EXPECT_EQ(kiln_session_output(s, o, &data, &size), KILN_OK);
    const float* f = static_cast<const float*>(data);
    outs.emplace_back(f, f + size / 4);
  }
  kiln_session_release(s);
  return outs;
}

bool runs_here(const std::string& cpu) {
  return TargetInfo::create({"", cpu}).runs_here();
}

TEST(Variants, TheBestVariantThisCpuRunsIsLoaded) {
  std::vector<std::string> cpus = fleet();
  int best = -1;
  for (size_t i = 0; i < cpus.size(); ++i)
    if (runs_here(cpus[i])) best = static_cast<int>(i);
  ASSERT_GE(best, 0) << "this CPU runs none of the fleet";
  Loaded l = load(fat());
  ASSERT_EQ(l.status, KILN_OK) << l.message;
  size_t n = 0;
  ASSERT_EQ(kiln_model_variant_count(l.model, &n), KILN_OK);
  ASSERT_EQ(n, cpus.size());
  for (size_t i = 0; i < n; ++i) {
    kiln_variant_info vi;
    vi.struct_size = sizeof vi;
    ASSERT_EQ(kiln_model_variant_info(l.model, i, &vi), KILN_OK);
    EXPECT_EQ(vi.cpu, cpus[i]);
    EXPECT_EQ(vi.runs_here != 0, runs_here(cpus[i])) << cpus[i];
    EXPECT_EQ(vi.chosen != 0, static_cast<int>(i) == best) << cpus[i];
  }
  kiln_variant_info vi;
  vi.struct_size = sizeof vi;
  EXPECT_EQ(kiln_model_variant_info(l.model, n, &vi), KILN_INVALID_ARGUMENT);
  kiln_model_release(l.model);
}

TEST(Variants, EachForcedVariantMatchesTheHostPackageOrIsRefused) {
  // The package bytes outlive the model: a 64-byte-aligned buffer is used in place, not copied
  // (kiln.h), and a temporary here once let the host model read freed memory.
  const std::vector<uint8_t> host_pkg = compile_for({});
  Loaded host = load(host_pkg);
  ASSERT_EQ(host.status, KILN_OK) << host.message;
  std::vector<std::vector<float>> want = run(host.model);
  kiln_model_release(host.model);
  for (const std::string& cpu : fleet()) {
    Loaded l = load(fat(), cpu.c_str());
    if (!runs_here(cpu)) {
      EXPECT_EQ(l.status, KILN_MISSING_CPU_FEATURE) << cpu << ": " << l.message;
      EXPECT_NE(l.message.find(cpu + " lacks "), std::string::npos) << l.message;
      continue;
    }
    ASSERT_EQ(l.status, KILN_OK) << cpu << ": " << l.message;
    size_t n = 0, chosen = 99;
    kiln_model_variant_count(l.model, &n);
    for (size_t i = 0; i < n; ++i) {
      kiln_variant_info vi;
      vi.struct_size = sizeof vi;
      kiln_model_variant_info(l.model, i, &vi);
      if (vi.chosen) chosen = i;
    }
    EXPECT_EQ(fleet().at(chosen), cpu);
    std::vector<std::vector<float>> got = run(l.model);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < got.size(); ++o) {
      ASSERT_EQ(got[o].size(), want[o].size());
      float scale = 0;
      for (float v : want[o]) scale = std::max(scale, std::fabs(v));
      for (size_t i = 0; i < got[o].size(); ++i)
        ASSERT_LE(std::fabs(got[o][i] - want[o][i]), 1e-5f * scale)
            << cpu << " output " << o << " element " << i;
    }
    kiln_model_release(l.model);
  }
}

// Variant i of the package: the package's own tables for 0, else variants[i - 1].
struct VariantView {
  std::vector<uint8_t> code;
  std::string cpu;
  std::vector<std::string> features;
  size_t kernels = 0, groups = 0;
};

VariantView view(const std::vector<uint8_t>& pkg, size_t i) {
  const fb::Package* p = verified_package(pkg);
  auto get = [](auto* t) {
    VariantView v;
    v.code.assign(t->code()->begin(), t->code()->end());
    v.cpu = t->target()->cpu()->str();
    for (const flatbuffers::String* f : *t->target()->required_features())
      v.features.push_back(f->str());
    v.kernels = t->kernels()->size();
    v.groups = t->groups()->size();
    return v;
  };
  return i == 0 ? get(p) : get(p->variants()->Get(static_cast<flatbuffers::uoffset_t>(i - 1)));
}

TEST(Variants, EachVariantIsTheSingleTargetCompileForItsCpu) {
  std::vector<std::string> cpus = fleet();
  for (size_t i = 0; i < cpus.size(); ++i) {
    std::vector<uint8_t> single = compile_for({cpus[i]});
    VariantView v = view(fat(), i), s = view(single, 0);
    EXPECT_EQ(v.cpu, cpus[i]);
    EXPECT_TRUE(v.code == s.code) << cpus[i] << ": the variant's code differs from a --cpu "
                                  << cpus[i] << " compile's";
    EXPECT_EQ(v.features, s.features) << cpus[i];
    EXPECT_EQ(v.kernels, s.kernels) << cpus[i];
    EXPECT_EQ(v.groups, s.groups) << cpus[i];
  }
  // Different CPUs, different code: each variant is optimized for its own target.
  EXPECT_FALSE(view(fat(), 0).code == view(fat(), cpus.size() - 1).code);
  std::vector<std::string> best = view(fat(), cpus.size() - 1).features;
  if (!TargetInfo::host().is_aarch64())
    EXPECT_NE(std::find(best.begin(), best.end(), "avx512f"), best.end());
  else
    EXPECT_NE(std::find(best.begin(), best.end(), "dotprod"), best.end());
}

// The first two of the fleet have the same vector width (16 or 32 bytes), so the same weight
// panels: the two-variant package stores each weight once.
TEST(Variants, WeightsAreStoredOnceWhenTheLayoutsAgree) {
  std::vector<std::string> same_width = {fleet()[0], fleet()[1]};
  std::vector<uint8_t> pair = compile_for(same_width);
  std::vector<uint8_t> single = compile_for({fleet()[0]});
  EXPECT_EQ(verified_package(pair)->constants()->size(),
            verified_package(single)->constants()->size());
  std::string text = describe_package(pair, false);
  EXPECT_NE(text.find("variants: 2"), std::string::npos) << text;
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(", 0 its own)"), 2u) << text;
}

// An AVX-512 variant packs weights in panels of 16 output channels (one zmm load per row), the
// AVX2 ones in panels of 8: the fat package holds both layouts of w1 and says whose they are.
TEST(Variants, AnAvx512VariantStoresItsOwnWeightPanels) {
  if (TargetInfo::host().is_aarch64()) GTEST_SKIP() << "the AArch64 fleet has one vector width";
  std::vector<uint8_t> single = compile_for({fleet()[0]});
  EXPECT_GT(verified_package(fat())->constants()->size(),
            verified_package(single)->constants()->size());
  std::string text = describe_package(fat(), false);
  EXPECT_NE(text.find("variants: " + std::to_string(fleet().size())), std::string::npos) << text;
  size_t v4 = text.find("x86-64-v4:");
  ASSERT_NE(v4, std::string::npos) << text;
  EXPECT_EQ(text.find(", 0 its own)", v4), std::string::npos) << text;
}

TEST(Variants, AnUnknownVariantNameIsAnInvalidArgument) {
  Loaded l = load(fat(), "pentium-mmx");
  EXPECT_EQ(l.status, KILN_INVALID_ARGUMENT);
  EXPECT_NE(l.message.find("no variant 'pentium-mmx'"), std::string::npos) << l.message;
}

TEST(Variants, WithNoRunnableVariantTheErrorNamesWhatEachLacks) {
  std::vector<std::string> cannot;
  for (const char* cpu :
       {"x86-64-v4", "sapphirerapids", "graniterapids", "alderlake", "znver4", "x86-64-v3"})
    if (!TargetInfo::host().is_aarch64() && !runs_here(cpu)) cannot.push_back(cpu);
  if (cannot.size() < 2) GTEST_SKIP() << "this CPU runs all but " << cannot.size() << " of them";
  cannot.resize(2);
  const std::vector<uint8_t> pkg = compile_for(cannot);
  Loaded l = load(pkg);
  EXPECT_EQ(l.status, KILN_MISSING_CPU_FEATURE);
  for (const std::string& cpu : cannot)
    EXPECT_NE(l.message.find(cpu + " lacks "), std::string::npos) << l.message;
}

TEST(Variants, ACorruptVariantIsRefusedWhenAnotherIsChosen) {
  // Variant 0 (the most portable) is never the chosen one where a later one runs.
  if (!runs_here(fleet()[1])) GTEST_SKIP() << "this CPU runs only the first variant";
  std::unique_ptr<fb::PackageT> p(fb::GetPackage(fat().data())->UnPack());
  p->groups[0]->launches[0]->args[0] = 100000;  // a slot out of range
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);
  fbb.Finish(fb::Package::Pack(fbb, p.get()), fb::PackageIdentifier());
  std::vector<uint8_t> bad(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  fb::GetMutablePackage(bad.data())
      ->mutate_metadata_crc32c(package_metadata_crc(bad.data(), bad.size()));
  Loaded l = load(bad);
  EXPECT_EQ(l.status, KILN_INVALID_PACKAGE);
  EXPECT_NE(l.message.find("variant " + fleet()[0] + ": invalid package: launch 0"),
            std::string::npos)
      << l.message;
}

TEST(Variants, ThePackageSaysItsFormatHasVariants) {
  const fb::Package* p = verified_package(fat());
  EXPECT_EQ(p->provenance()->format_major(), 2u);
  EXPECT_GE(p->provenance()->format_minor(), 2u);  // 2.2 added variants
  EXPECT_EQ(p->variants()->size(), fleet().size() - 1);
}

}  // namespace
}  // namespace kiln
