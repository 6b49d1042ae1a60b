// Accuracy of the float64 math library against long-double libm: for each function, 2^18
// float64 points (random bit patterns over the whole range, a sweep of the useful range, and
// special values) computed by a compiled, vectorized kernel. The error is measured in float64
// ulps of the (long double) exact result; IEEE special values must match.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/driver/compile.h"
#include "compiler/jit/jit.h"
#include "compiler/target/target_info.h"
#include "compiler/tensor/tensor.h"

namespace kiln {
namespace {

constexpr int64_t kPoints = 1 << 18;

const TargetInfo& host() {
  return TargetInfo::host();
}

// One float64 ulp at the magnitude of `x`.
long double ulp_of(long double x) {
  x = std::fabs(x);
  if (x < std::ldexp(1.0L, -1022)) return std::ldexp(1.0L, -1074);
  int e;
  std::frexp(x, &e);
  return std::ldexp(1.0L, e - 53);
}

std::vector<double> points(uint64_t seed, double lo, double hi) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> p = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.5,
                           2.0,
                           inf,
                           -inf,
                           std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::max(),
                           709.78,
                           709.79,
                           -745.1,
                           -745.2,
                           1e-300,
                           1e300,
                           0.34,
                           0.36,
                           1e-9};
  std::mt19937_64 rng(seed);
  while (p.size() < kPoints / 3) p.push_back(std::bit_cast<double>(rng()));
  std::uniform_real_distribution<double> u(lo, hi);
  while (static_cast<int64_t>(p.size()) < kPoints) p.push_back(u(rng));
  return p;
}

struct Result {
  double max_ulp = 0, worst_x = 0;
  int64_t special_mismatch = 0;
  std::string first_special;
};

Result measure(const std::vector<double>& x, const std::vector<double>* y, const double* got,
               long double (*ref)(long double, long double)) {
  Result r;
  for (size_t i = 0; i < x.size(); ++i) {
    long double want = ref(x[i], y ? (*y)[i] : 0.0);
    double wd = static_cast<double>(want), g = got[i];
    auto mismatch = [&](const char* what) {
      if (r.special_mismatch++ == 0)
        r.first_special = std::string(what) + " at x=" + std::to_string(x[i]) +
                          (y ? " y=" + std::to_string((*y)[i]) : "") + ": want " +
                          std::to_string(wd) + " got " + std::to_string(g);
    };
    if (std::isnan(wd)) {
      if (!std::isnan(g)) mismatch("NaN expected");
      continue;
    }
    if (std::isinf(wd)) {
      if (g != wd && !(std::fabs(g) == std::numeric_limits<double>::max()))
        mismatch("infinity expected");
      continue;
    }
    if (std::isnan(g) || std::isinf(g)) {
      mismatch("finite result expected");
      continue;
    }
    double err = static_cast<double>(std::fabs(static_cast<long double>(g) - want) / ulp_of(want));
    if (err > r.max_ulp) {
      r.max_ulp = err;
      r.worst_x = x[i];
    }
  }
  return r;
}

void check(Tensor (Tensor::*fn)() const, long double (*ref)(long double, long double), double lo,
           double hi, const char* name, double max_ulp) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float64, {kPoints});
  g.add_output("y", (x.*fn)().uop());
  Plan p = plan_graph(g, {});
  JitProgram jit(p, host());
  std::vector<double> pts = points(std::hash<std::string>{}(name), lo, hi);
  NDArray in(dtypes::float64, {kPoints});
  std::memcpy(in.data(), pts.data(), pts.size() * 8);
  auto out = jit.run(g, {{"x", in}});
  Result r = measure(pts, nullptr, reinterpret_cast<const double*>(out.at("y").data()), ref);
  std::printf("%-8s float64 max error %.3f ulp at x=%.17g\n", name, r.max_ulp, r.worst_x);
  EXPECT_LE(r.max_ulp, max_ulp) << name << " at x=" << r.worst_x;
  EXPECT_EQ(r.special_mismatch, 0) << name << ": " << r.first_special;
}

TEST(MathlibF64, Exp) {
  check(&Tensor::exp, [](long double x, long double) { return std::exp(x); }, -746, 710, "exp", 2);
}
TEST(MathlibF64, Exp2) {
  check(
      &Tensor::exp2, [](long double x, long double) { return std::exp2(x); }, -1075, 1025, "exp2",
      2);
}
TEST(MathlibF64, Log) {
  check(&Tensor::log, [](long double x, long double) { return std::log(x); }, 0, 100, "log", 2);
}
TEST(MathlibF64, Log2) {
  check(&Tensor::log2, [](long double x, long double) { return std::log2(x); }, 0, 100, "log2", 2);
}
TEST(MathlibF64, Tanh) {
  check(&Tensor::tanh, [](long double x, long double) { return std::tanh(x); }, -20, 20, "tanh", 4);
}
TEST(MathlibF64, Sigmoid) {
  check(
      &Tensor::sigmoid, [](long double x, long double) { return 1 / (1 + std::exp(-x)); }, -40, 40,
      "sigmoid", 4);
}

TEST(MathlibF64, Pow) {
  Graph g;
  Tensor x = Tensor::input(g, "x", dtypes::float64, {kPoints});
  Tensor y = Tensor::input(g, "y", dtypes::float64, {kPoints});
  g.add_output("z", x.pow(y).uop());
  Plan p = plan_graph(g, {});
  JitProgram jit(p, host());
  std::vector<double> xs = points(21, 0, 20), ys = points(22, -30, 30);
  std::mt19937_64 rng(23);
  for (int i = 0; i < 20000; ++i) {  // negative bases with integer exponents
    xs[static_cast<size_t>(i)] = -std::uniform_real_distribution<double>(0, 4)(rng);
    ys[static_cast<size_t>(i)] = std::uniform_int_distribution<int>(-40, 40)(rng);
  }
  NDArray in_x(dtypes::float64, {kPoints}), in_y(dtypes::float64, {kPoints});
  std::memcpy(in_x.data(), xs.data(), xs.size() * 8);
  std::memcpy(in_y.data(), ys.data(), ys.size() * 8);
  auto out = jit.run(g, {{"x", in_x}, {"y", in_y}});
  Result r = measure(xs, &ys, reinterpret_cast<const double*>(out.at("z").data()),
                     [](long double a, long double b) { return std::pow(a, b); });
  std::printf("pow      float64 max error %.3f ulp at x=%.17g\n", r.max_ulp, r.worst_x);
  // exp2(y * log2 x) in double: the error grows with |y log2 x| (about 1e-13 relative at the
  // extremes of the range), documented in docs/codegen.md.
  EXPECT_LE(r.max_ulp, 2048);
  EXPECT_EQ(r.special_mismatch, 0) << r.first_special;
}

}  // namespace
}  // namespace kiln
