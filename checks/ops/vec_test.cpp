// The vectorized elementwise kernels at every capability level this CPU runs (backend/cpu/vec):
// accuracy in ulps against glibc (the bounds of README's table), and float <-> float16 / bfloat16
// conversions bit-exact with core/half.hpp, every 16-bit pattern and a sweep of floats.
// NOTE: the claims here ARE about bits and ulps, so they compare bits.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "gradlab/backend/cpu/vec/vec.hpp"
#include "gradlab/core/cpu_capability.hpp"
#include "gradlab/core/half.hpp"

namespace {

using gradlab::cpu::vec::Capability;
using gradlab::cpu::vec::Kernels;
using gradlab::math::Unary;

std::vector<Capability> levels() {
  std::vector<Capability> out;
  for (Capability c : {Capability::Default, Capability::Avx2, Capability::Avx512}) {
    if (gradlab::cpu::vec::kernels_for(c)) out.push_back(c);
    else std::printf("[ note ] level %d: this CPU does not run it; skipped\n", static_cast<int>(c));
  }
  return out;
}

// Distance in units in the last place: floats mapped to integers that count up monotonically
// (-0 and +0 both 0); NaN vs NaN is 0 and NaN vs a number is "infinite".
template <class T>
double ulps(T got, T want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? 0 : INFINITY;
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto ordered = [](T v) {
    I i;
    std::memcpy(&i, &v, sizeof v);
    return i < 0 ? -(i & std::numeric_limits<I>::max()) : i;
  };
  const I a = ordered(got), b = ordered(want);
  // NOTE: subtract as integers (a double holds int64 only to 2^53); opposite signs cannot overflow
  // in double's favour, so they go through double (the distance is huge anyway).
  if ((a < 0) == (b < 0)) return static_cast<double>(a > b ? a - b : b - a);
  return std::abs(static_cast<double>(a) - static_cast<double>(b));
}

// Inputs: the edge cases, an even sweep over all bit patterns (every sign, exponent and
// subnormal), and uniform values where the functions curve.
template <class T>
std::vector<T> inputs() {
  constexpr T inf = std::numeric_limits<T>::infinity();
  std::vector<T> v = {T(0), -T(0), inf, -inf, std::numeric_limits<T>::quiet_NaN(),
                      std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min(),
                      std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), -std::numeric_limits<T>::max(),
                      T(1), T(-1), T(0.5), T(1e-8), T(-1e-8), T(20), T(-20), T(100), T(-100)};
  // exp's overflow threshold and its neighbours: log(max) rounded, one ulp either side
  const T edge = std::log(std::numeric_limits<T>::max());
  for (T e : {edge, -edge, std::nextafter(edge, inf), std::nextafter(edge, T(0))}) v.push_back(e);
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const U step = std::numeric_limits<U>::max() / 200003;
  for (U bits = 0; bits < std::numeric_limits<U>::max() - step; bits += step) {
    T x;
    std::memcpy(&x, &bits, sizeof x);
    v.push_back(x);
  }
  std::mt19937_64 rng(28);
  std::uniform_real_distribution<double> u(-12, 12);
  for (int i = 0; i < 100000; ++i) v.push_back(static_cast<T>(u(rng)));
  while (v.size() % 64) v.push_back(T(0.25));  // whole batches at every width
  return v;
}

struct Fn {
  const char* name;
  Unary op;
  double (*ref)(double);  // glibc in double: rounded to float it is the float reference
  double max_ulp_f32, max_ulp_f64;  // README's table
};
double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
// The table. The float reference is glibc's double function rounded to float (within 0.5 ulp of
// the exact value); the double reference is glibc's double function.
const Fn kFns[] = {
    {"exp", Unary::Exp, [](double x) { return std::exp(x); }, 1, 1},
    {"expm1", Unary::Expm1, [](double x) { return std::expm1(x); }, 2, 2},
    {"log", Unary::Log, [](double x) { return std::log(x); }, 1, 1},
    {"sin", Unary::Sin, [](double x) { return std::sin(x); }, 2, 1},
    {"cos", Unary::Cos, [](double x) { return std::cos(x); }, 1, 1},
    {"tanh", Unary::Tanh, [](double x) { return std::tanh(x); }, 1, 2},
    // NOTE: float32 erf is gradlab's polynomial (vec/level.hpp): 4 ulps, 5 at the default level
    // (SSE2 has no FMA; kErfF32DefaultUlps; VecMath.Float32Erf* below); xsimd's float64 erf is the least accurate row: 67 ulps (1.5e-14 relative) near x = 2.2
    {"erf", Unary::Erf, [](double x) { return std::erf(x); }, 4, 70},
    {"sigmoid", Unary::Sigmoid, sigmoid_ref, 2, 2},
};

