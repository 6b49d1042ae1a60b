// One LLVM module for the kernels of a program, its optimization (O3, freestanding: no library
// calls may appear) and its emission as an object file, assembly or IR text.
//
// Package modules export one symbol, the versioned entry table (schema/kiln_abi.h: its symbol,
// header and the kernel ABI of its entries). Everything else is internal. JIT modules keep the
// raw kernels external so the JIT can call them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/llvm/kernel_emitter.h"
#include "schema/kiln_abi.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace kiln {

class TargetInfo;

// Package: kernels internal, the entry table exported as KILN_ABI_ENTRY_TABLE_SYMBOL (a shared
// object).
// Static: the same with the table named `table_symbol` and carrying `table_id` (a static library
// linked into the application). Jit: kernels external, no table.
enum class ModuleKind { Package, Static, Jit };

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx,
                                           const std::vector<CodegenKernel>& kernels,
                                           const TargetInfo& t, ModuleKind kind,
                                           const std::string& table_symbol = "",
                                           uint32_t table_id = 0);
// Verifies (throws InternalError naming the problem) and runs the O3 pipeline with every library
// function disabled, so that no memset/memcpy/libm call is introduced.
void optimize_module(llvm::Module& m, const TargetInfo& t);
std::vector<uint8_t> emit_object(llvm::Module& m, const TargetInfo& t);
std::string emit_assembly(llvm::Module& m, const TargetInfo& t);
std::string module_ir(const llvm::Module& m);

}  // namespace kiln
