// A C++ application that loads a package from memory and runs it from 4 threads, one session
// each (the model is shared, read-only), checking that all results agree.
//
//   cpp_threads MODEL.kiln
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "kiln/kiln.h"

namespace {

struct Aligned {
  void operator()(uint8_t* p) const { std::free(p); }
};

bool run_all(kiln_model* model, int seed, std::vector<std::vector<uint8_t>>* outputs) {
  kiln_session* s = nullptr;
  if (kiln_session_create(model, nullptr, &s) != KILN_OK) return false;
  size_t n_in = 0, n_out = 0;
  kiln_model_input_count(model, &n_in);
  kiln_model_output_count(model, &n_out);
  std::vector<std::vector<uint8_t>> inputs(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    kiln_tensor_info t;
    t.struct_size = sizeof t;
    kiln_model_input_info(model, i, &t);
    inputs[i].resize(t.size_bytes);
    // Deterministic inputs (the same for every thread): small floats, or bytes for other types.
    for (size_t b = 0; b < t.size_bytes; ++b)
      inputs[i][b] = static_cast<uint8_t>((b * 131 + static_cast<size_t>(seed)) % 97);
    if (t.dtype == KILN_DTYPE_FLOAT32)
      for (size_t k = 0; k < t.size_bytes / 4; ++k) {
        float v = static_cast<float>((k * 37 + static_cast<size_t>(seed)) % 101) / 101.0f;
        std::memcpy(&inputs[i][k * 4], &v, 4);
      }
    if (kiln_session_set_input(s, i, t.dtype, inputs[i].data(), inputs[i].size()) != KILN_OK)
      return false;
  }
  bool ok = true;
  for (int r = 0; r < 10 && ok; ++r) {
    ok = kiln_session_run(s) == KILN_OK;
    outputs->assign(n_out, {});
    for (size_t o = 0; o < n_out && ok; ++o) {
      const void* d;
      size_t n;
      ok = kiln_session_output(s, o, &d, &n) == KILN_OK;
      (*outputs)[o].assign(static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n);
    }
  }
  kiln_session_release(s);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cpp_threads MODEL.kiln\n");
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.empty()) {
    std::fprintf(stderr, "cpp_threads: cannot read %s\n", argv[1]);
    return 1;
  }
  // 64-byte aligned memory: the runtime uses it in place (no copy); it must outlive the model.
  std::unique_ptr<uint8_t, Aligned> mem(
      static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64)));
  std::memcpy(mem.get(), bytes.data(), bytes.size());
  kiln_model* model = nullptr;
  if (kiln_model_load_memory(mem.get(), bytes.size(), nullptr, &model) != KILN_OK) {
    std::fprintf(stderr, "cpp_threads: %s\n", kiln_last_error_message());
    return 1;
  }
  constexpr int kThreads = 4;
  std::vector<std::vector<std::vector<uint8_t>>> results(kThreads);
  std::vector<int> ok(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { ok[t] = run_all(model, 7, &results[t]); });
  for (auto& th : threads) th.join();
  int agree = 1;
  for (int t = 0; t < kThreads; ++t) {
    if (!ok[t]) {
      std::fprintf(stderr, "cpp_threads: thread %d failed: %s\n", t, kiln_last_error_message());
      agree = 0;
    } else if (results[t] != results[0]) {
      std::fprintf(stderr, "cpp_threads: thread %d computed different outputs\n", t);
      agree = 0;
    }
  }
  std::printf("%d threads, one session each: %s\n", kThreads,
              agree ? "all results agree" : "MISMATCH");
  kiln_model_release(model);
  return agree ? 0 : 1;
}
