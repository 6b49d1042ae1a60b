// Test helper: seeded random graphs of Tensor API primitives and composites (odd sizes,
// broadcasting, padding, negative steps, reductions over several axes, convs, pools, gathers).
#pragma once

#include <numeric>
#include <random>

#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"
#include "tests/schedule/plan_util.h"

namespace kiln::testing {

class RandomGraph {
 public:
  RandomGraph(Graph& g, uint64_t seed) : g_(g), rng_(seed) {}

  void build() {
    int n_inputs = pick(1, 3);
    for (int i = 0; i < n_inputs; ++i) {
      DType d = pick(0, 5) == 0 ? dtypes::int32 : dtypes::float32;
      pool_.push_back(Tensor::input(g_, "in" + std::to_string(i), d, random_shape(pick(1, 4))));
    }
    int n_ops = pick(2, 9);
    for (int i = 0; i < n_ops; ++i) {
      Tensor t = step();
      if (t.valid() && t.ndim() >= 1 && t.numel() > 0 && t.numel() <= 4096) pool_.push_back(t);
    }
    g_.add_output("out0", pool_.back().uop());
    if (pick(0, 2) == 0 && pool_.size() > 2)
      g_.add_output("out1",
                    pool_[static_cast<size_t>(pick(1, static_cast<int>(pool_.size()) - 2))].uop());
  }

  std::string trace;  // the ops applied, for failure messages

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  Shape random_shape(int rank) {
    Shape s;
    for (int i = 0; i < rank; ++i) s.push_back(pick(1, 7));
    return s;
  }
  Tensor any() { return pool_[static_cast<size_t>(pick(0, static_cast<int>(pool_.size()) - 1))]; }
  Tensor any_float() {
    for (int k = 0; k < 8; ++k) {
      Tensor t = any();
      if (t.dtype().is_float()) return t;
    }
    return any().cast(dtypes::float32);
  }
  Tensor weight(const Shape& s, DType d = dtypes::float32) {
    NDArray a = random_array(d, s, rng_);
    return Tensor::weight(g_, g_.fresh_name("w"), std::move(a));
  }
  std::vector<int64_t> some_axes(int64_t rank) {
    std::vector<int64_t> a;
    for (int64_t i = 0; i < rank; ++i)
      if (pick(0, 1)) a.push_back(pick(0, 1) ? i : i - rank);  // negative axes too
    if (a.empty() && rank > 0) a.push_back(pick(0, static_cast<int>(rank) - 1));
    return a;
  }

