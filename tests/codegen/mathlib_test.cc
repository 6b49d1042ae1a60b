// Accuracy of kiln's freestanding math library against libm: for each function, at least a
// million float32 points (random bit patterns over the whole range, a dense sweep of the useful
// range, and special values), computed by a compiled, vectorized kernel and compared with the
// double-precision libm result. The error is measured in float32 ulps of the exact result and
// must be <= 4; IEEE special values (NaN, +-inf, zeros, subnormals) must match.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "compiler/jit/jit.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/tensor.h"
#include "tests/schedule/plan_util.h"

namespace kiln {
namespace {

constexpr int64_t kPoints = 1 << 20;  // 1,048,576

// Size of one float32 ulp at the magnitude of `x` (a double), subnormal spacing below 2^-126.
double ulp_of(double x) {
  x = std::fabs(x);
  if (x < std::ldexp(1.0, -126)) return std::ldexp(1.0, -149);
  if (x >= static_cast<double>(std::numeric_limits<float>::max())) return std::ldexp(1.0, 104);
  int e;
  std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 24);
}

std::vector<float> test_points(uint64_t seed, float lo, float hi) {
  std::vector<float> p;
  p.reserve(kPoints);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            0.5f,
                            2.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            88.7228317f,
                            88.7228394f,
                            -103.972076f,
                            -87.3365479f,
                            1e-30f,
                            1e30f,
                            3.14159265f,
                            1.57079632f,
                            4.2e8f,
                            123456.789f};
  for (float s : specials) p.push_back(s);
  std::mt19937_64 rng(seed);
  // A third: random bit patterns (every exponent, both signs, subnormals, NaNs).
  while (p.size() < kPoints / 3) p.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  // The rest: a uniform sweep of the range where the function does its work.
  std::uniform_real_distribution<float> u(lo, hi);
  while (static_cast<int64_t>(p.size()) < kPoints) p.push_back(u(rng));
  return p;
}

struct Stats {
  double max_ulp = 0;
  float worst_x = 0, worst_y = 0;
  int64_t special_mismatch = 0;
  std::string first_special;
};

void compare(const std::vector<float>& x, const std::vector<float>* y2, const float* got,
             const std::function<double(double, double)>& ref, Stats& s) {
  for (size_t i = 0; i < x.size(); ++i) {
    double want = ref(x[i], y2 ? (*y2)[i] : 0.0);
    double g = got[i];
    auto mismatch = [&](const char* what) {
      if (s.special_mismatch++ == 0)
        s.first_special = std::string(what) + " at x=" + std::to_string(x[i]) +
                          (y2 ? " y=" + std::to_string((*y2)[i]) : "") + ": want " +
                          std::to_string(want) + " got " + std::to_string(g);
    };
    if (std::isnan(want)) {
      if (!std::isnan(g)) mismatch("NaN expected");
      continue;
    }
    double wf = static_cast<float>(want);  // the float32 the exact result rounds to
    if (std::isinf(wf)) {
      // An exact result beyond FLT_MAX rounds to inf; allow the largest finite as 1 ulp off.
      if (!(g == wf || (std::isfinite(g) && std::fabs(g) == std::numeric_limits<float>::max() &&
                        std::signbit(g) == std::signbit(wf))))
        mismatch("infinity expected");
      continue;
    }
    if (std::isnan(g) || std::isinf(g)) {
      mismatch("finite result expected");
      continue;
    }
    if (wf == 0 && g == 0 && std::signbit(wf) != std::signbit(g) && want != 0)
      continue;  // underflow sign is not tested
    double err = std::fabs(g - want) / ulp_of(want);
    if (err > s.max_ulp) {
      s.max_ulp = err;
      s.worst_x = x[i];
      s.worst_y = static_cast<float>(g);
    }
  }
}

const TargetInfo& host() {
  return TargetInfo::host();
}

// The host, and the x86 CPUs below it whose code runs here: an AVX2 one (haswell: exp scaled by
// integer instructions, without AVX-512's vscalefps and 14-bit reciprocal) and baseline x86-64
// (SSE2: no FMA). Each builds its own math, so each is measured.
std::vector<TargetInfo> targets() {
  std::vector<TargetInfo> r = {host()};
  if (!host().is_x86()) return r;
  for (const char* cpu : {"haswell", "x86-64"}) {
    TargetInfo t = TargetInfo::create({"x86_64-linux-gnu", cpu});
    if (t.runs_here() && t.features() != host().features()) r.push_back(t);
  }
  return r;
}

