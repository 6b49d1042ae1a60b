// The target description: every fact about the CPU that a pass uses, computed once from a triple,
// a CPU name and its features, and passed down. Nothing below the driver asks LLVM or the host
// about the CPU; code that needs a fact reads it here, so every pass can be run for any CPU
// (tests pin --cpu to check the code an AVX2 and an AVX-512 machine would get).
//
// This is also where kiln's one LLVM TargetMachine is made (codegen emits with it, the JIT
// compiles with a machine it creates here), so the compiled code and the facts cannot disagree.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class TargetMachine;
}

namespace kiln {

struct TargetOptions {
  std::string triple;  // "" = the host; or "x86_64-linux-gnu", "aarch64-linux-gnu"
  std::string cpu;     // "" = the host CPU for the host triple, "generic" otherwise
};

enum class Arch : uint8_t { X86, AArch64 };  // x86-64, AArch64

// Integer dot-product instructions (four 8-bit products summed into a 32-bit lane).
enum class DotProduct : uint8_t {
  None,
  AvxVnni,     // vpdpbusd on ymm (AVX-VNNI)
  Avx512Vnni,  // vpdpbusd on zmm (AVX-512 VNNI)
  ArmDot,      // sdot / udot (ARMv8.2 dotprod)
};
const char* dot_product_name(DotProduct d);

class TargetInfo {
 public:
  // Throws OptionError (TargetOptions field named) for an unknown triple or CPU.
  static TargetInfo create(const TargetOptions& opts);
  // The machine kiln runs on, created once (thread-safe).
  static const TargetInfo& host();

  const std::string& triple() const { return triple_; }
  const std::string& cpu() const { return cpu_; }
  Arch arch() const { return arch_; }
  bool is_x86() const { return arch_ == Arch::X86; }
  bool is_aarch64() const { return arch_ == Arch::AArch64; }
  // True when this is the machine kiln runs on (kernels may be timed on it).
  bool is_host() const { return is_host_; }
  // True when code for this target runs on this machine: the host's architecture, and every
  // required feature is one the host has (baseline x86-64 code runs on any x86-64 host).
  bool runs_here() const;
  // Enabled CPU features without the leading '+', sorted ("avx2", "fma", "neon", ...).
  const std::vector<std::string>& features() const { return features_; }
  bool has_feature(const std::string& f) const;

  // The widest vector register kiln uses, in bytes (16 SSE/NEON, 32 AVX, 64 AVX-512F).
  int vector_bytes() const { return vector_bytes_; }
  // Architectural vector registers: 16 (SSE, AVX2), 32 (AVX-512, AArch64 NEON).
  int vector_registers() const { return vector_registers_; }
  // Masked vector loads and stores of 32/64-bit lanes are instructions (AVX vmaskmov, AVX-512
  // mask registers); NEON and SSE have none (LLVM would branch per lane).
  bool masked_vectors() const { return masked_vectors_; }
  // float16 <-> float32 conversions are instructions (F16C; AArch64); otherwise integer code.
  bool native_f16() const { return native_f16_; }
  // bfloat16 conversions are instructions (AVX-512 BF16; AArch64 BF16).
  bool native_bf16() const { return native_bf16_; }
  // floor/ceil/trunc/round-to-even are instructions (SSE4.1; AArch64); otherwise add-and-subtract.
  bool rounding_instructions() const { return rounding_instructions_; }
  // The best integer dot product (the int8 kernels' instruction).
  DotProduct dot_product() const { return dot_product_; }
  // The per-core L2 cache, in bytes, as the CPU name implies (a table of families, else a
  // conservative figure for the ISA level): what a kernel's re-read operand must fit in to be
  // re-read from cache rather than from L3 or memory.
  int64_t l2_bytes() const { return l2_bytes_; }
  // The cores share one last-level cache on a mesh (Intel's server cores): a line one core
  // wrote reaches another in ~300 ns. Zen cores share an L3 per complex of up to 8 cores, and
  // two vCPUs in different complexes pass lines through the I/O die (~550-1000 ns measured on
  // the AMD EPYC hosts); unknown CPUs are counted as those.
  bool mesh_shared_l3() const { return mesh_shared_l3_; }
  // Peak float32 FMA flops per cycle per core: 2 x lanes x FMA units (64 on Intel's server
  // AVX-512 cores with two 512-bit units, 32 on Zen 4's and AVX2's two 256-bit units, 16 on
  // NEON's two 128-bit units).
  int fma_flops_per_cycle() const { return fma_flops_per_cycle_; }
  // Flops the core can do per byte it streams from memory: fma_flops_per_cycle() over
  // kDramBytesPerCycle. A layer whose weights come from memory is bound by them below it.
  double machine_balance() const { return fma_flops_per_cycle_ / kDramBytesPerCycle; }
  // One core's share of memory bandwidth, in bytes per cycle: ~14 GB/s at ~3 GHz, what a
  // single-threaded read reached on the Xeon and EPYC machines kiln is measured on.
  static constexpr double kDramBytesPerCycle = 5.0;

  // The features a package built for this target requires at load: those of features() that
  // kiln_abi.h lists for the architecture (the ones the runtime can detect).
  std::vector<std::string> required_features() const;
  // The identity of the target for caches: triple, CPU and a digest of the features.
  std::string id() const;

  // The TargetMachine kiln emits code with (PIC, aggressive optimization).
  llvm::TargetMachine& machine() const { return *tm_; }
  // A new TargetMachine equal to machine(), for a consumer that must own one (the JIT).
  std::unique_ptr<llvm::TargetMachine> create_machine() const;

 private:
  std::string triple_, cpu_;
  Arch arch_ = Arch::X86;
  std::vector<std::string> features_;
  bool is_host_ = false;
  int vector_bytes_ = 16;
  int vector_registers_ = 16;
  bool masked_vectors_ = false;
  bool native_f16_ = false;
  bool native_bf16_ = false;
  bool rounding_instructions_ = false;
  DotProduct dot_product_ = DotProduct::None;
  int64_t l2_bytes_ = 256 * 1024;
  bool mesh_shared_l3_ = false;
  int fma_flops_per_cycle_ = 16;
  std::shared_ptr<llvm::TargetMachine> tm_;
};

// Initializes LLVM's targets once (thread-safe).
void init_llvm_targets();

}  // namespace kiln
