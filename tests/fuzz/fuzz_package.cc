// libFuzzer target: a package, loaded, then (if the runtime accepts it and its machine code is
// one the build compiled) a session created and run with zero inputs. The harness recomputes the
// metadata and constants checksums of every input, as a crafted package would, so mutations
// reach the verifier's other checks. Mutated machine code is loaded but never run: no verifier
// can judge native code (signatures are for that), and a coverage-guided fuzzer learns to keep a
// CRC-32C intact (it is not a MAC). The known code blobs are those of the packages in
// $KILN_FUZZ_KNOWN_CODE (the seed corpus the suite passes).
#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "schema/kiln_sign.h"
#include "tests/runtime/checksums.h"

namespace {

std::string code_digest(const std::vector<uint8_t>& pkg) {
  std::vector<uint8_t> copy = pkg;
  uint64_t code = 0, size = 0;
  if (!kiln::testing::fix_checksums(copy, &code, &size, false) || !size) return "";
  kiln_sha256 h;
  kiln_sha256_init(&h);
  kiln_sha256_update(&h, pkg.data() + code, size);
  uint8_t d[32];
  kiln_sha256_final(&h, d);
  return std::string(reinterpret_cast<char*>(d), 32);
}

// The machine the fuzzer pretends to be holds 1 GiB: a package declaring a larger arena or
// tensor gets KILN_OUT_OF_MEMORY from the runtime (the path under test), instead of a real
// allocation libFuzzer's -malloc_limit_mb reports as a finding.
constexpr size_t kMemory = size_t{1} << 30;

void* capped_alloc(void*, size_t size, size_t alignment) {
  if (size > kMemory) return nullptr;
  void* p = nullptr;
  return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

void capped_free(void*, void* p) {
  std::free(p);
}

const kiln_allocator kCapped = {nullptr, capped_alloc, capped_free};

std::set<std::string>& known_code() {
  static std::set<std::string> known;
  return known;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("KILN_FUZZ_KNOWN_CODE");
  if (DIR* d = dir ? opendir(dir) : nullptr) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() < 5 || name.compare(name.size() - 5, 5, ".kiln") != 0) continue;
      std::ifstream f(std::string(dir) + "/" + name, std::ios::binary);
      std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      std::string digest = code_digest(b);
      if (!digest.empty()) known_code().insert(digest);
    }
    closedir(d);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> pkg(data, data + size);
  kiln::testing::fix_checksums(pkg, nullptr, nullptr, /*fix_code=*/false);
  std::vector<uint8_t> store(pkg.size() + 64);
  uint8_t* p = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) % 64;
  if (!pkg.empty()) std::memcpy(p, pkg.data(), pkg.size());
  kiln_model* m = nullptr;
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.allocator = &kCapped;
  if (kiln_model_load_memory(p, pkg.size(), &mo, &m) != KILN_OK) return 0;
  kiln_session* s = nullptr;
  if (known_code().count(code_digest(pkg)) && kiln_session_create(m, nullptr, &s) == KILN_OK) {
    size_t n = 0;
    kiln_model_input_count(m, &n);
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info info{};
      info.struct_size = sizeof info;
      if (kiln_model_input_info(m, i, &info) != KILN_OK)
        std::abort();  // a loaded model's own index
      // (Session creation allocated each input once already, so this size is one that fits; a
      // package declaring tensors beyond kMemory fails there with KILN_OUT_OF_MEMORY.)
      std::vector<uint8_t> x(info.size_bytes);
      kiln_session_set_input(s, i, info.dtype, x.data(), x.size());
    }
    kiln_session_run(s);
    kiln_session_release(s);
  }
  kiln_model_release(m);
  return 0;
}
