// Unique (opset 11): the distinct elements (or slices along `axis`), sorted or in order of first
// occurrence; their number is a size computed from data (Graph::counted: Y, indices and counts
// planned at the input's length along the axis, reporting the number found).
//
// Built by pairwise comparison: which entries equal which (every element of two slices equal),
// which are first occurrences, and their order — ascending (lexicographic over a slice's
// elements, as numpy.unique) or by first occurrence — as ranks; output u is the first occurrence
// of rank u. O(length^2 x slice) work: meant for the modest lengths of tensors whose values
// decide shapes.
#include <optional>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/indexing.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

V unique(NodeContext& n) {
  Graph& g = n.graph();
  Tensor x = n.input(0);
  if (x.numel() == 0) n.unsupported("Unique of an empty tensor");
  if (g.in_loop_body()) n.unsupported("Unique inside a loop group's body");
  bool sorted = n.attr_int("sorted", 1) != 0;
  bool has_axis = n.has_attr("axis");
  int64_t axis = has_axis ? norm_axis(n.attr_int("axis"), x.ndim(), n) : 0;
  // The entries compared: (M, R), an entry per index along the axis, R elements each.
  Tensor moved = has_axis ? x.unsqueeze(0).transpose(0, axis + 1).squeeze({axis + 1}) : x;
  const int64_t M = has_axis ? x.dim(axis) : x.numel();
  const int64_t R = x.numel() / M;
  Tensor entries = moved.reshape({M, R});
  Tensor a = entries.unsqueeze(1), b = entries.unsqueeze(0);  // (M, 1, R), (1, M, R)
  Tensor same = a.eq(b).cast(dtypes::int64).min({2}).gt(Tensor::full(g, {}, 0, dtypes::int64));
  Tensor ii = iota(n, M).reshape({M, 1}), jj = iota(n, M).reshape({1, M});
  // Entry i is a first occurrence when no earlier entry equals it.
  Tensor first = same.logical_and(jj.lt(ii))
                     .cast(dtypes::int64)
                     .max({1})
                     .eq(Tensor::full(g, {}, 0, dtypes::int64));  // (M,)
  // precedes[i][j]: entry j comes before entry i in the output's order.
  Tensor precedes = jj.lt(ii);
  if (sorted) {
    // Lexicographic: at the first element where the two differ, j's is smaller.
    Tensor differ = a.ne(b).cast(dtypes::int64);  // (M, M, R)
    Tensor before = cumsum(differ, 2, true).eq(Tensor::full(g, {}, 0, dtypes::int64));
    precedes = before.logical_and(differ.gt(Tensor::full(g, {}, 0, dtypes::int64)))
                   .logical_and(b.lt(a))
                   .cast(dtypes::int64)
                   .max({2})
                   .gt(Tensor::full(g, {}, 0, dtypes::int64));
  }
  Tensor rank = precedes.logical_and(first.reshape({1, M})).cast(dtypes::int64).sum({1});  // (M,)
  Tensor zero = Tensor::full(g, {}, 0, dtypes::int64);
  // Output u: the first occurrence of rank u.
  Tensor is_u = first.reshape({1, M}).logical_and(rank.reshape({1, M}).eq(ii));  // (u, i)
  Tensor pick = is_u.where(jj, zero).sum({1});                                   // (M,)
  Tensor count = first.cast(dtypes::int64).sum();
  Tensor y = has_axis ? x.gather(pick, axis) : x.reshape({M}).gather(pick, 0);
  Tensor inverse = same.logical_and(first.reshape({1, M}))
                       .where(rank.reshape({1, M}), zero)
                       .sum({1});                                     // (M,): rank of its group
  Tensor counts = same.cast(dtypes::int64).sum({0}).gather(pick, 0);  // (M,)
  std::string name = n.wants_output(0) ? n.node().output(0) : n.name();
  // Planned for all M entries distinct; a dim parameter on Y's axis, given a range, is the count
  // (a declared number is what the run reports, or not: the output says what it found).
  std::optional<NodeContext::Rows> rows = n.declared_rows(0, has_axis ? static_cast<int>(axis) : 0);
  int symbol = rows ? rows->symbol : -1;
  if (symbol >= 0 && rows->bound != M)
    n.invalid("output 0's dim parameter '" + g.symbols()[static_cast<size_t>(symbol)].name +
              "' ranges to " + std::to_string(rows->bound) + "; Unique finds up to " +
              std::to_string(M) + " entries: give it the range 0.." + std::to_string(M));
  auto counted = [&](const Tensor& t, size_t ax) {
    return Tensor(&g, g.counted(n.where(), name + ".unique", t.uop(), count.uop(), symbol, ax));
  };
  V out = {counted(y, has_axis ? static_cast<size_t>(axis) : 0)};
  out.push_back(counted(pick, 0));
  out.push_back(inverse);
  out.push_back(counted(counts, 0));
  return out;
}

}  // namespace

void register_unique_ops(OpRegistry& r) {
  r["Unique"] = unique;
}

}  // namespace kiln::onnxfe
