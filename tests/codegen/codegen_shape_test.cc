// The shape of the code kiln generates, for named CPUs: an AVX2 CPU (znver3) and an AVX-512 CPU
// (sapphirerapids), compiled to IR and assembly and inspected, never executed, so these pass on
// any host. (Tests that execute code use the host and check values.)
#include <gtest/gtest.h>

#include <regex>

#include "compiler/driver/compile.h"
#include "compiler/opt/heuristics.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/integer_conv.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "compiler/tensor/tensor.h"
#include "compiler/tensor/weight_layout.h"

namespace kiln {
namespace {

struct Cpu {
  const char* name;
  int vector_bytes;
  const char* vector_register;  // the register class of a full-width vector
};
const Cpu kCpus[] = {{"znver3", 32, "%ymm"}, {"sapphirerapids", 64, "%zmm"}};

const TargetInfo& target(const Cpu& c) {
  static std::map<std::string, TargetInfo> cache;
  auto it = cache.find(c.name);
  if (it == cache.end())
    it = cache.emplace(c.name, TargetInfo::create({"x86_64-linux-gnu", c.name})).first;
  return it->second;
}

Artifacts assembly_for(Graph& g, const Cpu& c, OptLevel level = OptLevel::Tiles) {
  CompileOptions o;
  o.emit = Emit::Assembly;
  o.target = &target(c);
  o.tuning.opt_level = level;
  return compile(g, o);
}

// A constant float32 weight of `shape` holding step x (i % period) (values need not be real).
Tensor ramp_weight(Graph& g, const std::string& name, const Shape& shape, double step,
                   int64_t period) {
  NDArray w(dtypes::float32, shape);
  for (int64_t i = 0; i < w.numel(); ++i)
    w.set(i, ConstValue::of_float(step * static_cast<double>(i % period)));
  return Tensor::weight(g, name, std::move(w));
}

int count_matches(const std::string& text, const std::string& re) {
  std::regex r(re);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), r), std::sregex_iterator()));
}

// Vector FMAs on CPU c's registers, and vector registers reloaded from the stack (spills).
std::string vector_fma_pattern(const Cpu& c) {
  return std::string("vfmadd[0-9]+ps[^\n]*") + c.vector_register;
}
int vector_fmas(const std::string& text, const Cpu& c) {
  return count_matches(text, vector_fma_pattern(c));
}
int vector_reloads(const std::string& text, const Cpu& c) {
  return count_matches(text, std::string(R"(vmovups\s+-?[0-9]*\(%rsp\), )") + c.vector_register);
}
// vector_reloads between the first and the last vector FMA: in a kernel of one reduction loop,
// the spills its FMAs wait on (an epilogue's transposes may spill without slowing them).
int reloads_among_fmas(const std::string& text, const Cpu& c) {
  std::regex fma(vector_fma_pattern(c));
  auto it = std::sregex_iterator(text.begin(), text.end(), fma), end = std::sregex_iterator();
  if (it == end) return 0;
  size_t first = static_cast<size_t>(it->position()), last = first;
  for (; it != end; ++it) last = static_cast<size_t>(it->position());
  return vector_reloads(text.substr(first, last - first), c);
}

// True when a kernel of `a` upcasts a range by `amount` (a register tile of that many rows).
bool has_upcast(const Artifacts& a, int64_t amount) {
  for (const OptimizedKernel& k : a.optimized)
    for (const Opt& o : k.opts)
      if (o.kind == OptKind::Upcast && o.amount == amount) return true;
  return false;
}

TEST(CodegenShape, TheTargetDescriptionNamesTheCpusFacts) {
  const TargetInfo& avx2 = target(kCpus[0]);
  const TargetInfo& avx512 = target(kCpus[1]);
  EXPECT_EQ(avx2.vector_bytes(), 32);
  EXPECT_EQ(avx2.vector_registers(), 16);
  EXPECT_EQ(avx512.vector_bytes(), 64);
  EXPECT_EQ(avx512.vector_registers(), 32);
  EXPECT_TRUE(avx2.masked_vectors() && avx512.masked_vectors());
  EXPECT_EQ(avx2.dot_product(), DotProduct::None);
  EXPECT_EQ(avx512.dot_product(), DotProduct::Avx512Vnni);
  EXPECT_TRUE(avx512.native_bf16());
  // Per-core L2 by family (what the streaming order plans for), else a floor for the ISA level.
  EXPECT_EQ(avx2.l2_bytes(), 512 << 10);
  EXPECT_EQ(avx512.l2_bytes(), 2048 << 10);
  EXPECT_EQ(TargetInfo::create({"x86_64-linux-gnu", "x86-64-v4"}).l2_bytes(), 1024 << 10);
  EXPECT_EQ(TargetInfo::create({"x86_64-linux-gnu", "x86-64-v2"}).l2_bytes(), 256 << 10);
  TargetInfo arm = TargetInfo::create({"aarch64-linux-gnu", "neoverse-n1"});
  EXPECT_EQ(arm.dot_product(), DotProduct::ArmDot);
  EXPECT_FALSE(arm.masked_vectors());
  // The package's required features are the checkable ones (schema/kiln_abi.h).
  std::vector<std::string> req = avx512.required_features();
  EXPECT_NE(std::find(req.begin(), req.end(), "avx512f"), req.end());
  EXPECT_EQ(std::find(req.begin(), req.end(), "64bit"), req.end());
}

// A contraction's register tile fills full-width vectors of the target: FMAs on ymm for AVX2, on
// zmm for AVX-512, and never wider than the target has.
TEST(CodegenShape, RegisterTilesUseTheTargetsVectors) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor a = Tensor::input(g, "a", dtypes::float32, {64, 96});
    Tensor b = Tensor::input(g, "b", dtypes::float32, {96, 128});
    g.add_output("y", matmul(a, b).uop());
    std::string s = assembly_for(g, c).assembly;
    EXPECT_GE(vector_fmas(s, c), 8) << c.name;
    if (c.vector_bytes == 32) {
      EXPECT_EQ(count_matches(s, "%zmm"), 0) << c.name;
    }
  }
}

