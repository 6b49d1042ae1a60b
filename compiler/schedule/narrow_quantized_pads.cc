#include "compiler/schedule/narrow_quantized_pads.h"

#include <cmath>
#include <optional>
#include <unordered_map>

#include "compiler/ir/rewrite.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/integral_values.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

namespace {

// Padded maps narrowed: those of at least 4 MiB as float32, well beyond a core's L2 (1-2 MB on
// the CPUs kiln knows), whose writes and reads go to L3 or memory. On an AMD EPYC (1 MB L2),
// mobilenet_v2_qdq's 96 x 114 x 114 map (5 MB) made the run 2.8% faster at 1 thread; its 1.7
// and 1.9 MB maps changed nothing, and small maps ran slower (the consumer dequantizes at every
// load of its window, the bytes saved stayed in cache anyway): all 17 together 0.98-1.01.
constexpr int64_t kMinBytes = int64_t{4} << 20;

// The one number every element of the constant u holds, if it is one: u a broadcast, negation
// or conversion of a small weight or constant (a per-tensor scale or zero point).
std::optional<double> one_value(const Graph& g, const UOp* u) {
  while (u->op == Op::EXPAND || u->op == Op::RESHAPE) u = u->src[0];
  if (u->op == Op::NEG) {
    std::optional<double> v = one_value(g, u->src[0]);
    return v ? std::optional<double>(-*v) : std::nullopt;
  }
  if (u->op == Op::CAST && u->dtype == dtypes::float32) return one_value(g, u->src[0]);
  if (u->op == Op::CONST) return u->cval().as_double();
  if (u->op != Op::BUFFER || !g.is_weight(u) || shape_numel(u->shape()) > 4096) return std::nullopt;
  EagerEvaluator ev(g);
  const NDArray& a = ev.eval(u);
  if (a.numel() == 0) return std::nullopt;
  double v = a.get(0).as_double();
  for (int64_t i = 1; i < a.numel(); ++i)
    if (a.get(i).as_double() != v) return std::nullopt;
  return v;
}

// An 8-bit type and its range [lo, hi].
struct Range8 {
  DType type;
  double lo, hi;
};

// The 8-bit type whose range v = MIN(MAX(x, lo), hi) clamps the integral x to, if it is one.
std::optional<Range8> clamped_8bit(const Graph& g, const UOp* v) {
  if (v->op != Op::MIN || v->dtype != dtypes::float32 || v->src[0]->op != Op::MAX) return {};
  const UOp* mx = v->src[0];
  auto splat = [](const UOp* u) -> std::optional<double> {
    while (u->op == Op::EXPAND || u->op == Op::RESHAPE) u = u->src[0];
    if (u->op != Op::CONST) return std::nullopt;
    return u->cval().as_double();
  };
  std::optional<double> lo = splat(mx->src[1]), hi = splat(v->src[1]);
  if (!lo || !hi || !integral_values(mx->src[0], [&](const UOp* b) { return one_value(g, b); }))
    return {};
  for (const Range8& r : {Range8{dtypes::uint8, 0, 255}, Range8{dtypes::int8, -128, 127}})
    if (*lo == r.lo && *hi == r.hi) return r;
  return {};
}

struct Dequantize {
  const UOp* v;  // the clamped value
  DType type;    // the 8-bit type of its range
  double z = 0;  // (v + z) x s
  double s = 1;
};

std::optional<Dequantize> dequantize_of(const Graph& g, const UOp* u) {
  if (u->op != Op::MUL || u->dtype != dtypes::float32) return {};
  for (size_t i = 0; i < 2; ++i) {
    const UOp *a = u->src[i], *s = u->src[1 - i];
    std::optional<double> sv = one_value(g, s);
    if (!sv || !(*sv > 0)) continue;
    std::vector<std::pair<const UOp*, const UOp*>> splits = {{a, nullptr}};
    if (a->op == Op::ADD) splits = {{a->src[0], a->src[1]}, {a->src[1], a->src[0]}};
    for (auto [v, z] : splits) {
      std::optional<Range8> r = clamped_8bit(g, v);
      if (!r) continue;
      std::optional<double> zv = z ? one_value(g, z) : std::optional<double>(0.0);
      if (!zv || *zv != std::nearbyint(*zv)) continue;
      double pad = -*zv;  // the stored value of a padded position: (pad + z) x s = 0
      if (pad < r->lo || pad > r->hi) continue;
      return Dequantize{v, r->type, *zv, *sv};
    }
  }
  return {};
}

}  // namespace

int narrow_quantized_pads(Graph& g) {
  const UOp* sink = g.sink();
  std::unordered_map<const UOp*, const UOp*> replace;
  for (const UOp* n : sink->toposort()) {
    if (n->op != Op::PAD || n->dtype != dtypes::float32 || n->src[1]->op != Op::CONST ||
        n->src[1]->cval().as_double() != 0.0)
      continue;
    if (shape_numel(n->shape()) * 4 < kMinBytes) continue;  // float32 bytes
    // A map padded channels-last (nn.cc's padded_channels_last) is the dequantized map permuted:
    // its integers are permuted the same way.
    const UOp* padded = n->src[0];
    const UOp* permute = padded->op == Op::PERMUTE ? padded : nullptr;
    std::optional<Dequantize> d = dequantize_of(g, permute ? permute->src[0] : padded);
    if (!d) continue;
    const std::vector<int64_t>& p = n->varg();
    std::vector<std::pair<int64_t, int64_t>> pads;
    for (size_t i = 0; i + 1 < p.size(); i += 2) pads.push_back({p[i], p[i + 1]});
    Tensor v = Tensor(&g, d->v).cast(d->type);
    if (permute) v = v.permute(permute->varg());
    Tensor q = v.pad(pads, -d->z);
    Tensor f = q.cast(dtypes::float32);
    if (d->z != 0) f = f.add(Tensor::full(g, f.shape(), d->z, dtypes::float32));
    f = f.mul(Tensor::full(g, f.shape(), d->s, dtypes::float32));
    replace[n] = f.uop();
  }
  if (!replace.empty()) {
    std::unordered_map<const UOp*, const UOp*> rebuilt;
    const UOp* new_sink = substitute(sink, replace, &rebuilt);
    g.carry_origins(rebuilt);
    g.set_roots(new_sink->src);
  }
  return static_cast<int>(replace.size());
}

}  // namespace kiln
