// The CPU executor of fused programs (backend/cpu/fused.cpp): its arithmetic and unary steps run
// the eager kernels' own loops at the CPU's level, so a compiled chain equals the eager chain bit
// for bit at every level (ctest capability_<level>_fused runs these under each forced
// GRADLAB_CPU_CAPABILITY), for odd sizes, non-contiguous and broadcast inputs; and its tiles and
// reductions split over threads so every result is bit-identical for any thread count.

#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>

#include <gradlab/gradlab.hpp>
#include <gradlab/jit/compile.hpp>

using namespace gradlab;

namespace {

// Elementwise ops only, so the whole function is one fused region; transcendental steps (exp,
// tanh, sigmoid) are where a level's vector code and another's differ in the last bits.
std::vector<Tensor> chain(const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &w = in[1];
  return {relu(x * 2 + 1) - exp(x * 0.5) * sigmoid(w) + tanh(x * w) / 3};
}

// The numbers of elements around the tile (1024), the SIMD widths and the threading grain
// (32768), and past 8 MiB, where outputs leave with streaming stores.
const int64_t kSizes[] = {1, 7, 63, 1023, 1025, 3 * 1024 + 17, 70001, (int64_t{1} << 21) + 37};

// Which elements differ, for a failure message.
std::string first_difference(const Tensor& a, const Tensor& b) {
  Tensor fa = a.contiguous().reshape({-1}), fb = b.contiguous().reshape({-1});
  for (int64_t i = 0; i < fa.numel(); ++i) {
    const double u = fa[i].item<double>(), v = fb[i].item<double>();
    if (!(u == v) && !(std::isnan(u) && std::isnan(v)))
    {
      std::ostringstream os;
      os << std::setprecision(17) << "element " << i << ": " << u << " vs " << v;
      return os.str();
    }
  }
  return "none";
}

TEST(FusedCpu, CompiledEqualsEagerBitwiseAtThisLevel) {
  manual_seed(7);
  for (int64_t n : kSizes) {
    auto f = jit::compile(chain);
    // contiguous, same shape
    std::vector<Tensor> in = {randn({n}) * 3, randn({n})};
    Tensor y = f(in)[0], ref = chain(in)[0];
    ASSERT_EQ(f.fused_regions(), 1) << f.report();
    EXPECT_TRUE(equal(y, ref)) << "n=" << n << " level " << cpu_capability() << ": " << first_difference(y, ref);
  }
}

TEST(FusedCpu, NonContiguousAndBroadcastInputsEqualEagerBitwise) {
  manual_seed(8);
  for (int64_t n : {int64_t{3}, int64_t{33}, int64_t{257}}) {
    auto f = jit::compile(chain);
    // x transposed (strided: gathered tile by tile), w one row broadcast over the rows
    std::vector<Tensor> in = {(randn({n, 131}) * 3).t(), randn({n})};
    ASSERT_FALSE(in[0].is_contiguous());
    Tensor y = f(in)[0], ref = chain(in)[0];
    EXPECT_TRUE(equal(y, ref)) << "[131, " << n << "] level " << cpu_capability() << ": " << first_difference(y, ref);
    // a column broadcast: [n, 1] against [n, 131]; and a broadcast single value
    std::vector<Tensor> in2 = {randn({n, 131}), randn({n, 1})};
    Tensor y2 = f(in2)[0], ref2 = chain(in2)[0];
    EXPECT_TRUE(equal(y2, ref2)) << "[n, 1] level " << cpu_capability() << ": " << first_difference(y2, ref2);
    std::vector<Tensor> in3 = {randn({n, 131}), randn({1})};
    Tensor y3 = f(in3)[0], ref3 = chain(in3)[0];
    EXPECT_TRUE(equal(y3, ref3)) << "[1] level " << cpu_capability() << ": " << first_difference(y3, ref3);
  }
}

// Whole outputs, a sum of everything and row sums, with rows shorter than a tile, longer than
// one, and not dividing it: the same bits at 1, 2 and 3 threads.
TEST(FusedCpu, BitIdenticalForAnyThreadCount) {
  auto f = jit::compile([](const std::vector<Tensor>& in) {
    Tensor d = in[0] * in[1] - in[1];
    return std::vector<Tensor>{exp(d * 0.1) + d, (d * d).sum(), tanh(d).sum({-1})};
  });
  const int before = get_num_threads();
  manual_seed(9);
  // float64 too: there a float32 rounding cannot hide a different order of the double sums
  for (auto [s, dt] : {std::pair{Shape{300, 997}, kFloat32}, std::pair{Shape{5, 70001}, kFloat32},
                       std::pair{Shape{40000, 3}, kFloat32}, std::pair{Shape{300, 997}, kFloat64},
                       std::pair{Shape{7, 70001}, kFloat64}, std::pair{Shape{2100, 1001}, kFloat32}}) {
    std::vector<Tensor> in = {randn(s).to(dt), randn(s).to(dt)};
    std::vector<std::vector<Tensor>> got;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      got.push_back(f(in));
    }
    set_num_threads(before);
    ASSERT_GE(f.fused_regions(), 1) << f.report();
    for (size_t t = 1; t < got.size(); ++t)
      for (size_t k = 0; k < got[0].size(); ++k)
        EXPECT_TRUE(equal(got[t][k], got[0][k]))
            << to_string(dt) << shape_str(s) << " output " << k << ", " << t + 1 << " threads vs 1: " << first_difference(got[t][k], got[0][k]);
    // and right, not only repeatable (float64 reference)
    Tensor d = in[0].to(kFloat64) * in[1].to(kFloat64) - in[1].to(kFloat64);
    EXPECT_TRUE(allclose(got[1][1].to(kFloat64), (d * d).sum(), 1e-5, 1e-3)) << shape_str(s);
    EXPECT_TRUE(allclose(got[1][2].to(kFloat64), tanh(d).sum({-1}), 1e-5, 1e-3)) << shape_str(s);
  }
}

}  // namespace