// float32 erf at the default level: SSE2 has no FMA, each Horner step rounds twice.
constexpr double kErfF32DefaultUlps = 5;
double bound_f32(const Fn& fn, Capability c) {
  return fn.op == Unary::Erf && c == Capability::Default ? kErfF32DefaultUlps : fn.max_ulp_f32;
}

template <class T>
double max_ulp(const Kernels& k, const Fn& fn, const std::vector<T>& x, T* worst) {
  std::vector<T> y(x.size());
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t m = gradlab::cpu::vec::unary(k, fn.op, x.data(), y.data(), n, T(0), T(0));
  EXPECT_EQ(m, n) << fn.name << ": every element in whole batches";
  double worst_ulp = 0;
  for (int64_t i = 0; i < m; ++i) {
    // NOTE: sin / cos of huge arguments: xsimd reduces the argument in a way that loses all
    // precision past ~1e5 (float) / 1e15 (double); the bound is stated on |x| <= 1e4.
    if ((fn.op == Unary::Sin || fn.op == Unary::Cos) && std::abs(x[i]) > T(1e4)) continue;
    const T want = static_cast<T>(fn.ref(static_cast<double>(x[i])));
    // Stated apart (README): a result below the smallest normal number (exp(x) for x < -87.3 in
    // float32, -708.4 in float64; sigmoid below that) may flush to 0, an absolute error below
    // that number; a result within a factor 1.5 of the largest number (expm1(x) for x > 88.37 in
    // float32) may overflow to inf. Both are asserted here, outside the ulp count.
    if (std::abs(want) < std::numeric_limits<T>::min()) {
      EXPECT_LT(std::abs(y[i]), std::numeric_limits<T>::min()) << k.name << " " << fn.name << " at x = " << x[i];
      continue;
    }
    if (std::isinf(y[i]) && std::isfinite(want) && std::abs(want) > std::numeric_limits<T>::max() / T(1.5)) continue;
    const double d = ulps(y[i], want);
    if (d > worst_ulp) worst_ulp = d, *worst = x[i];
  }
  return worst_ulp;
}

TEST(VecMath, UlpsAgainstGlibcAtEveryLevel) {
  const auto xf = inputs<float>();
  const auto xd = inputs<double>();
  for (Capability c : levels()) {
    const Kernels& k = *gradlab::cpu::vec::kernels_for(c);
    for (const Fn& fn : kFns) {
      float wf = 0;
      double wd = 0;
      const double uf = max_ulp(k, fn, xf, &wf), ud = max_ulp(k, fn, xd, &wd);
      std::printf("[ ulps ] %-7s %-8s float32 %4.0f (x = %.9g)  float64 %4.0f (x = %.17g)\n", k.name, fn.name, uf,
                  static_cast<double>(wf), ud, wd);
      EXPECT_LE(uf, bound_f32(fn, c)) << k.name << " " << fn.name << " float32 at x = " << wf;
      EXPECT_LE(ud, fn.max_ulp_f64) << k.name << " " << fn.name << " float64 at x = " << wd;
    }
  }
}