void check_unary(Tensor (Tensor::*fn)() const, double (*ref)(double), float lo, float hi,
                 const char* name) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {kPoints});
  g.add_output("y", (x.*fn)().uop());
  Plan p = plan_graph(g, {});
  std::vector<float> pts = test_points(std::hash<std::string>{}(name), lo, hi);
  NDArray in(dtypes::float32, {kPoints});
  std::memcpy(in.data(), pts.data(), pts.size() * 4);
  for (const TargetInfo& t : targets()) {
    JitProgram jit(p, t);
    auto out = jit.run(g, {{"x", in}});
    Stats s;
    compare(
        pts, nullptr, reinterpret_cast<const float*>(out.at("y").data()),
        [ref](double a, double) { return ref(a); }, s);
    std::printf("%-8s %-14s max error %.3f ulp at x=%.9g (got %.9g), %lld points\n", name,
                t.cpu().c_str(), s.max_ulp, s.worst_x, s.worst_y, static_cast<long long>(kPoints));
    EXPECT_LE(s.max_ulp, 4.0) << name << " on " << t.cpu() << " at x=" << s.worst_x;
    EXPECT_EQ(s.special_mismatch, 0) << name << " on " << t.cpu() << ": " << s.first_special;
  }
}

double ref_sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double ref_exp(double x) {
  return std::exp(x);
}
double ref_exp2(double x) {
  return std::exp2(x);
}
double ref_log(double x) {
  return std::log(x);
}
double ref_log2(double x) {
  return std::log2(x);
}
double ref_sin(double x) {
  return std::sin(x);
}
double ref_cos(double x) {
  return std::cos(x);
}
double ref_tanh(double x) {
  return std::tanh(x);
}
double ref_erf(double x) {
  return std::erf(x);
}
double ref_sqrt(double x) {
  return std::sqrt(x);
}
double ref_recip(double x) {
  return 1.0 / x;
}

TEST(Mathlib, Exp) {
  check_unary(&Tensor::exp, ref_exp, -104.0f, 89.0f, "exp");
}
TEST(Mathlib, Exp2) {
  check_unary(&Tensor::exp2, ref_exp2, -151.0f, 129.0f, "exp2");
}
TEST(Mathlib, Log) {
  check_unary(&Tensor::log, ref_log, 0.0f, 100.0f, "log");
}
TEST(Mathlib, Log2) {
  check_unary(&Tensor::log2, ref_log2, 0.0f, 100.0f, "log2");
}
TEST(Mathlib, Sin) {
  check_unary(&Tensor::sin, ref_sin, -1000.0f, 1000.0f, "sin");
}
TEST(Mathlib, Cos) {
  check_unary(&Tensor::cos, ref_cos, -1000.0f, 1000.0f, "cos");
}
TEST(Mathlib, Tanh) {
  check_unary(&Tensor::tanh, ref_tanh, -10.0f, 10.0f, "tanh");
}
TEST(Mathlib, Erf) {
  check_unary(&Tensor::erf, ref_erf, -5.0f, 5.0f, "erf");
}
TEST(Mathlib, Sigmoid) {
  check_unary(&Tensor::sigmoid, ref_sigmoid, -100.0f, 100.0f, "sigmoid");
}
TEST(Mathlib, SqrtAndReciprocalAreExact) {
  check_unary(&Tensor::sqrt, ref_sqrt, 0.0f, 1e6f, "sqrt");
  check_unary(&Tensor::recip, ref_recip, -10.0f, 10.0f, "recip");
}

TEST(Mathlib, Pow) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float32, {kPoints});
  Tensor y = Tensor::input(g, "y", dtypes::float32, {kPoints});
  g.add_output("z", x.pow(y).uop());
  Plan p = plan_graph(g, {});
  JitProgram jit(p, host());
  std::vector<float> xs = test_points(11, 0.0f, 20.0f), ys = test_points(12, -30.0f, 30.0f);
  // Negative bases with integer exponents, and the C99 special cases, explicitly.
  std::mt19937_64 rng(13);
  for (int i = 0; i < 100000; ++i) {
    xs[static_cast<size_t>(i)] = -std::uniform_real_distribution<float>(0.0f, 4.0f)(rng);
    ys[static_cast<size_t>(i)] =
        static_cast<float>(std::uniform_int_distribution<int>(-40, 40)(rng));
  }
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  const float sx[] = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, 2.0f, -2.0f, 0.5f, -0.5f};
  const float sy[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 3.0f, -3.0f, 0.5f, -0.5f, inf, -inf, nan};
  size_t k = 100000;
  for (float a : sx)
    for (float b : sy) {
      xs[k] = a;
      ys[k++] = b;
    }
  NDArray in_x(dtypes::float32, {kPoints}), in_y(dtypes::float32, {kPoints});
  std::memcpy(in_x.data(), xs.data(), xs.size() * 4);
  std::memcpy(in_y.data(), ys.data(), ys.size() * 4);
  auto out = jit.run(g, {{"x", in_x}, {"y", in_y}});
  Stats s;
  compare(
      xs, &ys, reinterpret_cast<const float*>(out.at("z").data()),
      [](double a, double b) { return std::pow(a, b); }, s);
  std::printf("%-8s max error %.3f ulp at x=%.9g (got %.9g), %lld points\n", "pow", s.max_ulp,
              s.worst_x, s.worst_y, static_cast<long long>(kPoints));
  EXPECT_LE(s.max_ulp, 4.0);
  EXPECT_EQ(s.special_mismatch, 0) << s.first_special;
}

}  // namespace
}  // namespace kiln
