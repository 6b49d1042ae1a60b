// Kernels the heuristics tests ask default_opts about (heuristics_test.cc,
// contraction_tile_test.cc): convolutions, matmuls and Winograd output transforms, and the opts'
// upcasts and unrolls.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "compiler/opt/heuristics.h"
#include "compiler/opt/kernel_queries.h"
#include "compiler/opt/opts.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "tests/opt/opt_plans.h"

namespace kiln::testing {

inline
    // default_opts of the convolution kernel of an x-shaped input and a zero weight of shape w
    // (stride 1, `pad` on each side of H and W, `group` groups, direct: no Winograd), in a graph
    // whose weights are packed in panels of `panel`.
    std::vector<Opt>
    conv_kernel_opts(const Shape& x, const Shape& w, int64_t pad, int64_t panel, const OptTarget& t,
                     int64_t group = 1) {
  Graph g;
  g.lowering().winograd = false;
  g.lowering().vector_bytes = 4 * panel;  // panels of `panel` float32 lanes
  Tensor in = Tensor::input(g, "x", dtypes::float32, x);
  NDArray wv(dtypes::float32, w);
  g.add_output("y", conv(in, Tensor::weight(g, "w", wv), nullptr,
                         {{1, 1}, {{pad, pad}, {pad, pad}}, {1, 1}, group})
                        .uop());
  Plan p = plan_graph(g, {});
  for (const auto& prog : p.programs)
    if (is_contraction_kernel(prog.ast)) return default_opts(prog.ast, t);
  ADD_FAILURE() << "no convolution kernel";
  return {};
}

inline
    // An AVX-512 target (64-byte vectors, 32 registers) with cheap masked vector accesses.
    OptTarget
    masked_avx512() {
  OptTarget t{64, 32};
  t.masked_vectors = true;
  return t;
}

inline std::vector<Opt> upcasts_of(const std::vector<Opt>& opts) {
  std::vector<Opt> ups;
  for (const Opt& o : opts)
    if (o.kind == OptKind::Upcast) ups.push_back(o);
  return ups;
}

inline
    // default_opts of the kernel that writes the output of a 3x3 convolution (padding 1) of an
    // x-shaped input to `out_channels` channels: with Winograd, its output transform.
    std::vector<Opt>
    output_transform_opts(const Shape& x, int64_t out_channels, const OptTarget& t) {
  Graph g;
  g.lowering().vector_bytes = t.vector_bytes;
  Tensor in = Tensor::input(g, "x", dtypes::float32, x);
  NDArray w(dtypes::float32, {out_channels, x[1], 3, 3});
  g.add_output(
      "y",
      conv(in, Tensor::weight(g, "w", w), nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1}).uop());
  Plan p = plan_graph(g, {});
  for (const Launch& l : p.launches)
    if (l.args.at(0) == p.outputs.at(0)) {
      const UOp* ast = p.programs.at(static_cast<size_t>(l.program)).ast;
      EXPECT_TRUE(is_contraction_kernel(ast)) << "the layer did not take Winograd";
      return default_opts(ast, t);
    }
  ADD_FAILURE() << "no kernel writes the output";
  return {};
}

inline
    // The sizes of the ranges `opts` unroll, in order, each checked to be unrolled completely.
    std::vector<int64_t>
    complete_unroll_sizes(const UOp* ast, const std::vector<Opt>& opts) {
  std::map<int64_t, int64_t> size_of_range;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE) size_of_range[u->range().id] = u->src[0]->cval().i;
  std::vector<int64_t> sizes;
  for (const Opt& o : opts)
    if (o.kind == OptKind::Unroll) {
      EXPECT_EQ(o.amount, size_of_range.at(o.range_id)) << o.str();
      sizes.push_back(o.amount);
    }
  return sizes;
}

inline
    // The upcasts default_opts gives an m x k by k x 1280 matmul (a weight, as a 1x1 layer of m
    // positions over k channels).
    std::vector<Opt>
    upcasts_of_weight_matmul(int64_t m, const OptTarget& t, int64_t k = 320) {
  Graph g;
  Tensor a = Tensor::input(g, "a", dtypes::float32, {m, k});
  NDArray w(dtypes::float32, {k, 1280});
  g.add_output("y", matmul(a, Tensor::weight(g, "w", w)).uop());
  Plan p = plan_graph(g, {});
  return upcasts_of(default_opts(p.programs.at(0).ast, t));
}

inline
    // The upcasts default_opts gives a direct 3x3 convolution (padding 1) of 512 channels to 512 on
    // a side x side map (the layer's kernel, not the one that pads its input).
    std::vector<Opt>
    upcasts_of_direct_3x3(int64_t side, const OptTarget& t) {
  Graph g;
  g.lowering().winograd = false;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, 512, side, side});
  NDArray w(dtypes::float32, {512, 512, 3, 3});
  g.add_output(
      "y",
      conv(x, Tensor::weight(g, "w", w), nullptr, {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, 1}).uop());
  Plan p = plan_graph(g, {});
  for (const KernelProgram& k : p.programs)
    if (is_contraction_kernel(k.ast)) return upcasts_of(default_opts(k.ast, t));
  ADD_FAILURE() << "no convolution kernel";
  return {};
}

inline
    // A grouped 3x3 convolution (padding 1) over `channels` channels in groups of 24,
    // regnet_x_1_6gf's, from a side x side map at `stride`: its kernel's upcasts as (the range's
    // size, the amount).
    std::vector<std::pair<int64_t, int64_t>>
    grouped_conv_upcasts(int64_t side, int64_t stride, const OptTarget& t, int64_t panel,
                         int64_t channels = 168) {
  Graph g;
  g.lowering().winograd = false;
  g.lowering().vector_bytes = 4 * panel;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {1, channels, side, side});
  NDArray w(dtypes::float32, {channels, 24, 3, 3});
  g.add_output("y", conv(x, Tensor::weight(g, "w", w), nullptr,
                         {{stride, stride}, {{1, 1}, {1, 1}}, {1, 1}, channels / 24})
                        .uop());
  Plan p = plan_graph(g, {});
  for (const KernelProgram& k : p.programs) {
    if (!is_contraction_kernel(k.ast)) continue;
    std::vector<std::pair<int64_t, int64_t>> ups;
    for (const Opt& o : upcasts_of(default_opts(k.ast, t)))
      for (const UOp* u : k.ast->toposort())
        if (u->op == Op::RANGE && u->range().id == o.range_id)
          ups.push_back({size_of(u), o.amount});
    return ups;
  }
  ADD_FAILURE() << "no convolution kernel";
  return {};
}

}  // namespace kiln::testing