// A weight's panels are one vector wide (16 channels on AVX-512, 8 on AVX2), so each row of a
// panel is one full-width load; AVX-512 code reading panels of 8 built each zmm from two ymm
// halves (vinsertf64x4, a shuffle-port uop beside every other FMA pair).
TEST(CodegenShape, WeightPanelsAreOneVectorWide) {
  auto inserts = [](const Cpu& c, int64_t panel) {
    Graph g;
    g.lowering().vector_bytes = 4 * panel;  // panels of `panel` float32 lanes
    Tensor a = Tensor::input(g, "a", dtypes::float32, {64, 256});
    g.add_output("y", matmul(a, ramp_weight(g, "w", {256, 512}, 0.01, 7)).uop());
    std::string s = assembly_for(g, c).assembly;
    EXPECT_GE(vector_fmas(s, c), 16) << c.name;
    return count_matches(s, "vinsertf(128|32x4|64x4)");
  };
  for (const Cpu& c : kCpus) EXPECT_EQ(inserts(c, weight_panel_for(c.vector_bytes)), 0) << c.name;
  EXPECT_EQ(weight_panel_for(64), 16);
  EXPECT_EQ(weight_panel_for(32), 8);
  EXPECT_GT(inserts(kCpus[1], 8), 0);  // what panels of 8 cost on AVX-512
}

// Lane axes that take no good divisor (a 114-wide padded row, a depthwise convolution's 14-wide
// map) are padded to a whole vector; the last group's lanes are masked: stores gated by a vector
// of lane gates in the IR, masked moves in the assembly (vmaskmovps on AVX2, a mask register on
// AVX-512). The AVX-512 tile's 16 lanes cover the 14-wide map in one group, so only the padded
// row's store is masked there.
TEST(CodegenShape, PaddedLaneAxesMaskTheirLastGroup) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 14, 14});
    Tensor dw = Tensor::input(g, "dw", dtypes::float32, {8, 1, 3, 3});
    g.add_output("depthwise", conv(x, dw, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 8}).uop());
    Tensor big = Tensor::input(g, "big", dtypes::float32, {3, 112, 112});
    g.add_output("padded", big.pad({{0, 0}, {1, 1}, {1, 1}}, 0.0).exp().uop());
    Artifacts a = assembly_for(g, c);
    int masked_stores = 0;
    for (const LoweredKernel& k : a.kernels)
      for (const UOp* u : k.lowered->toposort())
        if (u->op == Op::STORE && u->src[0]->src[1]->op == Op::WHERE &&
            u->src[0]->src[1]->src[0]->dtype.lanes > 1)
          ++masked_stores;
    EXPECT_GE(masked_stores, c.vector_bytes == 32 ? 2 : 1) << c.name;
    if (c.vector_bytes == 32) {
      EXPECT_GE(count_matches(a.assembly, "vmaskmovps"), 2) << c.name;
    } else {
      EXPECT_GE(count_matches(a.assembly, "vmovups[^\n]*\\{%k[1-7]\\}"), 1) << c.name;
    }
  }
}

// A depthwise convolution's input varies along every output axis: its tile is the W vector (and
// a second row as an independent accumulator where the lanes leave room). With stride 2 each
// row's input is contiguous loads of twice the lanes and shuffles that keep every other element,
// never vectors assembled lane by lane (before, a 56x56 stride-2 layer did, with 32 rows: 1300
// vinsertps and 1 ms, now 0.17 ms). On AVX2 the 56-wide row is 7 vectors, whose weight splats
// LLVM builds with inserts (outside the window loop) for both strides alike.
TEST(CodegenShape, DepthwiseRowsAreVectorLoadsNotLaneInserts) {
  for (const Cpu& c : kCpus) {
    int inserts[3] = {0, 0, 0};
    for (int64_t stride : {1, 2}) {
      Graph g;
      Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 28, 56 * stride});
      Tensor dw = ramp_weight(g, "dw", {16, 1, 3, 3}, 0.1, 5);
      g.add_output("y",
                   conv(x, dw, nullptr, {{stride, stride}, {{1, 1}, {1, 1}}, {1, 1}, 16}).uop());
      Artifacts a = assembly_for(g, c);
      std::string label = std::string(c.name) + " stride " + std::to_string(stride);
      inserts[stride] = count_matches(a.assembly, "vinsertps|vpinsrd");
      EXPECT_GE(vector_fmas(a.assembly, c), 9) << label;
      if (stride == 2) {
        EXPECT_GE(count_matches(a.assembly, "vpermt2ps|vpermps|vshufps|vpermilps|vunpck"), 2)
            << label;
      }
    }
    EXPECT_LE(inserts[2], inserts[1]) << c.name;
    if (c.vector_bytes == 64) {
      EXPECT_LE(inserts[2], 4) << c.name;
    }
  }
}

// A 5x5 depthwise window over a 7x7 map: the W axis takes 8 lanes (one masked) rather than 7,
// and the window's 5 unrolled copies accumulate in 4 whole 8-lane slices, not one 40-lane
// vector: LLVM split both odd widths into pieces assembled with lane inserts (the layer ran 3x
// slower; efficientnet_b0's last stage has three of them).
TEST(CodegenShape, SmallMapWindowsAccumulateInWholeVectors) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 7, 7});
    g.add_output("y", conv(x, ramp_weight(g, "w", {32, 1, 5, 5}, 0.1, 7), nullptr,
                           {{1, 1}, {{2, 2}, {2, 2}}, {1, 1}, 32})
                          .uop());
    Artifacts a = assembly_for(g, c);
    EXPECT_LE(count_matches(a.assembly, "vinsertps"), 16) << c.name;  // was 60-67
    EXPECT_GE(count_matches(a.assembly, "vfmadd[0-9]+ps|vmulps"), 5) << c.name;
  }
}

