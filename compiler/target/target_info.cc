#include "compiler/target/target_info.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "compiler/support/error.h"
#include "compiler/support/sha256.h"
#include "schema/kiln_abi.h"

namespace kiln {

const char* dot_product_name(DotProduct d) {
  switch (d) {
    case DotProduct::None:
      return "none";
    case DotProduct::AvxVnni:
      return "avxvnni";
    case DotProduct::Avx512Vnni:
      return "avx512vnni";
    case DotProduct::ArmDot:
      return "dotprod";
  }
  return "?";
}

void init_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

namespace {

std::string feature_string(const std::vector<std::string>& features) {
  std::string s;
  for (const auto& f : features) s += (s.empty() ? "+" : ",+") + f;
  return s;
}

// The one place kiln makes a TargetMachine.
llvm::TargetMachine* make_machine(const llvm::Target& target, const std::string& triple,
                                  const std::string& cpu,
                                  const std::vector<std::string>& features) {
  llvm::TargetOptions to;
  return target.createTargetMachine(triple, cpu, feature_string(features), to, llvm::Reloc::PIC_,
                                    std::nullopt, llvm::CodeGenOptLevel::Aggressive);
}

// Per-core L2 by CPU family (LLVM's CPU names; vendor data sheets). A CPU not listed gets a
// figure for its ISA level that the CPUs of that level have at least: a kernel planned for a
// smaller cache than the machine has re-reads less, never more, than it could.
int64_t l2_bytes_of(const std::string& cpu, bool x86, bool avx512, bool avx2) {
  constexpr int64_t kib = 1024;
  static const std::pair<const char*, int64_t> table[] = {
      {"sapphirerapids", 2048 * kib}, {"emeraldrapids", 2048 * kib},
      {"graniterapids", 2048 * kib},  {"graniterapids-d", 2048 * kib},
      {"skylake-avx512", 1024 * kib}, {"cascadelake", 1024 * kib},
      {"cooperlake", 1024 * kib},     {"icelake-server", 1280 * kib},
      {"tigerlake", 1280 * kib},      {"znver4", 1024 * kib},
      {"znver5", 1024 * kib},         {"znver2", 512 * kib},
      {"znver3", 512 * kib},          {"neoverse-n1", 1024 * kib},
      {"neoverse-v1", 1024 * kib},    {"neoverse-n2", 1024 * kib},
      {"neoverse-v2", 2048 * kib},    {"cortex-a76", 256 * kib},
  };
  for (const auto& [name, bytes] : table)
    if (cpu == name) return bytes;
  if (x86) return avx512 ? 1024 * kib : avx2 ? 512 * kib : 256 * kib;
  return 256 * kib;
}

// Intel's server cores (and this generation's features: AMX, AVX512-FP16, which a virtual
// machine may report under a client CPU's name).
bool intel_server_core(const TargetInfo& t) {
  for (const char* name : {"skylake-avx512", "cascadelake", "cooperlake", "icelake-server",
                           "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d"})
    if (t.cpu() == name) return true;
  return t.has_feature("amx-tile") || t.has_feature("avx512fp16");
}

// Two 512-bit FMA units: Intel's server cores; Zen 5. Zen 4 and Intel's client AVX-512 cores
// have the equivalent of one.
bool two_512_bit_fma_units(const TargetInfo& t) {
  return intel_server_core(t) || t.cpu() == "znver5";
}

}  // namespace

bool TargetInfo::has_feature(const std::string& f) const {
  return std::binary_search(features_.begin(), features_.end(), f);
}

TargetInfo TargetInfo::create(const TargetOptions& opts) {
  init_llvm_targets();
  TargetInfo t;
  std::string host = llvm::sys::getDefaultTargetTriple();
  t.triple_ = opts.triple.empty() ? host : llvm::Triple::normalize(opts.triple);
  llvm::Triple triple(t.triple_);
  if (triple.isX86() && triple.isArch64Bit())
    t.arch_ = Arch::X86;
  else if (triple.isAArch64())
    t.arch_ = Arch::AArch64;
  else
    throw OptionError(Option::Target,
                      "target " + t.triple_ + ": kiln generates code for x86_64 and aarch64 only");
  bool host_arch = triple.getArch() == llvm::Triple(host).getArch() &&
                   triple.getOS() == llvm::Triple(host).getOS();
  t.is_host_ = host_arch && (opts.cpu.empty() || opts.cpu == "native" ||
                             opts.cpu == llvm::sys::getHostCPUName().str());
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple_, err);
  if (!target) throw OptionError(Option::Target, "target " + t.triple_ + ": " + err);
  if (t.is_host_) {
    t.cpu_ = llvm::sys::getHostCPUName().str();
    for (const auto& [name, on] : llvm::sys::getHostCPUFeatures())
      if (on) t.features_.push_back(name.str());
  } else {
    t.cpu_ = opts.cpu.empty() || opts.cpu == "native" ? "generic" : opts.cpu;
  }
  std::sort(t.features_.begin(), t.features_.end());
  llvm::TargetMachine* tm = make_machine(*target, t.triple_, t.cpu_, t.features_);
  if (!tm)
    throw OptionError(Option::Target,
                      "cannot create a target machine for " + t.triple_ + " cpu " + t.cpu_);
  t.tm_.reset(tm);
  const llvm::MCSubtargetInfo* sti = tm->getMCSubtargetInfo();
  if (!sti->isCPUStringValid(t.cpu_))
    throw OptionError(Option::Cpu, "CPU " + t.cpu_ + ": not a CPU LLVM knows for " + t.triple_);
  if (!t.is_host_) {
    // The features the CPU name implies.
    for (const llvm::SubtargetFeatureKV& kv : sti->getAllProcessorFeatures())
      if (sti->getFeatureBits().test(kv.Value)) t.features_.push_back(kv.Key);
    std::sort(t.features_.begin(), t.features_.end());
  }
  if (t.is_x86()) {
    // AVX-512 machines are often said to prefer 256-bit vectors; kiln uses the full width
    // whenever avx512f is there (measured faster for its register tiles).
    t.vector_bytes_ = t.has_feature("avx512f") ? 64 : t.has_feature("avx") ? 32 : 16;
    t.vector_registers_ = t.has_feature("avx512f") ? 32 : 16;
    t.masked_vectors_ = t.has_feature("avx");
    t.native_f16_ = t.has_feature("f16c");
    t.native_bf16_ = t.has_feature("avx512bf16");
    t.rounding_instructions_ = t.has_feature("sse4.1");
    t.dot_product_ = t.has_feature("avx512vnni") ? DotProduct::Avx512Vnni
                     : t.has_feature("avxvnni")  ? DotProduct::AvxVnni
                                                 : DotProduct::None;
  } else {
    t.vector_bytes_ = 16;
    t.vector_registers_ = 32;
    t.masked_vectors_ = false;
    t.native_f16_ = true;
    t.native_bf16_ = t.has_feature("bf16");
    t.rounding_instructions_ = true;
    t.dot_product_ = t.has_feature("dotprod") ? DotProduct::ArmDot : DotProduct::None;
  }
  if (t.is_x86())
    t.fma_flops_per_cycle_ = !t.has_feature("fma")       ? 8
                             : !t.has_feature("avx512f") ? 32
                             : two_512_bit_fma_units(t)  ? 64
                                                         : 32;
  else
    t.fma_flops_per_cycle_ = 16;
  t.l2_bytes_ = l2_bytes_of(t.cpu_, t.is_x86(), t.has_feature("avx512f"), t.has_feature("avx2"));
  t.mesh_shared_l3_ = t.is_x86() && intel_server_core(t);
  return t;
}

