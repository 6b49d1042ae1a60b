#include "compiler/codegen/llvm/static_archive.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/module_builder.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"

namespace kiln {

namespace {

// An object file defining the package bytes and their size.
std::vector<uint8_t> data_object(const std::string& symbol, const std::vector<uint8_t>& bytes,
                                 const TargetInfo& t) {
  llvm::LLVMContext ctx;
  llvm::Module m("kiln_package", ctx);
  m.setTargetTriple(t.triple());
  m.setDataLayout(t.machine().createDataLayout());
  auto* data =
      llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<uint8_t>(bytes.data(), bytes.size()));
  auto* g = new llvm::GlobalVariable(m, data->getType(), true, llvm::GlobalValue::ExternalLinkage,
                                     data, symbol + "_package");
  g->setAlignment(llvm::Align(64));  // the runtime uses the constants in place
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  new llvm::GlobalVariable(m, i64, true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantInt::get(i64, bytes.size()), symbol + "_package_size");
  return emit_object(m, t);
}

}  // namespace

std::vector<uint8_t> static_archive(const std::string& symbol,
                                    const std::vector<uint8_t>& kernels_object,
                                    const std::vector<uint8_t>* embed, const TargetInfo& t) {
  std::vector<std::vector<uint8_t>> objects = {kernels_object};
  std::vector<std::string> names = {symbol + "_kernels.o"};
  if (embed) {
    objects.push_back(data_object(symbol, *embed, t));
    names.push_back(symbol + "_package.o");
  }
  std::vector<llvm::NewArchiveMember> members;
  for (size_t i = 0; i < objects.size(); ++i) {
    llvm::MemoryBufferRef ref(
        llvm::StringRef(reinterpret_cast<const char*>(objects[i].data()), objects[i].size()),
        names[i]);
    members.emplace_back(ref);
  }
  auto buf = llvm::writeArchiveToBuffer(members, llvm::SymtabWritingMode::NormalSymtab,
                                        llvm::object::Archive::K_GNU, /*Deterministic=*/true,
                                        /*Thin=*/false);
  if (!buf) throw Error("cannot write the static library: " + llvm::toString(buf.takeError()));
  return std::vector<uint8_t>((*buf)->getBufferStart(), (*buf)->getBufferEnd());
}

}  // namespace kiln
