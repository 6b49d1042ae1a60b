#include "compiler/codegen/llvm/target.h"

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

#include "compiler/support/error.h"

namespace kiln {

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

bool Target::has_feature(const std::string& f) const {
  return std::binary_search(features_.begin(), features_.end(), f);
}
bool Target::is_x86() const {
  return llvm::Triple(triple_).isX86();
}
bool Target::is_aarch64() const {
  return llvm::Triple(triple_).isAArch64();
}

Target Target::create(const TargetOptions& opts) {
  init_llvm_targets();
  Target t;
  std::string host = llvm::sys::getDefaultTargetTriple();
  t.triple_ = opts.triple.empty() ? host : llvm::Triple::normalize(opts.triple);
  llvm::Triple triple(t.triple_);
  bool host_arch = triple.getArch() == llvm::Triple(host).getArch() &&
                   triple.getOS() == llvm::Triple(host).getOS();
  t.is_host_ = host_arch && (opts.cpu.empty() || opts.cpu == "native" ||
                             opts.cpu == llvm::sys::getHostCPUName().str());
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple_, err);
  if (!target) throw Error("--target " + t.triple_ + ": " + err);
  std::string features;
  if (t.is_host_) {
    t.cpu_ = llvm::sys::getHostCPUName().str();
    for (const auto& [name, on] : llvm::sys::getHostCPUFeatures())
      if (on) t.features_.push_back(name.str());
  } else {
    t.cpu_ = opts.cpu.empty() || opts.cpu == "native" ? "generic" : opts.cpu;
  }
  std::sort(t.features_.begin(), t.features_.end());
  for (const auto& f : t.features_) features += (features.empty() ? "+" : ",+") + f;
  llvm::TargetOptions to;
  auto* tm = target->createTargetMachine(t.triple_, t.cpu_, features, to, llvm::Reloc::PIC_,
                                         std::nullopt, llvm::CodeGenOptLevel::Aggressive);
  if (!tm) throw Error("cannot create a target machine for " + t.triple_ + " cpu " + t.cpu_);
  const llvm::MCSubtargetInfo* sti = tm->getMCSubtargetInfo();
  if (!sti->isCPUStringValid(t.cpu_)) {
    delete tm;
    throw Error("--cpu " + t.cpu_ + ": not a CPU LLVM knows for " + t.triple_);
  }
  t.tm_.reset(tm);
  if (!t.is_host_) {
    // The features the CPU name implies.
    for (const llvm::SubtargetFeatureKV& kv : sti->getAllProcessorFeatures())
      if (sti->getFeatureBits().test(kv.Value)) t.features_.push_back(kv.Key);
    std::sort(t.features_.begin(), t.features_.end());
  }
  if (t.is_x86()) {
    t.vector_bytes_ = t.has_feature("avx512f") ? 64 : t.has_feature("avx") ? 32 : 16;
    t.vector_registers_ = t.has_feature("avx512f") ? 32 : 16;
  } else {
    t.vector_bytes_ = 16;
    t.vector_registers_ = 32;
  }
  // AVX-512 machines often prefer 256-bit vectors; kiln uses the full width only with avx512f.
  return t;
}

}  // namespace kiln