// A stem convolution (3 input channels, 27 products per output; a 31-wide output, so output
// channels are the better lane axis) takes output channels as lanes: its NCHW output is not
// contiguous along them, so the tile is stored along its positions axis
// instead, 8 or 16 positions per store after a shuffle, not one lane at a time (squeezenet's
// stem ran 10% faster, resnet18's 5%).
TEST(CodegenShape, AStemConvolutionStoresWholeVectorsAlongItsPositions) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 3, 63, 63});
    g.add_output("y", conv(x, ramp_weight(g, "w", {64, 3, 3, 3}, 0.1, 7), nullptr,
                           {{2, 2}, {{0, 0}, {0, 0}}, {1, 1}, 1})
                          .uop());
    Artifacts a = assembly_for(g, c);
    int scalar_stores =
        count_matches(a.assembly, R"(vextractps\s+\$[0-9]+, %xmm[0-9]+, -?[0-9]*\()");
    EXPECT_LE(scalar_stores, 8) << c.name;  // was 48 (AVX2), 192 (AVX-512)
  }
}

// A Winograd output transform's lanes are output channels, planes apart in the NCHW output: its
// tile takes rows of 4 positions along W, each stored as one 16-byte vector after a shuffle.
// With one position per tile every lane was a scalar store (squeezenet's 55x55 transform: 0.072
// -> 0.045 ms at 1 thread on an AMD EPYC). The transform's last pass is k0, the kernel that
// stores y.
std::string kernel_body(const std::string& assembly, const std::string& name);

TEST(CodegenShape, AWinogradOutputTransformStoresRowsOfPositions) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 55, 55});
    g.add_output("y", conv(x, ramp_weight(g, "w", {64, 16, 3, 3}, 0.01, 7), nullptr,
                           {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1})
                          .uop());
    std::string k0 = kernel_body(assembly_for(g, c).assembly, "k0");
    ASSERT_FALSE(k0.empty()) << c.name;
    int scalar_stores =
        count_matches(k0, R"((vextractps\s+\$[0-9]+,|vmovss)\s+%xmm[0-9]+, -?[0-9]*\(%r)");
    // A row: a 16-byte store, from an xmm register or straight out of a wider one.
    int row_stores = count_matches(
        k0,
        R"((vmovups\s+%xmm[0-9]+|vextractf(32x4|128)\s+\$[0-9]+, %[yz]mm[0-9]+), -?[0-9]*\(%r)");
    EXPECT_LE(scalar_stores, 12) << c.name;  // was 16 (znver3), 64 (sapphirerapids)
    EXPECT_GE(row_stores, 14) << c.name;     // was 4, 6
  }
}

// Each kernel's assembly by its name (k0, k1, ...), from its label to the next one.
std::vector<std::pair<std::string, std::string>> kernel_bodies(const std::string& assembly) {
  std::regex label("\n(k[0-9]+):\n");
  std::vector<std::pair<size_t, std::string>> starts;
  for (auto it = std::sregex_iterator(assembly.begin(), assembly.end(), label);
       it != std::sregex_iterator(); ++it)
    starts.push_back({static_cast<size_t>(it->position()), (*it)[1]});
  std::vector<std::pair<std::string, std::string>> bodies;
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t end = i + 1 < starts.size() ? starts[i + 1].first : assembly.size();
    bodies.push_back({starts[i].second, assembly.substr(starts[i].first, end - starts[i].first)});
  }
  return bodies;
}

// The assembly of kernel `name` (empty if there is none).
std::string kernel_body(const std::string& assembly, const std::string& name) {
  for (const auto& [n, body] : kernel_bodies(assembly))
    if (n == name) return body;
  return "";
}

const char* kShuffles = "\\sv(permt2ps|unpck[lh]ps|shufps|blendps|shuff|perm)";

// A stem (x: 1 x 3 x 63 x 63, 64 channels, stride 2) and its 3x3 stride-2 max pool.
Tensor stem_and_pool(Graph& g) {
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 3, 63, 63});
  Tensor stem = relu(conv(x, ramp_weight(g, "w", {64, 3, 3, 3}, 0.1, 7), nullptr,
                          {{2, 2}, {{0, 0}, {0, 0}}, {1, 1}, 1}));
  PoolParams pool;
  pool.kernel = {3, 3};
  pool.stride = {2, 2};
  return max_pool(stem, pool);
}

// A max pool over a stem convolution's output reads the map channels-last: the convolution
// (channels its lanes) stores whole vectors of channels, no transpose, and the pool's lanes are
// channels, whole-vector loads, its rows of 8 positions transposed into the NCHW output. In
// NCHW the stem transposed each tile of 8 positions x 32 channels and the stride-2 pool
// shuffled every other element out of pairs of vectors (squeezenet on an AMD EPYC: stem 0.42
// -> 0.30 ms, pool 0.16 -> 0.11).
TEST(CodegenShape, APoolOverAConvolutionReadsItChannelsLast) {
  for (const Cpu& c : kCpus) {
    Graph g;
    g.add_output("y", stem_and_pool(g).uop());
    Artifacts a = assembly_for(g, c);
    // The stem is the kernel with FMAs; the pool, writing the NCHW output, transposes its rows.
    int stems = 0, pools = 0;
    for (const auto& [name, body] : kernel_bodies(a.assembly)) {
      if (count_matches(body, "vfmadd") > 0) {
        ++stems;
        EXPECT_EQ(count_matches(body, kShuffles), 0) << c.name << " " << name;
      } else if (count_matches(body, "vmaxps") > 0) {
        ++pools;
      }
    }
    EXPECT_EQ(stems, 1) << c.name;
    EXPECT_EQ(pools, 1) << c.name;
    EXPECT_EQ(kernel_bodies(a.assembly).size(), 2u) << c.name;  // the pool stores the output
  }
}

