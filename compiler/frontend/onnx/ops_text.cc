// TfIdfVectorizer (opset 9) over integer token ids.
//
// The pool of n-grams is an attribute, so matching is static: for each n-gram length and skip
// distance, the token shifted by each gram position is compared with the pool's entries and the
// comparisons ANDed — (batch, positions, pool entries) — then summed over positions. Counts go to
// their output columns through a 0/1 matrix (ngram_indexes), then TF, IDF or TF-IDF weighting.
// Unigrams are counted once (skips do not apply to them), as ONNX Runtime does.
#include <algorithm>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

// Columns [lo, hi) of the last axis.
Tensor columns(const Tensor& x, int64_t lo, int64_t hi) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d = 0; d + 1 < x.ndim(); ++d) b.push_back({0, x.dim(d)});
  b.push_back({lo, hi});
  return x.shrink(b);
}

V tfidf(NodeContext& n) {
  if (n.has_attr("pool_strings")) n.unsupported("a pool of strings");
  Tensor x = n.input(0);
  if (!x.dtype().is_int()) n.unsupported("tokens of type " + x.dtype().str());
  if (x.ndim() != 1 && x.ndim() != 2)
    n.invalid("X must be [C] or [N, C], got " + shape_str(x.shape()));
  bool flat = x.ndim() == 1;
  if (flat) x = x.unsqueeze(0);
  int64_t len = x.dim(1);
  int64_t min_n = n.attr_int("min_gram_length"), max_n = n.attr_int("max_gram_length");
  int64_t max_skip = n.attr_int("max_skip_count");
  std::string mode = n.attr_string("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") n.invalid("mode '" + mode + "'");
  std::vector<int64_t> pool = n.attr_ints("pool_int64s");
  std::vector<int64_t> starts = n.attr_ints("ngram_counts");
  std::vector<int64_t> out_index = n.attr_ints("ngram_indexes");
  std::vector<double> weights = n.attr_floats("weights", std::vector<double>{});
  if (min_n < 1 || max_n < min_n || max_skip < 0)
    n.invalid("gram lengths " + std::to_string(min_n) + ".." + std::to_string(max_n) +
              " and max_skip_count " + std::to_string(max_skip));
  if (static_cast<int64_t>(starts.size()) < max_n)
    n.invalid("ngram_counts needs a start for every gram length up to max_gram_length");
  for (int64_t c : out_index)
    if (c < 0) n.invalid("ngram_indexes holds a negative column (" + std::to_string(c) + ")");
  // Pool entries: gram length g occupies pool[starts[g-1], starts[g]) in entries of g tokens.
  int64_t width = out_index.empty() ? 0 : *std::max_element(out_index.begin(), out_index.end()) + 1;
  std::vector<Tensor> counts;
  std::vector<int64_t> entry_column;  // output column of each counted entry, in order
  std::vector<int64_t> entry_global;  // its index among all pool entries (for weights)
  int64_t entry = 0;
  for (int64_t g = 1; g <= static_cast<int64_t>(starts.size()); ++g) {
    int64_t lo = starts[static_cast<size_t>(g - 1)];
    int64_t hi = g < static_cast<int64_t>(starts.size()) ? starts[static_cast<size_t>(g)]
                                                         : static_cast<int64_t>(pool.size());
    if (lo < 0 || lo > hi || hi > static_cast<int64_t>(pool.size()) || (hi - lo) % g)
      n.invalid("ngram_counts does not split pool_int64s into whole " + std::to_string(g) +
                "-grams");
    int64_t entries = (hi - lo) / g;
    int64_t first_entry = entry;
    entry += entries;
    if (g < min_n || g > max_n || entries == 0) continue;
    if (first_entry + entries > static_cast<int64_t>(out_index.size()))
      n.invalid("ngram_indexes has fewer entries than the pool");
    Tensor total;
    for (int64_t skip = 0; skip <= (g == 1 ? 0 : max_skip); ++skip) {
      int64_t span = (g - 1) * (skip + 1);
      if (span >= len) break;
      int64_t positions = len - span;
      Tensor match;
      for (int64_t j = 0; j < g; ++j) {
        // token j of every gram starting at 0..positions-1, against entry e's token j.
        Tensor tok = columns(x, j * (skip + 1), j * (skip + 1) + positions).unsqueeze(-1);
        std::vector<double> want;
        for (int64_t e = 0; e < entries; ++e)
          want.push_back(static_cast<double>(pool[static_cast<size_t>(lo + e * g + j)]));
        Tensor eq = tok.eq(n.constant(make_array(x.dtype(), {1, 1, entries}, want)));
        match = match.valid() ? match.logical_and(eq) : eq;
      }
      Tensor c = match.cast(dtypes::float32).sum({1});  // (N, entries)
      total = total.valid() ? total.add(c) : c;
    }
    if (!total.valid()) total = Tensor::full(n.graph(), {x.dim(0), entries}, 0.0, dtypes::float32);
    counts.push_back(total);
    for (int64_t e = 0; e < entries; ++e) {
      entry_column.push_back(out_index[static_cast<size_t>(first_entry + e)]);
      entry_global.push_back(first_entry + e);
    }
    if (!weights.empty() && static_cast<int64_t>(weights.size()) < first_entry + entries)
      n.invalid("weights has fewer entries than the pool");
  }
  int64_t batch = x.dim(0);
  Tensor y;
  if (counts.empty()) {
    y = Tensor::full(n.graph(), {batch, width}, 0.0, dtypes::float32);
  } else {
    Tensor c = concat(counts, 1);  // (N, counted entries)
    // Weighting per entry, then into output columns.
    std::vector<double> w;
    for (int64_t e : entry_global)
      w.push_back(weights.empty() ? 1.0 : weights[static_cast<size_t>(e)]);
    Tensor wt = n.constant(make_array(dtypes::float32, {1, static_cast<int64_t>(w.size())}, w));
    if (mode == "IDF") c = c.gt(0.0).cast(dtypes::float32).mul(wt);
    if (mode == "TFIDF") c = c.mul(wt);
    std::vector<double> onehot(entry_column.size() * static_cast<size_t>(width), 0.0);
    for (size_t gi = 0; gi < entry_column.size(); ++gi)
      onehot[gi * static_cast<size_t>(width) + static_cast<size_t>(entry_column[gi])] = 1.0;
    y = matmul(c,
               n.constant(make_array(dtypes::float32,
                                     {static_cast<int64_t>(entry_column.size()), width}, onehot)));
  }
  return V{flat ? y.squeeze({0}) : y};
}

}  // namespace

void register_text_ops(OpRegistry& r) {
  r["TfIdfVectorizer"] = tfidf;
}

}  // namespace kiln::onnxfe
