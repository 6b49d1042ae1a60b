// The lowerer behind rangeify() (rangeify.h): one class, its parts in four files that share
// this header (an implementation detail, not an interface):
//   rangeify.cc          the driver, buffers, one kernel's building and the lowering of nodes
//   rangeify_fusion.cc   what the fusion policy is asked (consumer counts, reductions reached)
//   rangeify_regions.cc  kernels storing into a region of another buffer: a concatenation's
//                        parts, a padded map's interior, and the padded map's border
//   rangeify_loops.cc    loop and conditional groups, sizes computed from data
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/schedule/extents.h"
#include "compiler/schedule/rangeify.h"
#include "compiler/tensor/indexing.h"

namespace kiln::rangeify_internal {

using Idx = std::vector<const UOp*>;

struct MemoKey {
  const UOp* node;
  const UOp* valid;
  Idx idx;
  bool operator==(const MemoKey&) const = default;
};
struct MemoHash {
  size_t operator()(const MemoKey& k) const {
    size_t h = std::hash<const void*>{}(k.node) * 31 + std::hash<const void*>{}(k.valid);
    for (const UOp* u : k.idx) h = h * 1000003 + std::hash<const void*>{}(u);
    return h;
  }
};

// The deepest expression one kernel computes (nodes from the store to a leaf).
inline constexpr int kMaxFusedDepth = 256;

// Where a part of a concatenation is stored (concat_in_place): the whole's shape and the part's
// offset along the axis.
// A loop's stacked output is stored the same way, a new axis at row `iteration` (a symbol).
// A padded map's interior (realize_padding) is offset along every padded axis: `shift`.
struct Placement {
  Shape layout;
  size_t axis = 0;
  const UOp* offset = nullptr;      // nullptr: none along `axis`
  bool new_axis = false;            // `layout` has one more axis, at `axis`, indexed by `offset`
  std::vector<int64_t> shift = {};  // per axis of `layout`, added to the index (empty: none)
};

// A kernel queued with its output and region given (a loop's initial, carry and stacked
// kernels), rather than a node realized into its own buffer.
struct Job {
  const UOp* node;
  int out;
  bool copy;  // copy `node`'s buffer (or the buffer it is) instead of computing it
  std::optional<Placement> place;
  int loop;
  bool carry;
};

class Lowerer {
 public:
  Lowerer(Graph& g, const FusionPolicy& policy)
      : g_(g), ctx_(g.ctx()), policy_(policy), extents_(compute_extents(g)) {}

  RangeifyResult run();

 private:
  // ---- buffers, one kernel, lowering (rangeify.cc)
  int new_buffer(const std::string& name, BufferKind kind, const UOp* node);
  int realize(const UOp* n);
  int buffer_of_leaf(const UOp* n);
  void build_kernel(const UOp* root, int out, bool copy, const Placement* place = nullptr,
                    int loop = -1, bool carry = false);
  void begin_kernel(const UOp* root, int out, int loop, bool carry);
  const UOp* loop_axis(const UOp* extent);
  bool finish_kernel(const UOp* root, const UOp* out_idx, int64_t out_numel, const UOp* value,
                     int64_t visits);
  int64_t users_of(const UOp* n) const;
  std::vector<std::string> fused_origins() const;
  const UOp* drop_unused_args(const UOp* ast);
  int arg_for(int buffer);
  const UOp* linear_index(const Idx& idx, const Shape& shape);
  const UOp* load(int buffer, const UOp* node, const Idx& idx, const UOp* valid);
  const UOp* zero(DType d);
  const UOp* lower(const UOp* n, const Idx& idx, const UOp* valid);
  const UOp* lower_uncached(const UOp* n, const Idx& idx, const UOp* valid);
  const UOp* compute(const UOp* n, const Idx& idx, const UOp* valid);
  Idx reshape_index(const Idx& idx, const Shape& out, const Shape& in);

  // ---- kernels storing into a region of another buffer (rangeify_regions.cc)
  void build_border_kernels(const UOp* p, int out);
  bool concat_in_place(const UOp* root, int out);
  // Root's parts, each of which concat_in_place stores into its region, if root is a
  // concatenation it takes.
  std::optional<ConcatParts> in_place_parts(const UOp* root) const;
  bool whole_vector_rows(const UOp* p) const;
  int realize_padding(const UOp* p);

  // ---- what the fusion policy is asked (rangeify_fusion.cc)
  FusionQuery query(const UOp* n, const Idx& idx, const UOp* valid);
  static bool walks_reduce(const Idx& idx);
  static bool gathers_rows_walked_by_reduce(const UOp* n, const Idx& idx);
  void count_consumers();
  static bool merged_uses(const UOp* s,
                          const std::unordered_map<const UOp*, std::vector<const UOp*>>& users,
                          const std::unordered_set<const UOp*>& outputs);
  static bool is_movement_like(Op op);
  bool reaches_reduction(const UOp* root);
  std::unordered_set<const UOp*> tensors_read(const UOp* from, const UOp* skip, bool* reduces);
  bool reads_apart(const UOp* n);

  // ---- loop and conditional groups, computed sizes (rangeify_loops.cc)
  int varies_in(const UOp* root);
  void index_loops();
  void index_branches();
  void schedule_count(int ci);
  void schedule_loop(int li);

  // ---- state
  Graph& g_;
  Context& ctx_;
  const FusionPolicy& policy_;
  Extents extents_;
  RangeifyResult res_;
  std::unordered_map<const UOp*, int> loop_inputs_;   // states and iteration numbers: their loop
  std::unordered_map<const UOp*, int> loop_results_;  // final states, stacked outputs: their loop
  std::unordered_map<const UOp*, int> counted_outs_;  // counted values: their GraphCounted index
  std::unordered_map<const UOp*, int> varies_;        // see varies_in
  std::unordered_map<const UOp*, int> branch_of_;     // conditional groups' bodies
  std::set<int> scheduled_loops_;
  std::deque<Job> jobs_;
  int loop_ = -1;  // the loop whose body the current kernel is in (or -1)
  bool carry_ = false;
  std::unordered_map<const UOp*, int> realized_;
  std::deque<const UOp*> work_;
  std::vector<std::pair<const UOp*, int>> copies_;
  // per kernel
  const UOp* root_ = nullptr;
  std::vector<int> args_;
  std::unordered_map<int, int> arg_of_;
  std::unordered_map<MemoKey, const UOp*, MemoHash> memo_;
  std::vector<const UOp*> loops_;
  std::vector<const UOp*> fused_;  // the nodes the current kernel computes inline
  std::unordered_map<const UOp*, int64_t> consumers_;     // see count_consumers
  std::unordered_map<const UOp*, int64_t> direct_users_;  // nodes with it as a source
  // The parts of concatenations that compute themselves into their region, from the work queue.
  std::unordered_map<const UOp*, Placement> into_;
  // PADs whose interior another kernel stores (realize_padding): their kernels write the border.
  std::unordered_set<const UOp*> borders_;
  std::unordered_map<const UOp*, bool> reaches_reduction_;  // cache; realized nodes stop the walk
  int64_t next_range_ = 0;
  int depth_ = 0;  // of lower() calls: the expression depth reached
};

}  // namespace kiln::rangeify_internal