// A stride-2 depthwise layer over a 1x1 expansion (mobilenet_v2's downsampling) reads its padded
// map channels-last: the expansion (channels its lanes) stores whole channel vectors into the
// map's interior and the depthwise layer's lanes are channels, whole-vector loads. In NCHW the
// depthwise layer's lanes were output columns, and its stride-2 window took two shuffles per
// vector per tap (mobilenet_v2's at 112x112: 0.321 -> 0.155 ms as AVX2 code on an AMD EPYC).
// A padded pool reads its map so too (resnet's stem and pool: the stem 1.27 -> 1.13 ms).
TEST(CodegenShape, AStridedDepthwiseLayerReadsItsPaddedMapChannelsLast) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 56, 56});
    Tensor e = relu(conv(x, ramp_weight(g, "w", {96, 16, 1, 1}, 0.1, 7), nullptr,
                         {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}));
    Tensor d = conv(e, ramp_weight(g, "wd", {96, 1, 3, 3}, 0.1, 5), nullptr,
                    {{2, 2}, {{1, 1}, {1, 1}}, {1, 1}, 96});
    g.add_output("y", d.uop());
    Artifacts a = assembly_for(g, c);
    // The expansion stores with no shuffle; the depthwise layer's shuffles transpose its tiles
    // of positions x channels into its NCHW output rows, fewer than its FMAs. (In NCHW: 62
    // shuffles beside 36 FMAs as AVX2 code, and on AVX-512 the expansion transposed its tiles
    // into the padded map's rows, 148 shuffles beside 64 FMAs.)
    int convolutions = 0, unshuffled = 0;
    for (const auto& [name, body] : kernel_bodies(a.assembly)) {
      int fmas = count_matches(body, "vfmadd"), shuffles = count_matches(body, kShuffles);
      if (fmas == 0) continue;  // the border fills
      ++convolutions;
      unshuffled += shuffles == 0;
      EXPECT_LT(shuffles, fmas) << c.name << " " << name;
    }
    EXPECT_EQ(convolutions, 2) << c.name;
    EXPECT_EQ(unshuffled, 1) << c.name;
    // The expansion, the padded map's two border fills and the depthwise layer: no copy.
    EXPECT_EQ(kernel_bodies(a.assembly).size(), 4u) << c.name;
  }
}

// A 1x1 layer over that pool (squeezenet's first squeeze layer) reads the pooled map
// channels-last too: the pool, its lanes the channels, then stores whole vectors where the
// NCHW map took a transpose per row of 8 positions (on an AMD EPYC the pool 0.165 -> 0.063 ms,
// the 1x1 layer 0.066 -> 0.043).
TEST(CodegenShape, APointwiseLayerOverAChannelsLastPoolReadsItChannelsLast) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor squeeze = relu(conv(stem_and_pool(g), ramp_weight(g, "s", {16, 64, 1, 1}, 0.1, 5),
                               nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}));
    g.add_output("y", squeeze.uop());
    Artifacts a = assembly_for(g, c);
    int pools = 0;
    for (const auto& [name, body] : kernel_bodies(a.assembly)) {
      if (count_matches(body, "vfmadd") > 0 || count_matches(body, "vmaxps") == 0) continue;
      ++pools;
      EXPECT_EQ(count_matches(body, kShuffles), 0) << c.name << " " << name;
    }
    EXPECT_EQ(pools, 1) << c.name;
    // The stem, the pool and the 1x1 layer: no copy between the pool and the layer.
    EXPECT_EQ(kernel_bodies(a.assembly).size(), 3u) << c.name;
  }
}

// A 1x1 layer's NCHW output with channels as the lanes (1000 classes in vector pairs, 169
// positions in groups, the last masked) is stored a row of positions per channel, each row's
// gate computed along the positions alone. Picking a row's lanes, a vector pair apart, out of
// the tile's gate took mask-register shifts, ors and ands per lane on AVX-512 (448 in the
// kernel: 20% of squeezenet's classifier, 1.13 -> 0.97 ms on an AMD EPYC) and byte extracts and
// inserts on AVX2 (168).
TEST(CodegenShape, AMaskedRowOfAnNchwOutputIsGatedAlongItsPositionsAlone) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 512, 13, 13});
    g.add_output("y", conv(x, ramp_weight(g, "w", {1000, 512, 1, 1}, 0.01, 7), nullptr,
                           {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1})
                          .uop());
    Artifacts a = assembly_for(g, c);
    bool avx512 = c.vector_bytes == 64;
    // The last group's rows are masked stores.
    EXPECT_GT(count_matches(a.assembly, avx512 ? "\\{%k[1-7]\\}" : "vmaskmovps"), 0) << c.name;
    int picks =
        count_matches(a.assembly, avx512 ? "\\sk(shift|or|and)[bwdq]\\s" : "vp(extr|insr)b");
    EXPECT_LE(picks, 16) << c.name;
  }
}

// A direct 3x3 layer on a 55-wide map: its tile's rows of positions are padded to whole
// vectors, the last group's loads masked, each load branching between a plain and a masked
// access on a condition fixed for the whole reduction. LLVM copies the reduction per case
// (module_builder.cc: allow_unswitching_large_loops): the loop of the tile with plain loads is
// one block, its accumulators and operands in registers. With the branches inside it the
// window's 18 input vectors were loaded up front and 75 vectors reloaded from the stack
// (squeezenet's 55x55 layer: 0.79 -> 0.31 ms at 1 thread on an AMD EPYC).
TEST(CodegenShape, AMaskedRowsReductionKeepsItsTileInRegisters) {
  for (const Cpu& c : kCpus) {
    Graph g;
    g.lowering().winograd = false;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 16, 55, 55});
    g.add_output("y", relu(conv(x, ramp_weight(g, "w", {64, 16, 3, 3}, 0.01, 7), nullptr,
                                {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1}))
                          .uop());
    Artifacts a = assembly_for(g, c);
    EXPECT_GE(vector_fmas(a.assembly, c), 64) << c.name;
    int reloads = vector_reloads(a.assembly, c);
    EXPECT_LE(reloads, 8) << c.name;  // was 66 on sapphirerapids (0 on znver3 either way)
  }
}