namespace {

// A training call saves, besides references to its inputs, only the costly values its backward
// reads: exp's derivative reads y (saved: one more tensor of the input's size), sin's reads
// cos(x) (recomputed: nothing more); without grad nothing is saved.
TEST(CompileSaving, SavesOnlyWhatTheBackwardReads) {
  const int64_t n = int64_t{1} << 18;
  const double bytes = 4.0 * static_cast<double>(n);
  auto held_by_call = [&](auto fn, bool grad) {
    auto f = jit::compile(fn);
    Tensor x = randn({n});
    x.requires_grad_(grad);
    (void)f(x);  // traces
    const double before = static_cast<double>(memory::allocated());
    Tensor y = f(x);
    const double held = static_cast<double>(memory::allocated()) - before;
    if (grad) y.sum().backward();
    EXPECT_EQ(f.fused_regions(), 1) << f.report();
    return held;
  };
  auto with_exp = [](const Tensor& x) { return exp(x * 2) + 1; };
  auto with_sin = [](const Tensor& x) { return sin(x * 2) + 1; };
  EXPECT_NEAR(held_by_call(with_exp, true), 2 * bytes, 4096);   // y and exp(2x)
  EXPECT_NEAR(held_by_call(with_sin, true), bytes, 4096);       // y only
  EXPECT_NEAR(held_by_call(with_exp, false), bytes, 4096);
  EXPECT_NEAR(held_by_call(with_sin, false), bytes, 4096);
  // and the gradients still equal eager's
  Tensor x = randn({1000});
  x.requires_grad_(true);
  auto f = jit::compile(with_sin);
  f(x).sum().backward();
  Tensor g = x.grad().clone();
  x.zero_grad();
  with_sin(x).sum().backward();
  EXPECT_TRUE(allclose(g, x.grad(), 1e-6, 1e-6));
}

}  // namespace
