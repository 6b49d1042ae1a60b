// One LLVM module for the kernels of a program, its optimization (O3, freestanding: no library
// calls may appear) and its emission as an object file, assembly or IR text.
//
// Package modules export one symbol, the versioned entry table `kiln_kernels_v1`:
//   struct { uint32_t magic /* 'KILN' */, version, count, reserved;
//            void (*entry[count])(void *const *args, const int64_t *vars, uint32_t task, uint32_t
//            ntasks); }
// Everything else is internal. JIT modules keep the raw kernels external so the JIT can call them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/linearizer.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace kiln {

class Target;

inline constexpr uint32_t kEntryTableMagic = 0x4E4C494B;  // "KILN" little-endian
inline constexpr uint32_t kEntryTableVersion = 1;
inline constexpr const char* kEntryTableSymbol = "kiln_kernels_v1";

struct CodegenKernel {
  std::string name;  // symbol of the entry; the raw kernel is "<name>.raw"
  std::vector<LinearOp> program;
  std::vector<DType> arg_dtypes;  // element dtype of each argument buffer
};

// Package: kernels internal, the entry table exported as kEntryTableSymbol (a shared object).
// Static: the same with the table named `table_symbol` and carrying `table_id` (a static library
// linked into the application). Jit: kernels external, no table.
enum class ModuleKind { Package, Static, Jit };

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx,
                                           const std::vector<CodegenKernel>& kernels,
                                           const Target& t, ModuleKind kind,
                                           const std::string& table_symbol = kEntryTableSymbol,
                                           uint32_t table_id = 0);
// Verifies (throws InternalError naming the problem) and runs the O3 pipeline with every library
// function disabled, so that no memset/memcpy/libm call is introduced.
void optimize_module(llvm::Module& m, const Target& t);
std::vector<uint8_t> emit_object(llvm::Module& m, const Target& t);
std::string emit_assembly(llvm::Module& m, const Target& t);
std::string module_ir(const llvm::Module& m);

}  // namespace kiln
