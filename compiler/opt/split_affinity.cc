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

// The axis of a buffer a kernel's tasks split: its stride in elements, and the elements it spans
// (stride times the loop's size: 3025 for a 55x55 map's positions walked as one loop, the same
// as its 55 rows of 55). stride 0: one task, or a split along something else than one axis.
struct SplitAxis {
  int64_t stride = 0, span = 0;
};

// The loop a kernel's tasks split (its PARALLEL opt's range); nullptr for one task.
const UOp* parallel_loop(const UOp* ast, const OptimizedKernel& k) {
  if (k.ntasks <= 1) return nullptr;
  for (const Opt& o : k.opts)
    if (o.kind == OptKind::Parallel) return range_with_id(ast, o.range_id);
  return nullptr;
}

SplitAxis split_axis(const UOp* ast, const OptimizedKernel& k) {
  const UOp* idx = store_index(ast);
  const UOp* r = parallel_loop(ast, k);
  if (!idx || !r) return {};
  int64_t s = stride_of(idx, r);
  return s > 0 ? SplitAxis{s, s * size_of(r)} : SplitAxis{};
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

// The one range among `candidates` that walks `axis` of argument `arg` of `ast` in every access
// of that argument: the range whose span in the buffer (stride times size) is the axis's within
// a factor of two, which is the same axis, a stride-2 window's (twice the stride, half the
// size), the rows of a map whose positions the producer walked as one loop, or a padded map's;
// a column loop or a channel loop spans far less or far more. nullptr if there is none, or more
// than one.
const UOp* walking(const UOp* ast, int64_t arg, SplitAxis axis,
                   const std::vector<const UOp*>& candidates) {
  const UOp* stored = store_index(ast);
  std::vector<const UOp*> indices = arg == 0 ? std::vector<const UOp*>{} : load_indices(ast, arg);
  if (arg == 0 && stored) indices.push_back(stored);
  if (indices.empty()) return nullptr;
  const UOp* found = nullptr;
  for (const UOp* r : candidates) {
    bool walks = true;
    for (const UOp* idx : indices) {
      int64_t s = stride_of(idx, r), span = s * size_of(r);
      walks &= s > 0 && 2 * span >= axis.span && span <= 2 * axis.span;
    }
    if (!walks) continue;
    if (found) return nullptr;
    found = r;
  }
  return found;
}

// The output loop that walks `axis` of argument `arg`, so that a task split along it reads only
// the part its producer's task of the same share wrote.
const UOp* loop_along(const UOp* ast, int64_t arg, SplitAxis axis) {
  return walking(ast, arg, axis, kernel_ranges(ast).loops);
}

// The reduce range of `ast` that walks `axis` of argument `arg` in every access of it (the
// sum over a Winograd product's points in its output pass), or nullptr.
const UOp* reduce_along(const UOp* ast, int64_t arg, SplitAxis axis) {
  return walking(ast, arg, axis, kernel_ranges(ast).reduces);
}

// The kernels whose split follows whenever there is a loop along the producer's: any but a
// contraction over fewer than two reduce ranges (a 1x1 layer, a matmul, a Winograd pass or
// product, float or int8), which combines channels or positions and keeps the split its
// heuristics chose by what its tasks re-read, unless its (first) launch is alone in its
// parallel group and every reader of its output already splits along that axis
// (readers_along). A 2-D window (a depthwise layer, a global pool of a product), a
// pooling window, a padded copy or a border fill follows. Measured whole (tools/bench/ab_bench,
// each against the rule that let only windows and border fills follow): 1x1 layers and Winograd
// passes following unconditionally made resnet18 2% slower at both thread counts and
// squeezenet1_1 3% slower at 1 (a Winograd input transform that follows moves the other core's
// lines to the product that reads it: resnet50's 56x56 product 0.16 -> 0.24 ms at 2 threads,
// vCPUs far apart; the depthwise layers after a 1x1 layer that follows, split like it, ran 0.01 -
// 0.03 ms slower each in mobilenet_v2 and efficientnet_b0; squeezenet1_1's 1x1 expansions, in a
// group with the 3x3 expansion's padded copy, made it 1-2% slower at 2 threads in three A/B
// runs, so a launch that shares its group does not follow); the pools and copies alone made
// squeezenet1_1 3-5% faster at 2 threads and resnet50 2-3% at both, and nothing slower by more than
// 1%.
bool free_to_follow(const UOp* ast) {
  if (!is_contraction_kernel(ast) && !is_dot_contraction(ast)) return true;
  return kernel_ranges(ast).reduces.size() >= 2;
}

// The launches after `from` that read `buffer`, each with the argument it reads it as.
std::vector<std::pair<size_t, int64_t>> readers_of(const Plan& plan, size_t from, int buffer) {
  std::vector<std::pair<size_t, int64_t>> out;
  for (size_t i = from + 1; i < plan.launches.size(); ++i)
    for (size_t a = 1; a < plan.launches[i].args.size(); ++a)
      if (plan.launches[i].args[a] == buffer) out.push_back({i, static_cast<int64_t>(a)});
  return out;
}

// Whether every launch after `from` that reads `buffer` already splits along `axis` (its tasks'
// loop walks the same span of the buffer) and is alone in its parallel group, so that a
// contraction that follows its producer moves no other core's lines to its readers: resnet50's
// 56x56 64 -> 256 layer with the residual added (its input and the residual written split by
// rows, its readers the next block's 1x1 layers, split by rows) ran 0.42 -> 0.27 ms at 2 threads
// with the vCPUs far apart, 0.29 -> 0.24 near. A reader that splits otherwise, or would follow
// (a depthwise layer: slower split by rows after a 1x1 layer), or runs in one task (its one
// thread reads the other core's half either way, and a split gains it nothing) keeps the
// contraction's split. Readers see their current split: one that later follows another input
// may leave the axis. Launches of `self` (the program deciding) count as reading along it.
bool readers_along(const Plan& plan, size_t from, int buffer, SplitAxis axis, size_t self,
                   const std::vector<OptimizedKernel>& kernels, const std::vector<bool>& alone) {
  for (auto [i, a] : readers_of(plan, from, buffer)) {
    size_t q = static_cast<size_t>(plan.launches[i].program);
    if (q == self) continue;
    const UOp* ast = plan.programs.at(q).ast;
    const UOp* along = loop_along(ast, a, axis);
    if (!along || !alone[i] || parallel_loop(ast, kernels[q]) != along) return false;
  }
  return true;
}

// Per launch: whether it is the only launch of its parallel group. The runtime runs a group's
// launches as one list of tasks, so in a group of several a launch's tasks do not fall to the
// threads in shares of its own (two launches of 16 tasks on 2 threads: one launch each), and
// which axis it splits does not decide which core wrote what it reads. A plan without groups
// (built without that stage) counts every launch as alone.
std::vector<bool> alone_in_group(const Plan& plan) {
  std::vector<bool> alone(plan.launches.size(), true);
  for (const std::vector<int>& g : plan.groups)
    if (g.size() > 1)
      for (int l : g) alone.at(static_cast<size_t>(l)) = false;
  return alone;
}

// `k` with its tasks along output loop `x` instead (x outermost, TILE by 1), two or more; throws
// OptRefused where the applier refuses it or `x` has fewer iterations left.
OptimizedKernel split_along_loop(const UOp* ast, const OptimizedKernel& k, const UOp* x,
                                 const OptTarget& t) {
  std::vector<Opt> opts;
  for (const Opt& o : k.opts)
    if (o.kind != OptKind::Parallel) opts.push_back(o);
  int64_t n = remaining_of(x, opts);
  if (n < 2) throw OptRefused(opts.size(), "fewer than two tasks");
  Opt outermost{OptKind::Tile, x->range().id, 1};
  if (std::find(opts.begin(), opts.end(), outermost) == opts.end()) opts.push_back(outermost);
  opts.push_back({OptKind::Parallel, x->range().id, std::min<int64_t>(n, t.max_tasks)});
  return apply_opts(ast, opts);
}

// A contraction whose tasks split an axis that every reader of its output sums over (a Winograd
// product split by its points, which the output pass sums) hands every reader half its input
// from the other core's cache, and every next write of the product takes those lines back:
// at 2 threads squeezenet1_1 read and wrote 18.4 MB across per run, 14.2 with its products split
// along their output channels; resnet18 49.3 and 47.7 MB, resnet50 81.0 and 78.9 (kilnc
// --cross-core). So such a launch, alone in its group with readers alone in theirs (all chosen by
// the heuristics), splits along its most contiguous output loop (the output channels) where
// every reader keeps it as an output loop, and the readers along theirs, each in two tasks or
// more. Against the packages before (tools/bench/ab_bench, 2 threads, vCPUs far): resnet50 0.966
// and 0.973 (copies 0.988, 1.016), resnet18 0.996 and 1.001 (1.006, 1.024), squeezenet1_1 0.995
// and 0.987 (0.993, 0.998); near, squeezenet1_1 0.996 (1.002, 121 runs). Only in packages for
// several threads: for one thread the split is moot and its order (output channels outermost)
// made squeezenet1_1's 55x55 product 54 -> 72 us. Returns whether it did.
bool split_where_readers_keep(const Plan& plan, size_t at, const OptTarget& t,
                              const std::vector<bool>& heuristic, const std::vector<bool>& alone,
                              std::vector<OptimizedKernel>& kernels) {
  const Launch& l = plan.launches[at];
  size_t p = static_cast<size_t>(l.program);
  const UOp* ast = plan.programs.at(p).ast;
  const UOp* stored = store_index(ast);
  SplitAxis now = split_axis(ast, kernels[p]);
  const UOp* split = parallel_loop(ast, kernels[p]);
  KernelRanges kr = kernel_ranges(ast);
  if (!stored || now.stride == 0 || !alone[at] || !is_contraction_kernel(ast) ||
      kr.reduces.size() != 1)
    return false;
  // Only a batch axis of a product over one reduce range, which both operands walk (a Winograd
  // product's points): a 1x1 layer split along its output channels or positions and read by
  // another layer that sums them keeps its split (a spatial split of every 1x1 layer made
  // efficientnet_b0 and resnet18 slower at 2 threads; see above), and so does a depthwise layer
  // (two reduce ranges, the window's) split along its channels.
  for (const UOp* load : product_loads(ast))
    if (!depends_on(load, split)) return false;
  std::vector<std::pair<size_t, int64_t>> readers = readers_of(plan, at, l.args[0]);
  if (readers.empty()) return false;
  for (auto [i, a] : readers) {
    size_t q = static_cast<size_t>(plan.launches[i].program);
    if (q == p || !heuristic.at(q) || !alone[i] || !reduce_along(plan.programs[q].ast, a, now))
      return false;
  }
  // The output loop stored most contiguously (a product's output channels), only: split along
  // its tiles instead (where its channels are one vector, or its output pass's), each task
  // re-read every transformed weight, and U-Net's 2-thread package ran 2% slower (resnet18's
  // 56x56 chains: 2.3%).
  const UOp* x = nullptr;
  for (const UOp* r : kr.loops)
    if (r != split && stride_of(stored, r) > 0 &&
        (!x || stride_of(stored, r) < stride_of(stored, x)))
      x = r;
  if (x) {
    int64_t s = stride_of(stored, x);
    try {
      std::vector<std::pair<size_t, OptimizedKernel>> next;  // (program, kernel)
      next.push_back({p, split_along_loop(ast, kernels[p], x, t)});
      for (auto [i, a] : readers) {
        size_t q = static_cast<size_t>(plan.launches[i].program);
        const UOp* y = loop_along(plan.programs[q].ast, a, SplitAxis{s, s * size_of(x)});
        if (!y) throw OptRefused(0, "a reader does not keep the loop");
        next.push_back({q, split_along_loop(plan.programs[q].ast, kernels[q], y, t)});
      }
      for (auto& [q, k] : next) kernels[q] = std::move(k);
      return true;
    } catch (const OptRefused&) {
      // the splits stand
    }
  }
  return false;
}

}  // namespace

