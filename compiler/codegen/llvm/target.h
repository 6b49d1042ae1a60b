// The code generation target: an LLVM TargetMachine for a triple and CPU (default: the host's
// name and features), and the facts the optimizer needs (vector width).
#pragma once

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

class Target {
 public:
  // Throws kiln::Error for an unknown triple or CPU.
  static Target create(const TargetOptions& opts);

  const std::string& triple() const { return triple_; }
  const std::string& cpu() const { return cpu_; }
  // Enabled CPU features without the leading '+', sorted ("avx2", "fma", "neon", ...).
  const std::vector<std::string>& features() const { return features_; }
  bool has_feature(const std::string& f) const;
  bool is_x86() const;
  bool is_aarch64() const;
  // The widest vector register in bytes (16 SSE/NEON, 32 AVX2, 64 AVX-512).
  int vector_bytes() const { return vector_bytes_; }
  // Architectural vector registers: 16 (SSE, AVX2), 32 (AVX-512, AArch64 NEON).
  int vector_registers() const { return vector_registers_; }
  bool is_host() const { return is_host_; }

  llvm::TargetMachine& machine() const { return *tm_; }

 private:
  std::string triple_, cpu_;
  std::vector<std::string> features_;
  int vector_bytes_ = 16;
  int vector_registers_ = 16;
  bool is_host_ = false;
  std::shared_ptr<llvm::TargetMachine> tm_;
};

// Initializes LLVM's targets once (thread-safe).
void init_llvm_targets();

}  // namespace kiln