// A 1x1 layer at 7x7 on AVX-512 takes a tile of 7 positions x 32 channels: a <224 x float>
// accumulator in the IR, which LLVM's legalizer would widen to 256 lanes and split, turning the
// broadcasts into lane inserts and spilling the tile (296 vinsertps and 834 stack accesses, 8.6x
// the time). Split into native vectors first (native_pieces.h), it is 14 accumulators, each FMA
// beside a broadcast, nothing reloaded from the stack. AVX2 takes 5 positions x 16 channels (10
// accumulators, 13 of its 16 registers with the weight vectors and a broadcast): its reduction
// reloads nothing either (the epilogue's transposes to 5-wide rows may).
// The artifacts of a 1x1 layer of `in` -> `out` channels on a side x side map for CPU c.
Artifacts one_by_one_layer(const Cpu& c, int64_t in, int64_t out, int64_t side) {
  Graph g;
  g.lowering().vector_bytes = c.vector_bytes;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, in, side, side});
  Tensor w = ramp_weight(g, "w", {out, in, 1, 1}, 0.01, 7);
  g.add_output("y", conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
  return assembly_for(g, c);
}

TEST(CodegenShape, AnOddRegisterTileIsWholeNativeVectors) {
  for (const Cpu& c : kCpus) {
    Artifacts a = one_by_one_layer(c, 320, 1280, 7);
    EXPECT_EQ(has_upcast(a, 7), c.vector_bytes == 64) << c.name;
    EXPECT_EQ(has_upcast(a, 5), c.vector_bytes == 32) << c.name;
    // 14 (AVX2: 10) accumulators, the reduction unrolled by 4.
    EXPECT_GE(vector_fmas(a.assembly, c), c.vector_bytes == 64 ? 56 : 40) << c.name;
    EXPECT_LE(count_matches(a.assembly, "vinsertps"), 8) << c.name;
    EXPECT_EQ(reloads_among_fmas(a.assembly, c), 0) << c.name;
    if (c.vector_bytes == 64) {
      EXPECT_EQ(vector_reloads(a.assembly, c), 0) << c.name;
    }
  }
}

// A 1x1 layer at 14x14 (96 -> 576 channels) on AVX2 takes 6 positions x 16 channels, 12
// accumulators: with the 2 weight vectors and a broadcast, 15 of its 16 registers. The
// reduction (unrolled by 4: 48 FMAs) keeps them all there, nothing reloaded between the FMAs.
// AVX-512 keeps its power-of-two tile.
TEST(CodegenShape, AnAvx2TileOfSixPositionsStaysInRegisters) {
  for (const Cpu& c : kCpus) {
    Artifacts a = one_by_one_layer(c, 96, 576, 14);
    EXPECT_EQ(has_upcast(a, 6), c.vector_bytes == 32) << c.name;
    if (c.vector_bytes != 32) continue;
    EXPECT_GE(vector_fmas(a.assembly, c), 48) << c.name;
    EXPECT_EQ(reloads_among_fmas(a.assembly, c), 0) << c.name;
  }
}

// A 3x3 layer on a 27-wide map takes 9 positions x 32 channels on AVX-512, 18 accumulators (one
// position over the budget, AnOddRowOnePositionOverTheBudgetTakesAnExactTile): split into
// native vectors, they stay in registers beside the weights and the broadcasts, the window's 9
// taps x 18 FMAs per input channel: the reduction reloads nothing from the stack (the epilogue
// reloads its bias vectors, 4 loads per tile; unsplit, the tile spilled in every step). AVX2
// keeps a power-of-two tile.
TEST(CodegenShape, ANinePositionTileStaysInRegisters) {
  for (const Cpu& c : kCpus) {
    Graph g;
    g.lowering().vector_bytes = c.vector_bytes;
    g.lowering().winograd = false;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 27, 27});
    Tensor w = ramp_weight(g, "w", {128, 32, 3, 3}, 0.01, 7);
    g.add_output("y", relu(conv(x, w, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1})).uop());
    Artifacts a = assembly_for(g, c);
    EXPECT_EQ(has_upcast(a, 9), c.vector_bytes == 64) << c.name;
    if (c.vector_bytes != 64) continue;
    EXPECT_GE(vector_fmas(a.assembly, c), 162) << c.name;
    EXPECT_LE(count_matches(a.assembly, "vinsertps"), 8) << c.name;
    EXPECT_LE(vector_reloads(a.assembly, c), 4) << c.name;
  }
}

// The assembly of SiLU over a [4, 64, 64] input for CPU c.
std::string silu_assembly(const Cpu& c) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {4, 64, 64});
  g.add_output("y", silu(x).uop());
  return assembly_for(g, c).assembly;
}

// exp (here inside SiLU) takes its exponent k from the low bits of x log2(e) + 1.5 * 2^23, the
// sum that rounds it: no conversion and no clamps (a vector llvm.fptosi.sat had been scalarized
// by LLVM's x86 backend into one vcvttss2si per lane, and the clamped vector conversion cost 6
// of a SiLU vector's ~45 instructions). AVX2 scales by 2^k built in the exponent field; AVX-512
// scales by the rounded float itself with one vscalefps (instead of eight instructions: SiLU
// after a 16 -> 96 convolution at 112x112, 0.235 -> 0.21 ms on an AMD EPYC), and builds no 2^k.
TEST(CodegenShape, ExpReadsItsExponentFromTheRoundingSum) {
  for (const Cpu& c : kCpus) {
    std::string asm_text = silu_assembly(c);
    bool avx512 = c.vector_bytes == 64;
    EXPECT_EQ(count_matches(asm_text, "cvttss2si"), 0) << c.name;
    EXPECT_EQ(count_matches(asm_text, "vcvttps2dq"), 0) << c.name;
    // 2^k's exponent field
    EXPECT_EQ(count_matches(asm_text, "vpslld\\s+\\$23") > 0, !avx512) << c.name;
    EXPECT_EQ(count_matches(asm_text, "vscalefps\\s+%zmm") > 0, avx512) << c.name;
  }
}