// float32 erf (gradlab's polynomial, vec/level.hpp) on a dense sweep: every 127th float in
// [0, 4.5] (beyond, erf rounds to 1 and the polynomial is clamped), 8.5M values, and their
// negatives. Within 4 ulps of glibc (5 at the default level), odd bit for bit (erf(-x) = -erf(x)), never above 1 in
// magnitude (1 + erf(x) < 0 would flip gelu's sign), exactly ±1 from |x| = 4 on.
TEST(VecMath, Float32ErfDenseSweepAtEveryLevel) {
  std::vector<float> x;
  for (uint32_t b = 0; b <= std::bit_cast<uint32_t>(4.5f); b += 127) x.push_back(std::bit_cast<float>(b));
  for (float v : {3.92f, 3.93f, 3.99f, 4.0f, 4.01f, 5.0f, 1e30f}) x.push_back(v);
  while (x.size() % 64) x.push_back(4.0f);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> neg(x.size()), y(x.size()), yn(x.size());
  for (int64_t i = 0; i < n; ++i) neg[i] = -x[i];
  for (Capability c : levels()) {
    const Kernels& k = *gradlab::cpu::vec::kernels_for(c);
    ASSERT_EQ(gradlab::cpu::vec::unary(k, Unary::Erf, x.data(), y.data(), n, 0.0f, 0.0f), n);
    ASSERT_EQ(gradlab::cpu::vec::unary(k, Unary::Erf, neg.data(), yn.data(), n, 0.0f, 0.0f), n);
    double worst = 0;
    float wx = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = ulps(y[i], static_cast<float>(std::erf(static_cast<double>(x[i]))));
      if (d > worst) worst = d, wx = x[i];
      const bool odd = std::bit_cast<uint32_t>(yn[i]) == (std::bit_cast<uint32_t>(y[i]) ^ 0x80000000u);
      const bool in_range = std::abs(y[i]) <= 1.0f && (x[i] < 4.0f || y[i] == 1.0f);
      if ((!odd || !in_range) && bad++ < 5)
        ADD_FAILURE() << k.name << " erf(" << x[i] << ") = " << y[i] << ", erf(" << neg[i] << ") = " << yn[i]
                      << ": want odd, |erf| <= 1, and 1 from x = 4 on";
    }
    std::printf("[ ulps ] %-7s erf float32 dense sweep: %.0f (x = %.9g)\n", k.name, worst, static_cast<double>(wx));
    EXPECT_LE(worst, c == Capability::Default ? kErfF32DefaultUlps : 4) << k.name << " at x = " << wx;
    EXPECT_EQ(bad, 0) << k.name;
  }
}

// gelu(x) = 0.5 x (1 + erf(x/√2)) in float32 at every level, against the formula in double with
// glibc's erf. The error is erf's, scaled by 0.5|x|: |Δ| <= 0.5 |x| 2^-21 + 2 ulp(gelu(x))
// (4 ulps of erf near ±1 is 2^-22; x/√2, 1 + erf and the products round once each). NOTE: the
// NEGATIVE tail is where relative error is large for any float erf, glibc's too: 1 + erf(x/√2)
// cancels (1 + erf(-5/√2) = 5.7e-7 is under 10 ulps of erf near -1: one ulp of erf moves
// gelu(-5) = -1.4e-6 by 10%), so the claim there is this absolute bound, plus exact values: from |x| = 4√2 ≈ 5.66 on both erfs are ±1 in
// float (glibc's from |x| ≈ 5.55), so gelu(x) is -0 for x <= -5.66 and x for x >= 5.66, the
// bits of the scalar formula, at every level. Specials as the scalar formula gives them:
// NaN -> NaN, +inf -> +inf, -inf -> NaN (-inf * 0), ±0 -> ±0.
TEST(VecMath, Float32GeluTailsAndSpecialsAtEveryLevel) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f,
                          5.55f, -5.55f, 5.6f, -5.6f, 8.0f, -8.0f, 100.0f, -100.0f, 1e30f, -1e30f,
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  for (float v = -12.0f; v <= 12.0f; v += 1.0f / 4096) x.push_back(v);  // the curve and both tails
  std::mt19937_64 rng(28);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) x.push_back(normal(rng));
  while (x.size() % 64) x.push_back(0.25f);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(x.size());
  // the scalar formula on numbers, with glibc's float erf: what a tensor's tail elements get
  auto scalar = [](float v) {
    float r = 0;
    gradlab::math::visit_unary(Unary::Gelu, [&]<class F>() { r = F{}(v, 0.0f, 0.0f); });
    return r;
  };
  for (Capability c : levels()) {
    const Kernels& k = *gradlab::cpu::vec::kernels_for(c);
    ASSERT_EQ(gradlab::cpu::vec::unary(k, Unary::Gelu, x.data(), y.data(), n, 0.0f, 0.0f), n);
    int64_t bad = 0;
    double worst = 0, worst_rel_tail = 0, scalar_rel_tail = 0;  // |Δ| / bound; |Δ| / |gelu| on [-5.5, -3]
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i], s = scalar(v);
      bool ok;
      if (!std::isfinite(v) || v == 0 || std::abs(v) >= 5.66f) {
        // specials, ±0 and the saturated tails: the same bits as the scalar formula (NaN: any NaN)
        ok = std::isnan(s) ? std::isnan(y[i]) : std::bit_cast<uint32_t>(y[i]) == std::bit_cast<uint32_t>(s);
      } else {
        const double d = static_cast<double>(v);
        const double want = 0.5 * d * (1 + std::erf(d / std::numbers::sqrt2));
        const float w = static_cast<float>(want);
        const double ulp = std::nextafter(std::abs(w), inf) - std::abs(w);
        const double bound = 0.5 * std::abs(d) * 0x1p-21 + 2 * std::max(ulp, 0x1p-149);
        const double err = std::abs(static_cast<double>(y[i]) - want);
        ok = err <= bound;
        worst = std::max(worst, err / bound);
        if (v >= -5.5f && v <= -3.0f) {
          worst_rel_tail = std::max(worst_rel_tail, err / std::abs(want));
          scalar_rel_tail = std::max(scalar_rel_tail, std::abs(static_cast<double>(s) - want) / std::abs(want));
        }
      }
      if (!ok && bad++ < 5)
        ADD_FAILURE() << k.name << " gelu(" << v << ") = " << y[i] << " (scalar formula " << s << ")";
    }
    std::printf("[ gelu ] %-7s float32: worst |error| / bound %.3f; worst relative error on [-5.5, -3] %.3g "
                "(the scalar formula with glibc's erff: %.3g)\n", k.name, worst, worst_rel_tail, scalar_rel_tail);
    EXPECT_EQ(bad, 0) << k.name;
  }
}

