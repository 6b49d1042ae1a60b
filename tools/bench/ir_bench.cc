// Throughput of the IR core: interning (building nodes, finding existing ones) and rewriting
// (the symbolic simplifier over index expressions). Run: build/tools/bench/kiln_ir_bench
#include <benchmark/benchmark.h>

#include "compiler/ir/rewrite.h"
#include "compiler/ir/symbolic.h"
#include "compiler/ir/uop.h"

namespace kiln {
namespace {

// Builds fresh nodes: each iteration makes a new chain of adds in a new context.
void BM_InternNew(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Context ctx;
    const UOp* x = ctx.variable("x", 0, 100);
    const UOp* acc = x;
    for (int i = 0; i < n; ++i) acc = acc->add(ctx.const_index(i));
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations() * n * 2);
}
BENCHMARK(BM_InternNew)->Arg(1000)->Arg(100000);

// Finds existing nodes: the same chain rebuilt in a context that already holds it.
void BM_InternExisting(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Context ctx;
  auto build = [&] {
    const UOp* acc = ctx.variable("x", 0, 100);
    for (int i = 0; i < n; ++i) acc = acc->add(ctx.const_index(i));
    return acc;
  };
  build();
  for (auto _ : state) benchmark::DoNotOptimize(build());
  state.SetItemsProcessed(state.iterations() * n * 2);
}
BENCHMARK(BM_InternExisting)->Arg(1000)->Arg(100000);

// Simplifies reshape-style index math: ((r0*S1 + r1)*S2 + r2) // S2 % S1 and friends.
void BM_SimplifyIndex(benchmark::State& state) {
  for (auto _ : state) {
    Context ctx;
    int64_t count = 0;
    for (int s = 2; s < 34; ++s) {
      const UOp* r0 = ctx.range(7, 0);
      const UOp* r1 = ctx.range(s, 1);
      const UOp* r2 = ctx.range(5, 2);
      const UOp* flat = r0->mul(int64_t{s})->add(r1)->mul(int64_t{5})->add(r2);
      const UOp* e = flat->idiv(int64_t{5})
                         ->mod(int64_t{s})
                         ->add(flat->mod(int64_t{5}))
                         ->add(flat->idiv(int64_t{5 * s}));
      benchmark::DoNotOptimize(simplify(e));
      count += static_cast<int64_t>(e->graph_size());
    }
    state.counters["nodes"] = static_cast<double>(count);
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_SimplifyIndex);

}  // namespace
}  // namespace kiln

BENCHMARK_MAIN();
