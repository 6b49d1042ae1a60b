// Neural-network ONNX ops: convolutions, pooling, normalizations, Gemm/MatMul/Einsum, Dropout.
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/tensor/depthwise_taps.h"
#include "compiler/tensor/indexing.h"
#include "compiler/tensor/linalg.h"
#include "compiler/tensor/nn.h"

namespace kiln::onnxfe {

namespace {

using V = std::vector<Tensor>;

struct Spatial {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<std::pair<int64_t, int64_t>> pads;
};

// A convolution weight's spatial extent: (M, C/group, k...), one k per spatial axis of x.
std::vector<int64_t> weight_kernel(NodeContext& n, const Tensor& x, const Tensor& w) {
  if (w.ndim() != x.ndim() || w.ndim() < 3)
    n.invalid("weight " + shape_str(w.shape()) + " does not match input " + shape_str(x.shape()) +
              " (both must be rank 3 or more: batch/filters, channels, spatial...)");
  return std::vector<int64_t>(w.shape().begin() + 2, w.shape().end());
}

// kernel_shape, strides, dilations, pads/auto_pad of conv and pooling nodes.
Spatial spatial(NodeContext& n, const Tensor& x, const std::vector<int64_t>& kernel) {
  if (x.ndim() < 3)
    n.invalid("input must be (N, C, spatial...) with at least one spatial axis, got " +
              shape_str(x.shape()));
  size_t ns = static_cast<size_t>(x.ndim() - 2);
  Spatial s;
  s.kernel = kernel;
  s.strides = n.attr_ints("strides", std::vector<int64_t>(ns, 1));
  s.dilations = n.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  if (s.kernel.size() != ns || s.strides.size() != ns || s.dilations.size() != ns)
    n.invalid("kernel_shape, strides and dilations must have one value per spatial axis");
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> p = n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
    if (p.size() != 2 * ns) n.invalid("pads must have two values per spatial axis");
    for (size_t i = 0; i < ns; ++i) s.pads.push_back({p[i], p[i + ns]});
  } else if (auto_pad == "VALID") {
    s.pads.assign(ns, {0, 0});
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < ns; ++i) {
      int64_t in = x.dim(static_cast<int64_t>(2 + i)), st = s.strides[i];
      int64_t out = (in + st - 1) / st;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * st + (s.kernel[i] - 1) * s.dilations[i] + 1 - in);
      int64_t small = total / 2;
      s.pads.push_back(auto_pad == "SAME_UPPER" ? std::make_pair(small, total - small)
                                                : std::make_pair(total - small, small));
    }
  } else {
    n.unsupported("auto_pad '" + auto_pad + "'");
  }
  return s;
}

// Zeros inserted between the elements of spatial axis `a` (stride s): length (L-1)*s + 1.
Tensor dilate_axis(const Tensor& x, int64_t a, int64_t s) {
  if (s == 1) return x;
  int64_t len = x.dim(a);
  Tensor u = x.unsqueeze(a + 1);
  std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(u.ndim()), {0, 0});
  p[static_cast<size_t>(a + 1)] = {0, s - 1};
  Shape merged = x.shape();
  merged[static_cast<size_t>(a)] = len * s;
  Tensor r = u.pad(p, 0.0).reshape(merged);
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d = 0; d < r.ndim(); ++d) b.push_back({0, d == a ? (len - 1) * s + 1 : r.dim(d)});
  return r.shrink(b);
}