// float32 gelu (and its backward) takes a polynomial on vectors whose lanes all have |x| <= 3 and
// the formula elsewhere, selecting per lane (vec/level.hpp gelu_f32, gelu_backward_f32). The claim: a lane's bits are a
// function of that lane alone. The same values are run once in a sweep (most vectors all central
// or all outside) and once with every 7th element replaced by 100 (every vector, at every width,
// then holds an outside lane): the other elements' bits must be equal. And the AVX2 and AVX-512
// levels (both with FMA, 8 and 16 lanes) give the same bits: no dependence on the SIMD width.
TEST(VecMath, Float32GeluLanesIndependentOfNeighbours) {
  std::vector<float> x;
  for (float v = -3.5f; v <= 3.5f; v += 1.0f / 8192) x.push_back(v);
  for (float v : {3.0f, -3.0f, std::nextafter(3.0f, 4.0f), std::nextafter(-3.0f, -4.0f), 0.0f, -0.0f})
    x.push_back(v);
  std::mt19937_64 rng(28);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) x.push_back(normal(rng));
  while (x.size() % 64) x.push_back(0.25f);
  std::vector<float> mixed = x;
  for (size_t i = 0; i < mixed.size(); i += 7) mixed[i] = 100.0f;
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<std::vector<float>> by_level;
  for (Capability c : levels()) {
    const Kernels& k = *gradlab::cpu::vec::kernels_for(c);
    std::vector<float> y(x.size()), ym(x.size()), d(x.size()), dm(x.size());
    ASSERT_EQ(gradlab::cpu::vec::unary(k, Unary::Gelu, x.data(), y.data(), n, 0.0f, 0.0f), n);
    ASSERT_EQ(gradlab::cpu::vec::unary(k, Unary::Gelu, mixed.data(), ym.data(), n, 0.0f, 0.0f), n);
    // the backward, dy = 1.5 broadcast: its own polynomial the same way
    const float dy = 1.5f;
    ASSERT_EQ(gradlab::cpu::vec::binary(k, gradlab::math::Binary::GeluBackward, &dy, true, x.data(), false, d.data(), n), n);
    ASSERT_EQ(gradlab::cpu::vec::binary(k, gradlab::math::Binary::GeluBackward, &dy, true, mixed.data(), false, dm.data(), n), n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i % 7 != 0 && std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(ym[i]) && bad++ < 5)
        ADD_FAILURE() << k.name << " gelu(" << x[i] << ") = " << y[i] << " in a sweep, " << ym[i]
                      << " beside an element of 100";
      if (i % 7 != 0 && std::bit_cast<uint32_t>(d[i]) != std::bit_cast<uint32_t>(dm[i]) && bad++ < 5)
        ADD_FAILURE() << k.name << " gelu_backward(1.5, " << x[i] << ") = " << d[i] << " in a sweep, " << dm[i]
                      << " beside an element of 100";
    }
    EXPECT_EQ(bad, 0) << k.name;
    y.insert(y.end(), d.begin(), d.end());
    if (c != Capability::Default) by_level.push_back(y);
  }
  if (by_level.size() == 2) {
    int64_t differ = 0;
    for (int64_t i = 0; i < 2 * n; ++i)
      if (std::bit_cast<uint32_t>(by_level[0][i]) != std::bit_cast<uint32_t>(by_level[1][i]) && differ++ < 5)
        ADD_FAILURE() << (i < n ? "gelu(" : "gelu_backward(1.5, ") << x[i % n] << "): avx2 " << by_level[0][i]
                      << ", avx512 " << by_level[1][i];
    EXPECT_EQ(differ, 0);
  } else {
    std::printf("[ note ] avx2 vs avx512 not compared: this CPU runs %zu of them\n", by_level.size());
  }
}