void follow_producer_splits(const Plan& plan, const OptTarget& t,
                            const std::vector<bool>& heuristic,
                            std::vector<OptimizedKernel>& kernels, int64_t threads) {
  std::map<int, SplitAxis> split_of;  // buffer -> the axis its writer's tasks split
  std::vector<bool> decided(kernels.size(), false);
  std::vector<bool> alone = alone_in_group(plan);
  for (const Launch& l : plan.launches) {
    size_t p = static_cast<size_t>(l.program);
    const UOp* ast = plan.programs.at(p).ast;
    if (!decided[p] && heuristic.at(p)) {
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
      if (along && stored && split_axis(ast, kernels[p]).stride != stride_of(stored, along)) {
        try {
          OptimizedKernel next = apply_opts(ast, default_opts(ast, t, along));
          SplitAxis axis = split_axis(ast, next);
          // A program launched more than once decides at its first launch: its later launches'
          // groups and readers are not checked (resnet50's residual 64 -> 256 layer is launched
          // twice; the second's output is read by layer2.0's dense copy in a shared group, and
          // following for both measured 0.980 of the model at 2 threads).
          size_t at = static_cast<size_t>(&l - plan.launches.data());
          if (free_to_follow(ast) || (alone[at] && axis.stride == stride_of(stored, along) &&
                                      readers_along(plan, at, l.args[0], axis, p, kernels, alone)))
            kernels[p] = std::move(next);
        } catch (const OptRefused&) {
          // the first choice stands
        }
      }
      // Not where the cores share one L3 on a mesh (OptTarget::mesh_shared_l3): on a Xeon whose
      // vCPUs were ~300 ns apart the products' own splits ran faster at 2 threads
      // (tools/bench/ab_bench: squeezenet1_1 0.942, resnet18 0.942, resnet50 0.967).
      if (threads > 1 && !t.mesh_shared_l3)
        split_where_readers_keep(plan, static_cast<size_t>(&l - plan.launches.data()), t, heuristic,
                                 alone, kernels);
    }
    if (SplitAxis axis = split_axis(ast, kernels[p]); axis.stride > 0)
      split_of[l.args.at(0)] = axis;
  }
}

}  // namespace kiln
