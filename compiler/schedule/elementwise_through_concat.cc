#include "compiler/schedule/elementwise_through_concat.h"

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/tensor/extent_analysis.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

namespace {

// Concatenations moved into: those of at least this many elements (16 KiB of float32). Below it
// the gated loads of one kernel cost less than a launch per part, each a dispatch and, at 2
// threads, a group of its own (parallel_groups.h): a decoder's cache with its new step, say.
constexpr int64_t kMinElements = 4096;

// n (an elementwise node of the graph before) rebuilt as m over rebuilt sources: m done in the
// parts of its concatenation operand, or nullptr when it has none to move into.
const UOp* through(Graph& g, const UOp* n, const UOp* m,
                   const std::unordered_map<const UOp*, int>& users) {
  if (!(ops::alu().has(m->op) || m->op == Op::CAST) || !m->has_shape()) return nullptr;
  if (shape_numel(m->shape()) < kMinElements) return nullptr;
  for (const UOp* s : m->src)
    if (!s->has_shape() || s->shape() != m->shape()) return nullptr;
  for (size_t k = 0; k < m->src.size(); ++k) {
    if (users.at(n->src[k]) != 1) continue;
    std::optional<ConcatParts> c = concat_parts(m->src[k]);
    if (!c) continue;
    std::vector<Tensor> pieces;
    for (const auto& [offset, part] : c->parts) {
      std::vector<std::pair<int64_t, int64_t>> region;
      for (int64_t d : m->shape()) region.push_back({0, d});
      region[c->axis] = {offset, offset + part->shape()[c->axis]};
      std::vector<const UOp*> src;
      for (size_t j = 0; j < m->src.size(); ++j)
        src.push_back(j == k ? part : Tensor(&g, m->src[j]).shrink(region).uop());
      const UOp* piece = m->with_src(src);
      g.carry_origins({{n, piece}});  // a profile names each part's kernel after n's node
      pieces.emplace_back(&g, piece);
    }
    return concat(pieces, static_cast<int64_t>(c->axis)).uop();
  }
  return nullptr;
}

}  // namespace

int elementwise_through_concat(Graph& g) {
  const UOp* sink = g.sink();
  const std::vector<const UOp*>& order = sink->toposort();
  std::unordered_map<const UOp*, int> users;
  for (const UOp* n : order)
    for (const UOp* s : n->src) ++users[s];
  Extents extents = compute_extents(g);
  std::unordered_map<const UOp*, const UOp*> rebuilt;
  int moved = 0;
  for (const UOp* n : order) {
    std::vector<const UOp*> src;
    bool changed = false;
    for (const UOp* s : n->src) {
      auto it = rebuilt.find(s);
      src.push_back(it == rebuilt.end() ? s : it->second);
      changed |= src.back() != s;
    }
    const UOp* m = changed ? n->with_src(src) : n;
    if (n != sink && !extents.symbolic(n))
      if (const UOp* r = through(g, n, m, users)) {
        m = r;
        ++moved;
      }
    rebuilt[n] = m;
  }
  if (moved == 0) return 0;
  g.carry_origins(rebuilt);
  g.set_roots(rebuilt.at(sink)->src);
  return moved;
}

}  // namespace kiln
