#include "compiler/opt/split_affinity.h"

#include <map>

#include "compiler/opt/kernel_queries.h"

namespace kiln {

namespace {

const UOp* range_with_id(const UOp* ast, int64_t id) {
  for (const UOp* u : ast->toposort())
    if (u->op == Op::RANGE && u->range().id == id) return u;
  return nullptr;
}

// The index a kernel stores its output at; nullptr if it does not store through one INDEX.
const UOp* store_index(const UOp* ast) {
  const UOp* st = store_of(ast);
  if (!st || st->op != Op::STORE || st->src.empty() || st->src[0]->op != Op::INDEX) return nullptr;
  return st->src[0]->src[1];
}

// The stride, in elements of the stored buffer, of the axis a kernel's tasks split; 0 if it runs
// as one task or splits along something else than one axis.
int64_t split_stride(const UOp* ast, const OptimizedKernel& k) {
  const UOp* idx = store_index(ast);
  if (k.ntasks <= 1 || !idx) return 0;
  for (const Opt& o : k.opts)
    if (o.kind == OptKind::Parallel)
      if (const UOp* r = range_with_id(ast, o.range_id))
        return std::max<int64_t>(0, stride_of(idx, r));
  return 0;
}

// The indices of a kernel's loads from argument `arg`.
std::vector<const UOp*> load_indices(const UOp* ast, int64_t arg) {
  std::vector<const UOp*> out;
  for (const UOp* u : ast->toposort())
    if (u->op == Op::LOAD && u->src[0]->op == Op::INDEX &&
        u->src[0]->src[0]->op == Op::DEFINE_GLOBAL && u->src[0]->src[0]->iarg() == arg)
      out.push_back(u->src[0]->src[1]);
  return out;
}

// The output loop of `ast` that walks the axis of stride `split` of argument `arg` (the same
// stride, or twice it for a stride-2 window), when every access of that argument moves with every
// output loop (each task reads only where it writes); nullptr otherwise.
const UOp* loop_along(const UOp* ast, int64_t arg, int64_t split) {
  KernelRanges kr = kernel_ranges(ast);
  const UOp* stored = store_index(ast);
  std::vector<const UOp*> indices = arg == 0 ? std::vector<const UOp*>{} : load_indices(ast, arg);
  if (arg == 0 && stored) indices.push_back(stored);
  if (indices.empty()) return nullptr;
  const UOp* found = nullptr;
  for (const UOp* idx : indices)
    for (const UOp* r : kr.loops) {
      if (!depends_on(idx, r)) return nullptr;  // a broadcast: every task would re-read it
      int64_t s = stride_of(idx, r);
      if (s > 0 && s % split == 0 && s / split <= 2) {
        if (found && found != r) return nullptr;
        found = r;
      }
    }
  return found;
}

// The kernels whose split may follow: a float contraction over a 2-D window (of which
// loop_along keeps the ones that read only where they write, a depthwise convolution or a global
// pool of a product; a 1x1 convolution or a matmul reads its input for every output channel) or
// a kernel that stores without loading (a border fill). Not a Winograd transform pass (a 1-D
// reduction): following made the passes faster alone, but the next kernel of the chain (the
// product, split along its 36 planes) slower; with the vCPUs far apart, squeezenet1_1 2.62 ->
// 2.69 ms and resnet18 8.59 -> 8.98 at 2 threads (3-5% faster at 1, where the margin is).
bool free_to_follow(const UOp* ast) {
  bool loads = false;
  for (const UOp* u : ast->toposort()) loads |= u->op == Op::LOAD;
  if (!loads) return true;
  return is_contraction_kernel(ast) && !is_dot_contraction(ast) &&
         kernel_ranges(ast).reduces.size() >= 2;
}

}  // namespace

void follow_producer_splits(const Plan& plan, const OptTarget& t,
                            const std::vector<bool>& heuristic,
                            std::vector<OptimizedKernel>& kernels) {
  std::map<int, int64_t> split_of;  // buffer -> stride of the axis its writer's tasks split
  std::vector<bool> decided(kernels.size(), false);
  for (const Launch& l : plan.launches) {
    size_t p = static_cast<size_t>(l.program);
    const UOp* ast = plan.programs.at(p).ast;
    if (!decided[p] && heuristic.at(p) && free_to_follow(ast)) {
      decided[p] = true;
      const UOp* along = nullptr;
      // Its inputs' producers first, then an earlier writer of its own output (the interior of
      // the padded map whose border it writes).
      for (size_t a = 1; a < l.args.size() && !along; ++a)
        if (auto it = split_of.find(l.args[a]); it != split_of.end())
          along = loop_along(ast, static_cast<int64_t>(a), it->second);
      if (!along)
        if (auto it = split_of.find(l.args[0]); it != split_of.end())
          along = loop_along(ast, 0, it->second);
      const UOp* stored = store_index(ast);
      if (along && stored && split_stride(ast, kernels[p]) != stride_of(stored, along)) {
        try {
          kernels[p] = apply_opts(ast, default_opts(ast, t, along));
        } catch (const OptRefused&) {
          // the first choice stands
        }
      }
    }
    // (A split of stride 1 is a merged loop of positions: no single axis of a consumer walks it.)
    if (int64_t s = split_stride(ast, kernels[p]); s > 1) split_of[l.args.at(0)] = s;
  }
}

}  // namespace kiln