// gelu's backward, one pass: dx = dy (Φ(x) + x φ(x)) (the formula line GeluBackward, erf and exp
// on batches), at every level, against the same in double with glibc's erfc (no cancellation for
// x < 0). The error: erf's (4 ulps near ±1, 5 at the default level: under 2^-22 absolute in Φ, and
// 1 + erf, 0.5 * round once more) and exp's (1 ulp, 2^-23 relative in x φ(x)), then the sum and
// the product round: |Δ| <= |dy| 2^-21 (1 + |x φ(x)|) + 2 ulp(dx). float64 the same with xsimd's
// erf (67 ulps): |Δ| <= |dy| 2^-45 + 2 ulp(dx). Inputs: x over [-12, 12] and its specials,
// dy = 1.5 and a unit normal (so dy's sign and size vary).
TEST(VecMath, GeluBackwardAgainstReferenceAtEveryLevel) {
  const auto ref = [](double g, double x) {
    return g * (0.5 * std::erfc(-x / std::numbers::sqrt2) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi));
  };
  std::vector<double> xs;
  for (double v = -12; v <= 12; v += 1.0 / 1024) xs.push_back(v);
  std::mt19937_64 rng(28);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int i = 0; i < 50000; ++i) xs.push_back(normal(rng));
  while (xs.size() % 64) xs.push_back(0.25);
  std::vector<double> gs(xs.size());
  for (size_t i = 0; i < gs.size(); ++i) gs[i] = i % 2 ? 1.5 : normal(rng);
  auto run = [&]<class T>(const Kernels& k, double rel) {
    std::vector<T> x(xs.begin(), xs.end()), g(gs.begin(), gs.end()), out(xs.size());
    const int64_t n = static_cast<int64_t>(x.size());
    EXPECT_EQ(gradlab::cpu::vec::binary(k, gradlab::math::Binary::GeluBackward, g.data(), false, x.data(), false,
                                        out.data(), n), n);
    double worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xd = static_cast<double>(x[i]), gd = static_cast<double>(g[i]), want = ref(gd, xd);
      const T w = static_cast<T>(want);
      const double ulp = std::nextafter(std::abs(w), std::numeric_limits<T>::infinity()) - std::abs(w);
      const double pdf = std::exp(-0.5 * xd * xd) / std::sqrt(2 * std::numbers::pi);
      const double bound = std::abs(gd) * rel * (1 + std::abs(xd * pdf)) + 2 * ulp;
      const double err = std::abs(static_cast<double>(out[i]) - want);
      worst = std::max(worst, err / bound);
      if (!(err <= bound) && bad++ < 5)
        ADD_FAILURE() << k.name << " gelu_backward(dy = " << g[i] << ", x = " << x[i] << ") = " << out[i]
                      << ", want " << want;
    }
    std::printf("[ gelu backward ] %-7s %s: worst |error| / bound %.3f\n", k.name, sizeof(T) == 4 ? "float32" : "float64", worst);
    EXPECT_EQ(bad, 0) << k.name;
  };
  for (Capability c : levels()) {
    const Kernels& k = *gradlab::cpu::vec::kernels_for(c);
    run.template operator()<float>(k, 0x1p-21);
    run.template operator()<double>(k, 0x1p-45);
  }
}

TEST(VecMath, CapabilityIsOneOfTheLevels) {
  const std::string c = gradlab::cpu_capability();
  EXPECT_TRUE(c == "default" || c == "avx2" || c == "avx512") << c;
  if (const char* env = std::getenv("GRADLAB_CPU_CAPABILITY")) {
    const std::string want = env;
    const bool runs = (want == "default") || (want == "avx2" && gradlab::cpu::vec::kernels_for(Capability::Avx2)) ||
                      (want == "avx512" && gradlab::cpu::vec::kernels_for(Capability::Avx512));
    if (runs) {
      EXPECT_EQ(c, want) << "GRADLAB_CPU_CAPABILITY forces the level";
    }
  }
}

// ---- half types: bit-exact with core/half.hpp -----------------------------------------------------

