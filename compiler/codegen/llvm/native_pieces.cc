#include "compiler/codegen/llvm/native_pieces.h"

#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/Support/MathExtras.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/Scalarizer.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>

namespace kiln {

namespace {

bool odd_wide(const llvm::Type* t, unsigned native_bits) {
  const auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t);
  if (!v) return false;
  uint64_t bits = static_cast<uint64_t>(v->getNumElements()) *
                  v->getElementType()->getPrimitiveSizeInBits().getFixedValue();
  return bits > native_bits && !llvm::isPowerOf2_32(v->getNumElements());
}

}  // namespace

bool has_odd_wide_vectors(const llvm::Function& f, unsigned native_bits) {
  for (const llvm::Instruction& i : llvm::instructions(f))
    if (odd_wide(i.getType(), native_bits)) return true;
  return false;
}

llvm::FunctionPassManager native_pieces_passes(unsigned native_bits) {
  llvm::FunctionPassManager fpm;
  llvm::ScalarizerPassOptions o;
  o.ScalarizeMinBits = native_bits;  // pieces of a whole register, not scalars
  o.ScalarizeLoadStore = true;       // a tile's loads and stores too, one piece each
  fpm.addPass(llvm::ScalarizerPass(o));
  // The split leaves a piece's broadcast as lane inserts of one loaded value, and copies of the
  // same address computation per piece.
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::EarlyCSEPass());
  fpm.addPass(llvm::SimplifyCFGPass());
  return fpm;
}

}  // namespace kiln