  Tensor step() {
    int kind = pick(0, 22);
    trace += std::to_string(kind) + " ";
    Tensor x = any();
    switch (kind) {
      case 0: {  // unary float
        Tensor f = any_float();
        switch (pick(0, 6)) {
          case 0:
            return f.tanh();
          case 1:
            return f.sigmoid();
          case 2:
            return f.abs().add(0.5).sqrt();
          case 3:
            return f.tanh().exp();
          case 4:
            return f.neg();
          case 5:
            return f.abs().add(1.0).log();
          default:
            return f.floor();
        }
      }
      case 1: {  // binary with a broadcast operand (a reduction of x with keepdims, or a scalar)
        Tensor y = pick(0, 1) ? x.sum(some_axes(x.ndim()), true) : x.like(pick(1, 3));
        switch (pick(0, 4)) {
          case 0:
            return x.add(y);
          case 1:
            return x.mul(y);
          case 2:
            return x.sub(y);
          case 3:
            return x.maximum(y);
          default:
            return x.dtype().is_float() ? x.div(y.abs().add(1.0)) : x.minimum(y);
        }
      }
      case 2:
        return x.sum(some_axes(x.ndim()), pick(0, 1));
      case 3:
        return x.max(some_axes(x.ndim()), pick(0, 1));
      case 4: {  // permute
        std::vector<int64_t> p(static_cast<size_t>(x.ndim()));
        std::iota(p.begin(), p.end(), 0);
        std::shuffle(p.begin(), p.end(), rng_);
        return x.permute(p);
      }
      case 5: {  // reshape to a random factorization
        int64_t n = x.numel();
        Shape s;
        for (int64_t f = 2; f <= n; ++f)
          while (n % f == 0 && pick(0, 2) > 0) {
            s.push_back(f);
            n /= f;
          }
        if (n > 1) s.push_back(n);
        std::shuffle(s.begin(), s.end(), rng_);
        if (s.empty()) s.push_back(1);
        return x.reshape(s);
      }
      case 6: {  // pad
        std::vector<std::pair<int64_t, int64_t>> p;
        for (int64_t i = 0; i < x.ndim(); ++i) p.push_back({pick(0, 2), pick(0, 2)});
        return x.pad(p, pick(0, 1) ? 0.0 : 1.5);
      }
      case 7: {  // shrink
        std::vector<std::pair<int64_t, int64_t>> b;
        for (int64_t d : x.shape()) {
          int64_t lo = pick(0, static_cast<int>(d) - 1);
          b.push_back({lo, pick(static_cast<int>(lo) + 1, static_cast<int>(d))});
        }
        return x.shrink(b);
      }
      case 8:
        return x.flip(some_axes(x.ndim()));
      case 9: {  // unsqueeze + expand
        Tensor u = x.unsqueeze(pick(0, static_cast<int>(x.ndim())));
        Shape s = u.shape();
        for (auto& d : s)
          if (d == 1) d = pick(1, 3);
        return u.expand(s);
      }
      case 10: {  // slice with steps, possibly negative
        int64_t a = pick(0, static_cast<int>(x.ndim()) - 1);
        int64_t step = pick(0, 1) ? pick(1, 3) : -pick(1, 3);
        return slice(x, {step > 0 ? 0 : -1}, {step > 0 ? x.dim(a) : -x.dim(a) - 1}, {a}, {step});
      }
      case 11:
        return softmax(any_float(), pick(0, 1) ? -1 : 0);
      case 12: {  // matmul with a weight
        Tensor f = any_float();
        return matmul(f, weight({f.dim(-1), pick(1, 6)}));
      }
      case 13: {  // conv2d (with padding, stride, dilation and groups)
        Tensor f = any_float();
        Tensor img = f.ndim() == 4 ? f : f.reshape({1, 1, 1, f.numel()}).reshape({1, 1, 1, -1});
        if (img.dim(2) < 2 && img.dim(3) >= 4 && img.dim(3) % 2 == 0)
          img = img.reshape({img.dim(0), img.dim(1), 2, -1}).contiguous();
        int64_t c = img.dim(1), groups = (c % 2 == 0 && pick(0, 1)) ? 2 : 1;
        int64_t co = groups * pick(1, 2);
        int64_t pw = pick(0, 1);
        int64_t kh = std::min<int64_t>(pick(1, 3), img.dim(2) + 2),
                kw = std::min<int64_t>(pick(1, 3), img.dim(3) + 1 + pw);
        ConvParams p{{pick(1, 2), pick(1, 2)}, {{1, 1}, {pw, 1}}, {1, 1}, groups};
        Tensor bias = weight({co});
        return conv(img, weight({co, c / groups, kh, kw}), pick(0, 1) ? &bias : nullptr, p);
      }
      case 14: {  // concat along an axis
        int64_t a = pick(0, static_cast<int>(x.ndim()) - 1);
        Tensor y = x.flip({a});
        return concat({x, y, x}, a);
      }
      case 15:
        return cumsum(x, pick(0, static_cast<int>(x.ndim()) - 1), pick(0, 1), pick(0, 1));
      case 16: {
        // Normalizing a handful of nearly equal values divides rounding noise by a tiny standard
        // deviation; with at least 4 random values the problem stays well conditioned.
        Tensor f = any_float();
        if (f.dim(-1) < 4) return f.tanh();
        return layer_norm(f, -1, nullptr, nullptr, 1e-5);
      }
      case 17: {  // pooling on 4-D
        Tensor f = any_float();
        if (f.ndim() != 4 || f.dim(2) < 2 || f.dim(3) < 2) return f.tanh();
        PoolParams p;
        p.kernel = {2, 2};
        p.stride = {pick(1, 2), pick(1, 2)};
        p.padding = {{pick(0, 1), 0}, {0, pick(0, 1)}};
        p.ceil_mode = pick(0, 1);
        p.count_include_pad = pick(0, 1);
        return pick(0, 1) ? max_pool(f, p) : avg_pool(f, p);
      }
      case 18: {  // gather with negative and positive indices
        int64_t a = pick(0, static_cast<int>(x.ndim()) - 1);
        NDArray idx(dtypes::int64, {pick(1, 4)});
        for (int64_t i = 0; i < idx.numel(); ++i)
          idx.set(i, ConstValue::of_int(
                         pick(-static_cast<int>(x.dim(a)), static_cast<int>(x.dim(a)) - 1)));
        return x.gather(Tensor::weight(g_, g_.fresh_name("idx"), std::move(idx)), a);
      }
      case 19: {  // where with a comparison
        Tensor f = any_float();
        return f.gt(0.25).where(f, f.mul(-2.0));
      }
      case 20:
        return x.cast(x.dtype().is_float() ? dtypes::int32 : dtypes::float32);
      case 21:
        return tile(x, std::vector<int64_t>(static_cast<size_t>(x.ndim()), 1)).contiguous().add(x);
      default: {  // window over the last axis
        int64_t k = pick(1, static_cast<int>(std::min<int64_t>(3, x.dim(-1))));
        return x.window({k}, {pick(1, 2)}, {1}).sum({-1});
      }
    }
  }

  Graph& g_;
  std::mt19937_64 rng_;
  std::vector<Tensor> pool_;
};

}  // namespace kiln::testing