Tensor conv_transpose(NodeContext& n) {
  Tensor x = n.input(0), w = n.input(1);
  int64_t ns = x.ndim() - 2, g = n.attr_int("group", 1);
  std::vector<int64_t> kernel = weight_kernel(n, x, w);
  Spatial sp = spatial(n, x, n.attr_ints("kernel_shape", kernel));
  std::vector<int64_t> out_pad =
      n.attr_ints("output_padding", std::vector<int64_t>(static_cast<size_t>(ns), 0));
  std::vector<int64_t> out_shape = n.attr_ints("output_shape", std::vector<int64_t>{});
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  for (int64_t i = 0; i < ns; ++i) {
    size_t k = static_cast<size_t>(i);
    int64_t in = x.dim(2 + i),
            full = sp.strides[k] * (in - 1) + out_pad[k] + (sp.kernel[k] - 1) * sp.dilations[k] + 1;
    int64_t target = -1;
    if (!out_shape.empty())
      target = out_shape[out_shape.size() - static_cast<size_t>(ns) + k];
    else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
      target = in * sp.strides[k];
    if (target >= 0) {
      int64_t total = full - target;
      int64_t half = total / 2;
      bool upper = auto_pad != "SAME_LOWER";
      sp.pads[k] = upper ? std::make_pair(half, total - half) : std::make_pair(total - half, half);
    } else if (auto_pad == "VALID") {
      sp.pads[k] = {0, 0};
    }
  }
  // The transposed conv is a conv over the input with zeros inserted between elements, padded by
  // (k-1)*d - pad, with the kernel flipped and its channel axes swapped (per group).
  Tensor xd = x;
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (int64_t i = 0; i < ns; ++i) {
    size_t k = static_cast<size_t>(i);
    xd = dilate_axis(xd, 2 + i, sp.strides[k]);
    int64_t edge = (sp.kernel[k] - 1) * sp.dilations[k];
    pads.push_back({edge - sp.pads[k].first, edge - sp.pads[k].second + out_pad[k]});
  }
  int64_t c = w.dim(0), cog = w.dim(1);
  Shape ws = {g, c / g, cog};
  ws.insert(ws.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> perm = {0, 2, 1};
  for (int64_t i = 0; i < ns; ++i) perm.push_back(3 + i);
  Shape wo = {g * cog, c / g};
  wo.insert(wo.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> flip_axes;
  for (int64_t i = 0; i < ns; ++i) flip_axes.push_back(2 + i);
  Tensor wt = w.reshape(ws).permute(perm).reshape(wo).flip(flip_axes);
  std::vector<std::pair<int64_t, int64_t>> all(2, {0, 0});
  all.insert(all.end(), pads.begin(), pads.end());
  Tensor xp = xd.pad(all, 0.0);
  ConvParams p{std::vector<int64_t>(static_cast<size_t>(ns), 1), {}, sp.dilations, g};
  std::optional<Tensor> bias;
  if (n.has_input(2)) bias = n.input(2);
  return conv(xp, wt, bias ? &*bias : nullptr, p);
}

std::vector<Tensor> pool(NodeContext& n, bool is_max) {
  Tensor x = n.input(0);
  Spatial sp = spatial(n, x, n.attr_ints("kernel_shape"));
  PoolParams p;
  p.kernel = sp.kernel;
  p.stride = sp.strides;
  p.dilation = sp.dilations;
  p.padding = sp.pads;
  p.ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  p.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
  if (is_max && n.wants_output(1)) {
    auto [v, idx] = max_pool_with_indices(x, p, n.attr_int("storage_order", 0) != 0);
    return {v, idx};
  }
  if (is_max)
    if (auto q = quantized_max_pool(n, x, p)) return {*q};
  return {is_max ? max_pool(x, p) : avg_pool(x, p)};
}

// Einsum: every operand aligned to one axis per letter, multiplied, summed over the letters the
// output does not keep. Ellipses become letters of their own; a repeated letter in one operand
// takes its diagonal.
Tensor einsum(NodeContext& n) {
  std::string eq = n.attr_string("equation");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t s = 0, e; s <= lhs.size(); s = e + 1) {
    e = lhs.find(',', s);
    if (e == std::string::npos) e = lhs.size();
    terms.push_back(lhs.substr(s, e - s));
  }
  if (terms.size() != n.num_inputs())
    n.invalid("the equation names " + std::to_string(terms.size()) + " operands");
  // Ellipsis dims: the broadcast of every operand's leftover dims, as letters '0', '1', ...
  int64_t ell = 0;
  std::vector<Tensor> xs;
  for (size_t i = 0; i < terms.size(); ++i) {
    xs.push_back(n.input(i));
    size_t dots = terms[i].find("...");
    if (dots != std::string::npos)
      ell = std::max<int64_t>(ell, xs[i].ndim() - static_cast<int64_t>(terms[i].size() - 3));
  }
  auto expand_dots = [&](const std::string& t, int64_t rank) {
    size_t dots = t.find("...");
    if (dots == std::string::npos) return t;
    int64_t k = rank - static_cast<int64_t>(t.size() - 3);
    std::string e;
    for (int64_t j = ell - k; j < ell; ++j) e += static_cast<char>('0' + j);
    return t.substr(0, dots) + e + t.substr(dots + 3);
  };
  for (size_t i = 0; i < terms.size(); ++i) terms[i] = expand_dots(terms[i], xs[i].ndim());
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    if (out.find("...") != std::string::npos) {
      std::string e;
      for (int64_t j = 0; j < ell; ++j) e += static_cast<char>('0' + j);
      out.replace(out.find("..."), 3, e);
    }
  } else {
    std::map<char, int> count;
    for (const auto& t : terms)
      for (char c : t) ++count[c];
    for (int64_t j = 0; j < ell; ++j) out += static_cast<char>('0' + j);
    for (auto [c, k] : count)
      if (k == 1 && !(c >= '0' && c <= '9')) out += c;
  }
  std::string letters = out;
  for (const auto& t : terms)
    for (char c : t)
      if (letters.find(c) == std::string::npos) letters += c;
  std::map<char, int64_t> size;
  Tensor prod;
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor x = xs[i];
    std::string t = terms[i];
    if (static_cast<int64_t>(t.size()) != x.ndim())
      n.invalid("operand " + std::to_string(i) + " has rank " + std::to_string(x.ndim()));
    // Diagonals: a letter twice in one operand.
    for (size_t a = 0; a < t.size(); ++a)
      for (size_t b = a + 1; b < t.size(); ++b)
        if (t[a] == t[b]) {
          int64_t d = x.dim(static_cast<int64_t>(a));
          if (x.dim(static_cast<int64_t>(b)) != d)
            n.invalid("a repeated index with different sizes");
          std::vector<int64_t> perm;
          for (int64_t k = 0; k < x.ndim(); ++k)
            if (k != static_cast<int64_t>(a) && k != static_cast<int64_t>(b)) perm.push_back(k);
          perm.push_back(static_cast<int64_t>(a));
          perm.push_back(static_cast<int64_t>(b));
          Tensor y = x.permute(perm);
          Shape s(y.shape().begin(), y.shape().end() - 2);
          s.push_back(d * d);
          y = slice(y.reshape(s), {0}, {d * d}, {-1}, {d + 1});
          x = y;
          std::string nt;
          for (int64_t k : std::vector<int64_t>(perm.begin(), perm.end() - 2))
            nt += t[static_cast<size_t>(k)];
          nt += t[a];
          t = nt;
          a = 0;
          b = 0;
        }
    for (size_t a = 0; a < t.size(); ++a) {
      int64_t d = x.dim(static_cast<int64_t>(a));
      auto it = size.find(t[a]);
      if (it == size.end() || it->second == 1)
        size[t[a]] = d;
      else if (d != 1 && d != it->second)
        n.invalid(std::string("index '") + t[a] + "' has sizes " + std::to_string(d) + " and " +
                  std::to_string(it->second));
    }
    // Permute into letter order, then insert size-1 axes for the letters it lacks.
    std::vector<int64_t> perm;
    Shape s;
    for (char c : letters) {
      size_t p = t.find(c);
      if (p != std::string::npos) {
        perm.push_back(static_cast<int64_t>(p));
        s.push_back(x.dim(static_cast<int64_t>(p)));
      } else {
        s.push_back(1);
      }
    }
    Tensor aligned = x.permute(perm).reshape(s);
    prod = prod.valid() ? prod.mul(aligned) : aligned;
  }
  std::vector<int64_t> sum_axes;
  for (size_t i = out.size(); i < letters.size(); ++i) sum_axes.push_back(static_cast<int64_t>(i));
  Shape full;
  for (char c : letters) full.push_back(size[c]);
  prod = prod.expand(full);
  return sum_axes.empty() ? prod : prod.sum(sum_axes);
}

}  // namespace