const TargetInfo& TargetInfo::host() {
  static const TargetInfo t = create({});
  return t;
}

std::vector<std::string> TargetInfo::required_features() const {
#define KILN_X86_NAME(name, ...) name,
#define KILN_ARM_NAME(name, ...) name,
  static const std::vector<std::string> x86 = {KILN_ABI_X86_FEATURES(KILN_X86_NAME)};
  static const std::vector<std::string> arm = {KILN_ABI_AARCH64_FEATURES(KILN_ARM_NAME)};
#undef KILN_X86_NAME
#undef KILN_ARM_NAME
  const std::vector<std::string>& checkable = is_x86() ? x86 : arm;
  std::vector<std::string> out;
  for (const std::string& f : features_)
    if (std::find(checkable.begin(), checkable.end(), f) != checkable.end()) out.push_back(f);
  return out;
}

bool TargetInfo::runs_here() const {
  const TargetInfo& h = host();
  if (arch_ != h.arch()) return false;
  for (const std::string& f : required_features())
    if (!h.has_feature(f)) return false;
  return true;
}

std::string TargetInfo::id() const {
  // Triple and CPU, readable; the feature list by a digest (short, stable across builds).
  Sha256 h;
  for (const std::string& f : features_) {
    h.update(f);
    h.update(",");
  }
  return triple_ + "/" + cpu_ + "/" + Sha256::hex(h.finish()).substr(0, 16);
}

std::unique_ptr<llvm::TargetMachine> TargetInfo::create_machine() const {
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple_, err);
  KILN_CHECK(target, "no LLVM target for ", triple_, ": ", err);
  std::unique_ptr<llvm::TargetMachine> tm(make_machine(*target, triple_, cpu_, features_));
  KILN_CHECK(tm, "cannot create a target machine for ", triple_);
  return tm;
}

}  // namespace kiln
