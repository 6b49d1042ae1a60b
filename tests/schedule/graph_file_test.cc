// The kiln graph file: parsing, errors with file:line:col, and the --dump-ir=import round trip.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/support/error.h"
#include "compiler/tensor/npy.h"
#include "tests/schedule/random_graph.h"

namespace kiln {
namespace {

std::string parse_error(const std::string& text,
                        int64_t max_generated_bytes = kMaxGeneratedWeightBytes) {
  Graph g;
  try {
    parse_graph_text(text, "m.kg", ".", g, max_generated_bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GraphFile, ParsesInputsWeightsOpsAndOutputs) {
  Graph g;
  parse_graph_text(
      "# a comment\n"
      "input x: float32[2, 3]\n"
      "weight w: float32[3, 4] = random(seed=1, scale=0.5)\n"
      "weight b: float32[4] = values([1, 2, 3.5, -1])\n"
      "h = matmul(x, w)\n"
      "y = add(h, b)   # broadcast\n"
      "lo, hi = split(y, axis=1, sizes=[1, 3])\n"
      "z = relu(hi)\n"
      "output y\n"
      "output top = z\n",
      "m.kg", ".", g);
  ASSERT_EQ(g.inputs().size(), 1u);
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[1].name, "top");
  EXPECT_EQ(g.outputs()[1].node->shape(), (Shape{2, 3}));
  EXPECT_EQ(g.weights().size(), 2u);
  EXPECT_EQ(g.weight(2).get(2).f, 3.5);
}

TEST(GraphFile, ErrorsNameFileLineColumnAndWhatWasExpected) {
  EXPECT_EQ(parse_error("input x: float32[2]\ny = exp(x\noutput y\n"),
            "m.kg:2:8: '(' is not closed");
  EXPECT_EQ(parse_error("input x: float33[2]\n"), "m.kg:1:10: unknown dtype 'float33'");
  EXPECT_EQ(parse_error("input x: float32[2]\ny = frobnicate(x)\noutput y\n"),
            "m.kg:2:5: unknown op 'frobnicate'");
  EXPECT_EQ(parse_error("input x: float32[2]\ny = exp(q)\noutput y\n"),
            "m.kg:2:5: exp: argument 1 must be a tensor name");
  EXPECT_EQ(parse_error("input x: float32[2]\ny = softmax(x, axs=0)\noutput y\n"),
            "m.kg:2:5: softmax: unexpected attribute 'axs'");
  EXPECT_EQ(parse_error("input x: float32[2, 3]\ny = reshape(x, shape=[4])\noutput y\n"),
            "m.kg:2:5: reshape: reshape: (2,3) (6 elements) cannot become (4)");
  EXPECT_EQ(parse_error("input x: float32[2]\nx = exp(x)\noutput x\n"),
            "m.kg:2:1: 'x' is already defined");
  EXPECT_EQ(parse_error("input x: float32[2]\n"), "m.kg: the graph has no 'output' statement");
  EXPECT_EQ(parse_error("input x: float32[2]\noutput nope\n"),
            "m.kg:2:8: output 'nope' is not defined");
  EXPECT_EQ(parse_error("input x: float32[2]\ny = exp(x) $\n"),
            "m.kg:2:12: unexpected character '$'");
  EXPECT_EQ(parse_error("weight w: float32[2] = values([1])\n"),
            "m.kg:1:24: values: 1 values for a weight of 2 elements");
  // Sizes a typo can produce are refused before anything is allocated (found by fuzz_graph_file).
  EXPECT_EQ(parse_error("weight w: float32[16222222222, 3] = random(seed=1)\n"),
            "m.kg:1:37: random: weight 'w' float32(16222222222,3) is larger than what zeros(), "
            "random() and values() may still build in this file: 1073741824 of its 1073741824 "
            "bytes are left (store large weights with npy(\"file.npy\"))");
  // The bound is on the file's total, so many weights under it each cannot add up past it
  // (fuzz_graph_file found files of several large weights that took minutes to build and plan).
  EXPECT_EQ(parse_error("weight a: float32[10] = zeros()\nweight b: float32[10] = random()\n", 64),
            "m.kg:2:25: random: weight 'b' float32(10) is larger than what zeros(), random() and "
            "values() may still build in this file: 24 of its 64 bytes are left (store large "
            "weights with npy(\"file.npy\"))");
  EXPECT_EQ(
      parse_error("input x: float32[2]\ny = reshape(x, shape=[4294967296, 4294967296, -1])\n"),
      "m.kg:2:5: reshape: reshape: (4294967296,4294967296,-1) has more than 2^56 elements");
  EXPECT_EQ(parse_error("input x: float32[4294967296, 4294967296]\ny = exp(x)\noutput y\n"),
            "m.kg:1:10: shape (4294967296,4294967296) has more than 2^56 elements");
}

TEST(GraphFile, NpyWeightsAreReadRelativeToTheFile) {
  auto dir = std::filesystem::temp_directory_path() / "kiln_kg_npy_test";
  std::filesystem::create_directories(dir / "w");
  NpyArray a{dtypes::float32, {2}, {}};
  float v[2] = {1.25f, -3.0f};
  a.data.assign(reinterpret_cast<uint8_t*>(v), reinterpret_cast<uint8_t*>(v) + 8);
  write_npy((dir / "w" / "a.npy").string(), a);
  {
    std::ofstream f(dir / "m.kg");
    f << "input x: float32[2]\nweight a: float32[2] = npy(\"w/a.npy\")\ny = mul(x, a)\noutput y\n";
  }
  Graph g;
  load_graph_file((dir / "m.kg").string(), g);
  EXPECT_EQ(g.weight(1).get(1).f, -3.0);
  // A declared shape that differs from the file's is an error naming both.
  {
    std::ofstream f(dir / "bad.kg");
    f << "weight a: float32[3] = npy(\"w/a.npy\")\n";
  }
  Graph g2;
  try {
    load_graph_file((dir / "bad.kg").string(), g2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds float32(2), weight 'a' is declared float32(3)"),
              std::string::npos)
        << e.what();
  }
}

// --dump-ir=import: any graph, printed as .kg, re-imports to the same graph (same structural
// digest: same ops, shapes, constants and buffer ids) with the same weights.
TEST(GraphFile, DumpedGraphsReimportToTheSameGraph) {
  auto dir = std::filesystem::temp_directory_path() / "kiln_kg_roundtrip_test";
  for (int seed = 0; seed < 100; ++seed) {
    Graph g;
    testing::RandomGraph rg(g, 9000 + static_cast<uint64_t>(seed));
    rg.build();
    std::string text =
        write_graph_file(g, dir.string(), (dir / ("w" + std::to_string(seed))).string());
    Graph back;
    parse_graph_text(text, "dump.kg", dir.string(), back);
    ASSERT_EQ(back.sink()->digest(), g.sink()->digest()) << "seed " << seed << "\n" << text;
    ASSERT_EQ(back.weights().size(), g.weights().size());
    for (const auto& [id, arr] : g.weights())
      ASSERT_EQ(back.weight(id).bytes(), arr.bytes()) << "weight " << id;
    // Printing the re-imported graph gives the same text.
    EXPECT_EQ(write_graph_file(back, dir.string(), (dir / ("w" + std::to_string(seed))).string()),
              text);
  }
}

}  // namespace
}  // namespace kiln