// Sigmoid's exp(-|x|) has an argument of at most 0, clamped at -104 (one vmaxps, NaN kept), so
// the result needs no select, and the fraction is picked by x's sign bit, which AVX2's vblendvps
// reads itself (AVX-512: one vpmovd2m): a SiLU vector has no compare, where it had three
// (overflow, underflow and the sign; SiLU after a 16 -> 96 convolution at 112x112 ran 17% slower
// on AVX-512). AVX2 scales by 2^(k + 64), built from the exponent in two integer instructions,
// with the polynomial's coefficients carrying the 2^-64, where ldexp split k into two scales
// (nine instructions; with the compares, AVX2's efficientnet_b0 ran 5% slower).
TEST(CodegenShape, ASigmoidHasNoCompareAndOneScale) {
  for (const Cpu& c : kCpus) {
    std::string asm_text = silu_assembly(c);
    bool avx512 = c.vector_bytes == 64;
    int vectors = avx512 ? count_matches(asm_text, "vscalefps\\s+%zmm")
                         : count_matches(asm_text, "vpslld\\s+\\$23");
    EXPECT_GT(vectors, 0) << c.name;
    EXPECT_EQ(count_matches(asm_text, "vcmp[a-z]*ps\\s"), 0) << c.name;
    EXPECT_GE(count_matches(asm_text, std::string("vmaxps\\s+[^\\n]*") + c.vector_register),
              vectors)
        << c.name;
    // ldexp's split exponent (an arithmetic shift by one) and its second product are gone.
    EXPECT_EQ(count_matches(asm_text, "vpsrad"), 0) << c.name;
    if (!avx512) {
      EXPECT_EQ(count_matches(asm_text, "vblendvps"), vectors) << c.name;
      EXPECT_EQ(count_matches(asm_text, "vdivps"), vectors) << c.name;
    }
  }
}

// Sigmoid's one division is AVX-512's reciprocal estimate and a Newton step in two FMAs (a zmm
// division holds an FMA port for ~10 cycles of a SiLU's ~20); AVX2, whose estimate has 12 bits,
// divides.
TEST(CodegenShape, SigmoidDividesByAnEstimateOnlyWhereItHas14Bits) {
  for (const Cpu& c : kCpus) {
    std::string asm_text = silu_assembly(c);
    bool avx512 = c.vector_bytes == 64;
    EXPECT_EQ(count_matches(asm_text, "vrcp14ps\\s+%zmm") > 0, avx512) << c.name;
    EXPECT_EQ(count_matches(asm_text, "vdivps") > 0, !avx512) << c.name;
  }
}

// A 64x256 uint8 activation times a constant 256x128 int8 weight, compiled to assembly for a CPU.
Artifacts int8_matmul_for(Graph& g, const char* triple, const char* cpu) {
  Tensor a = Tensor::input(g, "a", dtypes::uint8, {64, 256});
  NDArray w(dtypes::int8, {256, 128});
  for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = static_cast<uint8_t>(i * 37 % 251);
  g.add_output("y", matmul_u8s8(a, Tensor::weight(g, "w", std::move(w))).uop());
  CompileOptions o;
  o.emit = Emit::Assembly;
  TargetInfo t = TargetInfo::create({triple, cpu});
  o.target = &t;
  return compile(g, o);
}

// A uint8 x int8 matmul against a constant weight (a quantized layer) is an integer dot-product
// kernel: vpdpbusd on the register width the CPU has it for (zmm with AVX-512 VNNI, ymm with
// AVX-VNNI), and on a CPU with neither, plain integer code (pmaddwd) that computes the same
// integers. The weight stays int8 in the package (one byte per element, not a widened copy).
TEST(CodegenShape, IntegerMatmulsAreDotProductInstructions) {
  struct DotCpu {
    const char* name;
    const char* instruction;  // regex of the inner loop's instruction
  };
  const DotCpu cpus[] = {{"sapphirerapids", "vpdpbusd\\s+[^\n]*%zmm"},
                         {"alderlake", "vpdpbusd\\s+[^\n]*%ymm"},
                         {"znver3", "vpmaddwd"}};
  for (const DotCpu& c : cpus) {
    Graph g;
    Artifacts art = int8_matmul_for(g, "x86_64-linux-gnu", c.name);
    EXPECT_GE(count_matches(art.assembly, c.instruction), 8) << c.name;
    if (std::string(c.name) == "znver3") {
      EXPECT_EQ(count_matches(art.assembly, "vpdpbusd"), 0) << c.name;
    }
    int64_t weight_bytes = 0;
    for (const PlanBuffer& b : art.plan.buffers)
      if (b.kind == BufferKind::Weight) weight_bytes += b.bytes();
    EXPECT_EQ(weight_bytes, 256 * 128) << c.name;
  }
  // AArch64 with dotprod (cortex-a76): sdot (the uint8 operand made signed, its offset added
  // back with a second sdot); without (generic): none.
  for (const char* cpu : {"cortex-a76", "generic"}) {
    Graph g;
    int sdots = count_matches(int8_matmul_for(g, "aarch64-linux-gnu", cpu).assembly, "\\bsdot\\s");
    if (std::string(cpu) == "generic") {
      EXPECT_EQ(sdots, 0) << cpu;
    } else {
      EXPECT_GE(sdots, 8) << cpu;
    }
  }
}

