// libFuzzer target: bytes as a .kg graph file, parsed and, when that succeeds, planned. Bad input
// must end in a kiln::Error naming the place: any other exception, crash or sanitizer report is
// a finding. Weight files are looked up in a folder that does not exist. The file may build
// 16 MiB of weights with zeros()/random()/values() (a real compile allows 1 GiB): every input then
// parses and plans in well under the 20 s a unit may take under ASan, and the limit's error path is
// still reached.
#include <cstdint>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kiln::Graph g;
  try {
    kiln::parse_graph_text(text, "fuzz.kg", "/nonexistent-kiln-fuzz", g, int64_t{16} << 20);
    kiln::plan_graph(g);
  } catch (const kiln::Error&) {
  }
  return 0;
}
