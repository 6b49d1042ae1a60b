// Native-width pieces for odd-length vectors. A register tile of 7 positions x 32 channels is
// one <224 x float> value in the kernel's IR; LLVM's type legalizer widens a vector whose length
// is not a power of two to the next one and splits that, and on the way turns the tile's
// broadcasts into lane inserts and spills the widened accumulators (a 7x7 320 -> 1280 layer:
// 296 vinsertps, 834 stack accesses, 8.6x the time). Splitting such values into pieces of the
// target's vector width before instruction selection (LLVM's Scalarizer with a minimum piece
// size) leaves one register per piece: the tile as 14 zmm accumulators, each FMA beside a
// broadcast from memory.
#pragma once

#include <llvm/IR/Function.h>
#include <llvm/IR/PassManager.h>

namespace kiln {

// True if `f` computes a vector wider than `native_bits` whose lane count is not a power of
// two (the only values the split changes: every other kernel keeps LLVM's own legalization).
bool has_odd_wide_vectors(const llvm::Function& f, unsigned native_bits);

// The passes that split them into pieces of `native_bits` and clean up after the split.
llvm::FunctionPassManager native_pieces_passes(unsigned native_bits);

}  // namespace kiln