// An integer convolution (a QDQ model's 3x3 layer) reads its input channel-blocked, four
// channels per 32-bit lane, and its packed int8 weight as 64-byte vectors: one vpdpbusd per
// accumulator per four channels, on zmm (AVX-512 VNNI) or ymm (AVX-VNNI).
TEST(CodegenShape, IntegerConvolutionsAreDotProductInstructions) {
  const std::pair<const char*, const char*> cpus[] = {{"sapphirerapids", "%zmm"},
                                                      {"alderlake", "%ymm"}};
  for (auto [cpu, reg] : cpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::uint8, {1, 64, 28, 28});
    NDArray w(dtypes::int8, {64, 64, 3, 3});
    for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = static_cast<uint8_t>(i * 29 % 253);
    ConvParams p{{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1};
    g.add_output("y", conv_u8s8(x, 3, Tensor::weight(g, "w", std::move(w)), p).uop());
    CompileOptions o;
    o.emit = Emit::Assembly;
    TargetInfo t = TargetInfo::create({"x86_64-linux-gnu", cpu});
    o.target = &t;
    Artifacts art = compile(g, o);
    EXPECT_GE(count_matches(art.assembly, std::string("vpdpbusd\\s+[^\n]*") + reg), 16) << cpu;
    EXPECT_EQ(count_matches(art.assembly, "vpmulld"), 0) << cpu;
    // The channel-blocked copy stores 16 positions x 4 channels at once where byte masks are
    // instructions (its rows of 30 positions padded to 32): 4-byte stores took 0.05 ms per layer.
    int64_t copy_lanes = 0;
    for (const OptimizedKernel& k : art.optimized) {
      if (is_contraction_kernel(k.ast)) continue;
      int64_t lanes = 1;
      for (const Opt& op : k.opts)
        if (op.kind == OptKind::Upcast) lanes *= op.amount;
      copy_lanes = std::max(copy_lanes, lanes);
    }
    EXPECT_EQ(copy_lanes, std::string(cpu) == "sapphirerapids" ? 64 : 4) << cpu;
  }
}

// A float converted to uint8 or int8 (QuantizeLinear's last step, every quantized layer's
// store) is vector code: clamped, converted to int32 and narrowed, never a scalar conversion per
// lane (LLVM scalarizes vector fptoui.sat: 264 vcvttss2si in one quantized conv's epilogue).
TEST(CodegenShape, ANarrowingFloatCastIsVectorCode) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {64, 256});
    g.add_output("u8", x.round().cast(dtypes::uint8).uop());
    g.add_output("i8", x.mul(3.0).cast(dtypes::int8).uop());
    std::string s = assembly_for(g, c).assembly;
    EXPECT_EQ(count_matches(s, "vcvttss2si"), 0) << c.name;
    EXPECT_GE(count_matches(s, "vcvttps2dq"), 2) << c.name;
  }
}

// A row of bytes that no good vector width divides (a uint8 map padded to 114, as a quantized
// model's MaxPool input) is padded to whole vectors with the last one masked where byte masks are
// instructions (AVX-512BW: vmovdqu8 with a mask register); before, it took 2 lanes (0.34 ms for
// an 832 KB copy, now 0.08). Without byte masks (AVX2) the row keeps a divisor.
TEST(CodegenShape, AByteRowIsMaskedWhereByteMasksAreInstructions) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::uint8, {8, 112, 112});
    g.add_output("padded", x.pad({{0, 0}, {1, 1}, {1, 1}}, 0.0).uop());
    Artifacts a = assembly_for(g, c);
    int64_t lanes = 0;
    for (const OptimizedKernel& k : a.optimized)
      for (const Opt& o : k.opts)
        if (o.kind == OptKind::Upcast) lanes = std::max(lanes, o.amount);
    if (c.vector_bytes == 64) {
      EXPECT_EQ(lanes, 64) << c.name;
      EXPECT_GE(count_matches(a.assembly, "vmovdqu8[^\\n]*\\{%k[1-7]\\}"), 1) << c.name;
    } else {
      EXPECT_EQ(lanes, 2) << c.name;
    }
  }
}

// The assembly of a depthwise layer over a 32-channel 14x14 map with a k x k window, padded to
// keep the size (the input is copied into its padded buffer first: it is a graph input).
std::string depthwise_14x14_assembly(const Cpu& c, int64_t k) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 14, 14});
  Tensor dw = ramp_weight(g, "dw", {32, 1, k, k}, 0.01, 17);
  int64_t p = k / 2;
  g.add_output("y", conv(x, dw, nullptr, {{1, 1}, {{p, p}, {p, p}}, {1, 1}, 32}).uop());
  return assembly_for(g, c).assembly;
}

// Masked float vector loads: vmaskmovps from memory on AVX2, a zmm load under a mask register on
// AVX-512.
int masked_float_loads(const std::string& s, const Cpu& c) {
  return c.vector_bytes == 32 ? count_matches(s, "vmaskmovps\\s+[^\\n]*\\(%")
                              : count_matches(s, "vmovups\\s+[^\\n]*\\), %zmm[0-9]+ \\{%k[1-7]\\}");
}

// A depthwise layer over a 14x14 map with a 5x5 window (efficientnet's stage 5): its 14-wide
// rows take 16 lanes (AVX-512) or two groups of 8 (AVX2) whose last lanes are padding. Each row
// of the window is one masked vector load — the padding lanes have no address, and the mask
// covers them — not 14 scalar loads assembled lane by lane (which ran at 5 GMAC/s: 0.61 ms per
// layer, now 0.1).
TEST(CodegenShape, APaddedRowOfADepthwiseWindowIsOneMaskedLoad) {
  for (const Cpu& c : kCpus) {
    std::string s = depthwise_14x14_assembly(c, 5);
    EXPECT_EQ(count_matches(s, "vinsertps"), 0) << c.name;
    EXPECT_GE(masked_float_loads(s, c), 1) << c.name;
  }
}