ConvParams conv_params(NodeContext& n, const Tensor& x, const Tensor& w) {
  std::vector<int64_t> kernel = weight_kernel(n, x, w);
  Spatial sp = spatial(n, x, n.attr_ints("kernel_shape", kernel));
  return {sp.strides, sp.pads, sp.dilations, n.attr_int("group", 1)};
}

void register_nn_ops(OpRegistry& r) {
  r["Conv"] = [](NodeContext& n) {
    Tensor x = n.input(0), w = n.input(1);
    std::optional<Tensor> bias;
    if (n.has_input(2)) bias = n.input(2);
    ConvParams p = conv_params(n, x, w);
    if (auto q = quantized_conv(n, x, w, bias ? &*bias : nullptr, p)) return V{*q};
    return V{conv(x, w, bias ? &*bias : nullptr, p)};
  };
  r["ConvTranspose"] = [](NodeContext& n) { return V{conv_transpose(n)}; };
  r["MaxPool"] = [](NodeContext& n) { return pool(n, true); };
  r["AveragePool"] = [](NodeContext& n) { return pool(n, false); };
  r["GlobalAveragePool"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (x.ndim() < 2) n.invalid("input must be (N, C, spatial...), got " + shape_str(x.shape()));
    std::vector<int64_t> axes(static_cast<size_t>(x.ndim() - 2));
    std::iota(axes.begin(), axes.end(), 2);
    // A map that something else reads too (a squeeze-excitation block's, which its scale
    // multiplies) is stored whatever the pool does, and a kernel reducing it over H and W at
    // once vectorizes along the channels, each lane a plane apart: summed over H first (one
    // kernel, W as its vector lanes, contiguous), then over W (C x W values), it is read once in
    // whole vectors (efficientnet_b0's 17 pools 0.37 -> 0.13 ms as AVX-512 code, 0.40 -> 0.16 as
    // AVX2). A map only the pool reads keeps one reduction, which its producer can compute
    // channels-last (mobilenet_v2's last layer), as does a map computed channels-last
    // (depthwise_taps.h), whose channels are contiguous.
    if (x.ndim() == 4 && x.dim(2) * x.dim(3) >= 49 && x.dim(3) >= 7 && n.readers(0) > 1 &&
        !reads_channels_last_map(x))
      return V{x.sum({2}, true).sum({3}, true).div(static_cast<double>(x.dim(2) * x.dim(3)))};
    return V{x.mean(axes, true)};
  };
  r["GlobalMaxPool"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    if (x.ndim() < 2) n.invalid("input must be (N, C, spatial...), got " + shape_str(x.shape()));
    std::vector<int64_t> axes(static_cast<size_t>(x.ndim() - 2));
    std::iota(axes.begin(), axes.end(), 2);
    return V{x.max(axes, true)};
  };
  r["BatchNormalization"] = [](NodeContext& n) {
    if (n.opset() >= 14 && n.attr_int("training_mode", 0)) {
      // Training mode is deterministic: normalized with the batch's own statistics (population
      // variance over every axis but 1), and the running statistics updated by momentum.
      Tensor x = n.input(0);
      std::vector<int64_t> axes = {0};
      for (int64_t a = 2; a < x.ndim(); ++a) axes.push_back(a);
      Tensor mean = x.mean(axes), centered = x.sub(x.mean(axes, true));
      Tensor var = centered.mul(centered).mean(axes);
      double m = n.attr_float("momentum", 0.9);
      Tensor y = batch_norm(x, n.input(1), n.input(2), mean, var, n.attr_float("epsilon", 1e-5));
      return V{y, n.input(3).mul(m).add(mean.mul(1 - m)), n.input(4).mul(m).add(var.mul(1 - m))};
    }
    if (n.attr_int("training_mode", 0)) n.unsupported("training_mode=1");
    if (n.wants_output(1) || n.wants_output(2))
      n.unsupported("the running-statistics outputs (training)");
    return V{batch_norm(n.input(0), n.input(1), n.input(2), n.input(3), n.input(4),
                        n.attr_float("epsilon", 1e-5))};
  };
  r["InstanceNormalization"] = [](NodeContext& n) {
    return V{instance_norm(n.input(0), n.input(1), n.input(2), n.attr_float("epsilon", 1e-5))};
  };
  r["LayerNormalization"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t axis = norm_axis(n.attr_int("axis", -1), x.ndim(), n);
    double eps = n.attr_float("epsilon", 1e-5);
    std::vector<int64_t> axes;
    for (int64_t a = axis; a < x.ndim(); ++a) axes.push_back(a);
    Tensor mu = x.mean(axes, true);
    Tensor d = x.sub(mu);
    Tensor inv = d.mul(d).mean(axes, true).add(eps).sqrt().recip();
    Tensor y = d.mul(inv).mul(n.input(1));
    if (n.has_input(2)) y = y.add(n.input(2));
    return V{y, mu, inv};
  };
  r["LRN"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    int64_t size = n.attr_int("size");
    double alpha = n.attr_float("alpha", 1e-4), beta = n.attr_float("beta", 0.75),
           bias = n.attr_float("bias", 1.0);
    // Sum of squares over a window of channels: channels last, padded, windowed.
    std::vector<int64_t> perm = {0};
    for (int64_t a = 2; a < x.ndim(); ++a) perm.push_back(a);
    perm.push_back(1);
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    Tensor sq = x.mul(x).permute(perm);
    std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(sq.ndim()), {0, 0});
    p.back() = {(size - 1) / 2, size - 1 - (size - 1) / 2};
    Tensor s = sq.pad(p, 0.0).window({size}, {1}, {1}).sum({-1}).permute(inv);
    return V{x.div(s.mul(alpha / static_cast<double>(size)).add(bias).pow(beta))};
  };
  r["MeanVarianceNormalization"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    std::vector<int64_t> axes = n.attr_ints("axes", std::vector<int64_t>{0, 2, 3});
    Tensor d = x.sub(x.mean(axes, true));
    return V{d.div(d.mul(d).mean(axes, true).sqrt().add(1e-9))};
  };
  r["Gemm"] = [](NodeContext& n) {
    Tensor a = n.input(0), b = n.input(1);
    if (n.attr_int("transA", 0)) a = a.transpose();
    bool trans_b = n.attr_int("transB", 0) != 0;
    std::optional<Tensor> q = quantized_matmul(n, a, b, trans_b);
    Tensor y = q ? *q : matmul(a, trans_b ? b.transpose() : b);
    double alpha = n.attr_float("alpha", 1.0), beta = n.attr_float("beta", 1.0);
    if (alpha != 1.0) y = y.mul(alpha);
    if (n.has_input(2)) {
      Tensor c = n.input(2);
      y = y.add(beta != 1.0 ? c.mul(beta) : c);
    }
    return V{y};
  };
  r["MatMul"] = [](NodeContext& n) {
    if (auto q = quantized_matmul(n, n.input(0), n.input(1), false)) return V{*q};
    return V{matmul(n.input(0), n.input(1))};
  };
  r["Einsum"] = [](NodeContext& n) { return V{einsum(n)}; };
  r["Det"] = [](NodeContext& n) { return V{det(n.input(0))}; };
  // Dropout is deterministic where the spec's output is: in inference (training_mode false, the
  // default, and every opset before 12) and in training mode with a ratio of 0 (nothing dropped,
  // a scale of 1). Either way y = x and the mask is all true. Training mode with another ratio
  // drops values at random: refused, or, for operands read at run time, a check that fails the
  // run naming the node.
  r["Dropout"] = [](NodeContext& n) {
    Tensor x = n.input(0);
    V same = {x, Tensor::full(n.graph(), x.shape(), 1, dtypes::bool_)};
    if (n.opset() < 12 || !n.has_input(2)) return same;
    const std::string random = "a training-mode Dropout with a nonzero ratio is random";
    // The ratio: nullopt when read at run time (as a float32's bits; +-0 are 0 and INT32_MIN).
    std::optional<bool> ratio_zero = !n.has_input(1) ? std::optional<bool>(false) : std::nullopt;
    const UOp* zero_bits = nullptr;
    if (n.has_input(1) && n.input_is_const(1)) {
      ratio_zero = n.const_floats(1).at(0) == 0.0;
    } else if (n.has_input(1)) {
      const UOp* bits = n.run_time_float_bits(1).at(0);
      zero_bits = bits->eq(bits->const_like(int64_t{0}))
                      ->logical_or(bits->eq(bits->const_like(int64_t{INT32_MIN})));
    }
    if (n.input_is_const(2)) {
      const NDArray& t = n.const_input(2);  // a bool tensor (integers are accepted too)
      if (!t.numel() || t.get(0).as_double() == 0 || ratio_zero.value_or(false)) return same;
      if (ratio_zero) n.unsupported(random + " (training_mode is true)");
      n.require(zero_bits, 1, "must be 0 in training mode: " + random);
      return same;
    }
    if (ratio_zero.value_or(false)) return same;
    const UOp* t = n.run_time_ints(2).at(0);
    const UOp* inference = t->eq(t->const_like(int64_t{0}));
    n.require(zero_bits ? inference->logical_or(zero_bits) : inference, 2,
              "must be false unless the ratio is 0: " + random);
    return same;
  };
}

}  // namespace kiln::onnxfe