std::vector<float> float_sweep() {
  std::vector<float> v;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  // NaNs with payloads (quiet and signalling), ±inf, the f16 overflow edge (65504, 65520), the
  // f16 subnormal edge (2^-24, 2^-25 = a tie to 0), and exact ties of both formats
  for (uint32_t b : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0x7FBFFFFFu, 0xFFFFFFFFu, 0x7F800000u, 0xFF800000u,
                     0x477FE000u, 0x477FF000u, 0x477FEFFFu, 0x33800000u, 0x33000000u, 0x33000001u, 0x3F808000u,
                     0x3F818000u, 0x3F801000u, 0x3F803000u, 0x00000001u, 0x807FFFFFu})
    v.push_back(std::bit_cast<float>(b));
  // every 16-bit value of both formats, and the ties halfway to the next one
  for (uint32_t h = 0; h < 65536; ++h) {
    v.push_back(std::bit_cast<float>(h << 16));
    v.push_back(std::bit_cast<float>(h << 16 | 0x8000u));
    const float a = gradlab::half_to_float({static_cast<uint16_t>(h)});
    const float b = gradlab::half_to_float({static_cast<uint16_t>(h + 1)});
    v.push_back(a);
    if ((h & 0x7FFFu) < 0x7BFFu) v.push_back(static_cast<float>((static_cast<double>(a) + b) / 2));
  }
  while (v.size() % 64) v.push_back(1.0f);
  return v;
}

TEST(VecHalf, FromFloatBitExactAtEveryLevel) {
  const auto x = float_sweep();
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> y(x.size());
  for (Capability c : levels()) {
    const Kernels& k = *gradlab::cpu::vec::kernels_for(c);
#if defined(__x86_64__) || defined(__i386__)
    ASSERT_EQ(k.bf16_from_f32(x.data(), y.data(), n), n) << k.name;
#else
    ASSERT_EQ(k.bf16_from_f32(x.data(), y.data(), n), 0) << k.name << ": scalar off x86 (vec/level.hpp)";
    continue;
#endif
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i)
      if (y[i] != gradlab::bf16_from_float(x[i]).bits && bad++ < 5)
        ADD_FAILURE() << k.name << " bf16 of bits 0x" << std::hex << std::bit_cast<uint32_t>(x[i]) << ": got 0x" << y[i]
                      << ", want 0x" << gradlab::bf16_from_float(x[i]).bits;
    const int64_t m = k.f16_from_f32(x.data(), y.data(), n);
    if (c == Capability::Default) {
      EXPECT_EQ(m, 0) << "f16 at the default level is scalar";
    }
    for (int64_t i = 0; i < m; ++i)
      if (y[i] != gradlab::half_from_float(x[i]).bits && bad++ < 10)
        ADD_FAILURE() << k.name << " f16 of bits 0x" << std::hex << std::bit_cast<uint32_t>(x[i]) << ": got 0x" << y[i]
                      << ", want 0x" << gradlab::half_from_float(x[i]).bits;
    EXPECT_EQ(bad, 0) << k.name;
  }
}

TEST(VecHalf, ToFloatBitExactForEvery16BitPattern) {
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> y(h.size());
  for (Capability c : levels()) {
    const Kernels& k = *gradlab::cpu::vec::kernels_for(c);
    int64_t bad = 0;
#if defined(__x86_64__) || defined(__i386__)
    ASSERT_EQ(k.bf16_to_f32(h.data(), y.data(), 65536), 65536) << k.name;
#else
    ASSERT_EQ(k.bf16_to_f32(h.data(), y.data(), 65536), 0) << k.name << ": scalar off x86 (vec/level.hpp)";
    continue;
#endif
    for (uint32_t i = 0; i < 65536; ++i)
      if (std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(gradlab::bf16_to_float({h[i]})) && bad++ < 5)
        ADD_FAILURE() << k.name << " bf16 0x" << std::hex << i;
    const int64_t m = k.f16_to_f32(h.data(), y.data(), 65536);
    EXPECT_EQ(m, c == Capability::Default ? 0 : 65536) << k.name;
    for (int64_t i = 0; i < m; ++i)
      if (std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(gradlab::half_to_float({h[i]})) && bad++ < 10)
        ADD_FAILURE() << k.name << " f16 0x" << std::hex << i << ": got 0x" << std::bit_cast<uint32_t>(y[i])
                      << ", want 0x" << std::bit_cast<uint32_t>(gradlab::half_to_float({h[i]}));
    EXPECT_EQ(bad, 0) << k.name;
  }
}

}  // namespace