// The padded copy of a 14x14 map for a 3x3 depthwise window (mobilenet_v2's 14x14 and 7x7
// stages): each 16-wide row of the copy reads the map's row shifted by one, so its first lane
// (the left border) and its last (the right one) have no address. The lanes between are one
// masked vector load from one lane before the row: the copies of the 14-wide maps were assembled
// lane by lane, vinsertps and broadcasts under single-lane masks, and ran 3x slower (0.021 ->
// 0.0065 ms each).
TEST(CodegenShape, APaddedCopyOfANarrowMapLoadsItsRowsAsMaskedVectors) {
  for (const Cpu& c : kCpus) {
    std::string s = depthwise_14x14_assembly(c, 3);
    EXPECT_EQ(count_matches(s, "vinsertps"), 0) << c.name;
    EXPECT_EQ(count_matches(s, "vbroadcastss\\s+[^\\n]*\\{%k"), 0) << c.name;
    EXPECT_GE(masked_float_loads(s, c), 2) << c.name;
  }
}

// A stride-2 pooling row of 55 outputs in whole vectors (squeezenet's first max pool): each
// lane's gate is the row bound, so the lanes were loaded one by one with a select per address;
// they are masked contiguous loads of the row's span and a shuffle that picks every second.
TEST(CodegenShape, AStrideTwoRowPaddedToWholeVectorsIsMaskedLoadsAndAShuffle) {
  for (const Cpu& c : kCpus) {
    Graph g;
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 8, 111, 111});
    g.add_output("y", max_pool(x, {{3, 3}, {2, 2}, {}, {}, true, false}).uop());
    std::string s = assembly_for(g, c).assembly;
    EXPECT_EQ(count_matches(s, "vinsertps"), 0) << c.name;
    EXPECT_EQ(count_matches(s, "vmovss"), 0) << c.name;
    EXPECT_GE(masked_float_loads(s, c), 2) << c.name;
    if (c.vector_bytes == 64) {
      EXPECT_GE(count_matches(s, "vpermt2ps|vpermi2ps"), 1) << c.name;
    }
  }
}

// The optimization levels mean different code: 0 scalar loops in one task, 1 vectors and tasks
// without register tiles or unrolls, 2 register tiles with the reduction unrolled.
TEST(CodegenShape, OptLevelsDiffer) {
  for (const Cpu& c : kCpus) {
    std::vector<std::vector<Opt>> opts;
    for (OptLevel level : {OptLevel::None, OptLevel::Vectors, OptLevel::Tiles}) {
      Graph g;
      Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 32, 28, 28});
      Tensor w = Tensor::input(g, "w", dtypes::float32, {64, 32, 3, 3});
      g.add_output("y", conv(x, w, nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1}).uop());
      Artifacts a = assembly_for(g, c, level);
      // The convolution (its padded input is a kernel of its own).
      auto conv_kernel =
          std::find_if(a.optimized.begin(), a.optimized.end(),
                       [](const OptimizedKernel& k) { return is_contraction_kernel(k.ast); });
      ASSERT_NE(conv_kernel, a.optimized.end());
      opts.push_back(conv_kernel->opts);
    }
    auto has = [](const std::vector<Opt>& v, OptKind k) {
      return std::any_of(v.begin(), v.end(), [&](const Opt& o) { return o.kind == k; });
    };
    EXPECT_TRUE(opts[0].empty()) << c.name;
    EXPECT_TRUE(has(opts[1], OptKind::Upcast) && has(opts[1], OptKind::Parallel)) << c.name;
    EXPECT_FALSE(has(opts[1], OptKind::Unroll)) << c.name;
    EXPECT_TRUE(has(opts[2], OptKind::Unroll)) << c.name;
    int upcasts1 = 0, upcasts2 = 0;
    for (const Opt& o : opts[1]) upcasts1 += o.kind == OptKind::Upcast;
    for (const Opt& o : opts[2]) upcasts2 += o.kind == OptKind::Upcast;
    EXPECT_GT(upcasts2, upcasts1) << c.name << ": level 2's register tile has broadcast axes";
  }
}

// A 1x1 layer at 7x7 (49 positions, 320 -> 1280 channels) re-reads its task's weight panel once
// per position tile, the first time from memory: each reduce step prefetches part of the next
// task's panel (weight_prefetch.h). Not at 14x14 (196 positions: the weight is a few percent of
// the layer's time), nor for a panel too small to matter (16 input channels).
TEST(CodegenShape, WeightPanelsArePrefetchedOneTaskAhead) {
  auto prefetches = [](const Cpu& c, int64_t side, int64_t k, int64_t n = 1280) {
    Graph g;
    g.lowering().vector_bytes = c.vector_bytes;  // as kilnc sets it: panels one vector wide
    Tensor x = Tensor::input(g, "x", dtypes::float32, {1, k, side, side});
    Tensor w = ramp_weight(g, "w", {n, k, 1, 1}, 0.01, 7);
    g.add_output("y", conv(x, w, nullptr, {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, 1}).uop());
    return count_matches(assembly_for(g, c).assembly, "prefetcht0");
  };
  for (const Cpu& c : kCpus) {
    EXPECT_GE(prefetches(c, 7, 320), 1) << c.name;
    // squeezenet1_1's classifier: 22 tiles of 8 positions on AVX-512, 43 of 4 on AVX2.
    EXPECT_EQ(prefetches(c, 13, 512, 1000) > 0, c.vector_bytes == 64) << c.name;
    EXPECT_EQ(prefetches(c, 14, 320), 0) << c.name;
    EXPECT_EQ(prefetches(c, 7, 16), 0) << c.name;
  }
}

}  // namespace
}  // namespace kiln
