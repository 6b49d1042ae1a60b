// Paths of the packages the build compiles for the runtime tests (tests/CMakeLists.txt), and
// small helpers shared by the runtime tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef KILN_TEST_PACKAGE_DIR
#error "KILN_TEST_PACKAGE_DIR must point at the compiled test packages"
#endif

namespace kiln::testing {

inline std::string package_path(const std::string& name) {
  return std::string(KILN_TEST_PACKAGE_DIR) + "/" + name + ".kiln";
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

}  // namespace kiln::testing
