// The kernels of a model linked into ONE position-independent shared object that is
// freestanding: no undefined symbols, no libc, no TLS, no initializers, only relative
// relocations, and the entry table exported. Checked for x86-64 and AArch64 (several CPUs), by
// kiln's own ELF check and by llvm-readelf-19.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/codegen/llvm/link.h"
#include "compiler/driver/compile.h"
#include "compiler/support/error.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"

namespace kiln {
namespace {

// A model touching every kind of code the backend emits: vector loads/stores, reductions,
// gated (padded) loads, the math library (including sin's constant table), integer division,
// float16 and bfloat16 conversions, and a split into tasks.
void build_model(Graph& g) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 64, 64});
  Tensor w = Tensor::input(g, "w", dtypes::float32, {64, 64});
  Tensor h = relu(matmul(x, w))
                 .sin()
                 .add(x.pad({{0, 0}, {1, 1}, {2, 2}}, 0.0).shrink({{0, 4}, {0, 64}, {1, 65}}));
  g.add_output("y", softmax(h, -1).pow(h.abs()).erf().uop());
  Tensor i = Tensor::input(g, "i", dtypes::int32, {64});
  g.add_output("q", i.div(i.mod(i.like(7)).add(i.like(1))).uop());
  Tensor hf = Tensor::input(g, "h", dtypes::float16, {64});
  g.add_output("hf",
               hf.cast(dtypes::float32).exp().cast(dtypes::bfloat16).cast(dtypes::float16).uop());
}

std::string readelf(const std::vector<uint8_t>& so, const std::string& args) {
  auto path = std::filesystem::temp_directory_path() /
              ("kiln_so_test_" + std::to_string(::getpid()) + ".so");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(so.data()), static_cast<std::streamsize>(so.size()));
  }
  std::string cmd = "llvm-readelf-19 " + args + " " + path.string() + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  std::filesystem::remove(path);
  return out;
}

void check_target(const TargetOptions& to, const char* machine, const char* relative) {
  Graph g;
  build_model(g);
  TargetInfo t = TargetInfo::create(to);
  CompileOptions o;
  o.emit = Emit::SharedObject;
  o.target = &t;
  Artifacts art = compile(g, o);
  std::string what = t.triple() + " cpu " + t.cpu();
  ASSERT_FALSE(art.shared_object.empty()) << what;
  EXPECT_EQ(check_shared_object(art.shared_object, t), "") << what;
  std::string header = readelf(art.shared_object, "-h -l");
  EXPECT_NE(header.find(machine), std::string::npos) << what << "\n" << header;
  EXPECT_NE(header.find("DYN (Shared object file)"), std::string::npos) << header;
  EXPECT_EQ(header.find("TLS"), std::string::npos) << header;
  std::string syms = readelf(art.shared_object, "--dyn-syms -W");
  EXPECT_NE(syms.find("kiln_kernels_v1"), std::string::npos) << syms;
  // Only the null symbol may be undefined.
  size_t und = 0;
  for (size_t pos = 0; (pos = syms.find(" UND ", pos)) != std::string::npos; ++pos) ++und;
  EXPECT_EQ(und, 1u) << what << "\n" << syms;
  std::string relocs = readelf(art.shared_object, "-r -W");
  size_t lines = 0, rel = 0;
  std::istringstream ls(relocs);
  for (std::string line; std::getline(ls, line);) {
    if (line.size() > 16 && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find(" R_") != std::string::npos) {
      ++lines;
      rel += line.find(relative) != std::string::npos;
    }
  }
  EXPECT_GE(lines, 1u) << relocs;  // the entry table's function pointers
  EXPECT_EQ(lines, rel) << what << "\n" << relocs;
  std::string dyn = readelf(art.shared_object, "-d");
  for (const char* tag : {"NEEDED", "INIT", "FINI", "TEXTREL"})
    EXPECT_EQ(dyn.find(tag), std::string::npos) << tag << "\n" << dyn;
}

TEST(SharedObject, HostIsFreestanding) {
  check_target({}, "X86-64", "R_X86_64_RELATIVE");
}
TEST(SharedObject, GenericX86_64IsFreestanding) {
  check_target({"x86_64-linux-gnu", "x86-64"}, "X86-64", "R_X86_64_RELATIVE");
}
TEST(SharedObject, AArch64IsFreestanding) {
  for (const char* cpu : {"generic", "cortex-a53", "cortex-a72", "neoverse-n1"})
    check_target({"aarch64-linux-gnu", cpu}, "AArch64", "R_AARCH64_RELATIVE");
}

TEST(SharedObject, BadTargetsAreErrors) {
  EXPECT_THROW(TargetInfo::create({"nonsense-unknown-thing", ""}), Error);
  try {
    TargetInfo::create({"x86_64-linux-gnu", "pentium9000"});
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option(), Option::Cpu);
    EXPECT_NE(std::string(e.what()).find("CPU pentium9000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
