// Elementwise ops: forward values by hand, broadcasting, dtype promotion, wrapped scalars.

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "common/check_helpers.hpp"
#include "gradlab/core/parallel.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::ivals;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

// ---- binary arithmetic --------------------------------------------------------------------------

TEST(Binary, AddSubMulDivByHand) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}), b = tensor({4.0, 3.0, 2.0, 1.0});
  EXPECT_THAT(vals(add(a, b)), ElementsAre(5, 5, 5, 5));
  EXPECT_THAT(vals(sub(a, b)), ElementsAre(-3, -1, 1, 3));
  EXPECT_THAT(vals(mul(a, b)), ElementsAre(4, 6, 6, 4));
  EXPECT_THAT(vals(div(a, b)), ElementsAre(0.25, static_cast<double>(2.0f / 3.0f), 1.5, 4));
  EXPECT_THAT(vals(a + b), ElementsAre(5, 5, 5, 5));
  EXPECT_THAT(vals(a - b), ElementsAre(-3, -1, 1, 3));
  EXPECT_THAT(vals(a * b), ElementsAre(4, 6, 6, 4));
  EXPECT_THAT(vals(a / b), ElementsAre(0.25, static_cast<double>(2.0f / 3.0f), 1.5, 4));
  EXPECT_THAT(vals(a.add(b)), ElementsAre(5, 5, 5, 5));
  EXPECT_THAT(vals(-a), ElementsAre(-1, -2, -3, -4));
  EXPECT_THAT(vals(neg(a)), ElementsAre(-1, -2, -3, -4));
  EXPECT_THAT(ivals(-tensor({1, -2})), ElementsAre(-1, 2));
}

TEST(Binary, WrappedScalarsOnBothSides) {
  Tensor x = tensor({1.0, 2.0, 4.0});
  EXPECT_THAT(vals(2 * x), ElementsAre(2, 4, 8));
  EXPECT_THAT(vals(x * 2), ElementsAre(2, 4, 8));
  EXPECT_THAT(vals(x - 1.0), ElementsAre(0, 1, 3));
  EXPECT_THAT(vals(1.0 - x), ElementsAre(0, -1, -3));
  EXPECT_THAT(vals(x + 0.5), ElementsAre(1.5, 2.5, 4.5));
  EXPECT_THAT(vals(0.5 + x), ElementsAre(1.5, 2.5, 4.5));
  EXPECT_THAT(vals(x / 4), ElementsAre(0.25, 0.5, 1));
  EXPECT_THAT(vals(4 / x), ElementsAre(4, 2, 1));
  EXPECT_THAT(vals(rsub(x, 10)), ElementsAre(9, 8, 6));
  EXPECT_THAT(vals(rdiv(x, 8)), ElementsAre(8, 4, 2));
  // a number never widens the tensor: float32 stays float32, float64 stays float64
  EXPECT_EQ((2.0 * x).dtype(), kFloat32);
  EXPECT_EQ((f64({1.0}) * 2).dtype(), kFloat64);
  EXPECT_EQ((f64({1.0}) - 1.5f).dtype(), kFloat64);
}

TEST(Binary, BroadcastingFollowsNumpyRules) {
  Tensor a = tensor({1.0, 2.0}).reshape({2, 1});  // [2, 1]
  Tensor b = tensor({10.0, 20.0, 30.0});   // [3]
  Tensor c = a + b;                        // [2, 3]
  EXPECT_EQ(c.sizes(), (Shape{2, 3}));
  EXPECT_THAT(vals(c), ElementsAre(11, 21, 31, 12, 22, 32));
  Tensor d = ones({2, 1, 4}) * arange(3, kFloat32).reshape({3, 1});  // [2, 3, 4]
  EXPECT_EQ(d.sizes(), (Shape{2, 3, 4}));
  EXPECT_DOUBLE_EQ(d[1][2][3].item<double>(), 2.0);
  Tensor s = tensor(5.0) - b;  // 0-d with [3]
  EXPECT_THAT(vals(s), ElementsAre(-5, -15, -25));
  EXPECT_EQ((zeros({0, 3}) + b).sizes(), (Shape{0, 3}));
}

TEST(Binary, DtypePromotionFollowsPyTorch) {
  Tensor x32 = tensor({1.0, 2.0}), x64 = f64({0.5, 0.25}), i = tensor({1, 2}), m = tensor({true, false});
  EXPECT_EQ((x32 + x64).dtype(), kFloat64);
  EXPECT_THAT(vals(x32 + x64), ElementsAre(1.5, 2.25));
  EXPECT_EQ((x64 * x32).dtype(), kFloat64);
  EXPECT_EQ((i + 0.5).dtype(), kFloat32);  // int64 + a float number -> default float
  EXPECT_THAT(vals(i + 0.5), ElementsAre(1.5, 2.5));
  EXPECT_EQ((i * 2).dtype(), kInt64);
  EXPECT_THAT(ivals(i * 2), ElementsAre(2, 4));
  EXPECT_EQ((i + x64).dtype(), kFloat64);
  EXPECT_EQ((i / i).dtype(), kFloat32);  // true division
  EXPECT_THAT(vals(tensor({1, 3}) / tensor({2, 2})), ElementsAre(0.5, 1.5));
  EXPECT_EQ((m + i).dtype(), kInt64);
  EXPECT_THAT(ivals(m + i), ElementsAre(2, 2));
  EXPECT_EQ((m * x32).dtype(), kFloat32);
  EXPECT_THAT(vals(x32 * m), ElementsAre(1, 0));  // a bool mask multiplies as 0/1
  EXPECT_EQ((m + 1).dtype(), kInt64);
  EXPECT_EQ((m * 1.5).dtype(), kFloat32);
  // beside a tensor with dims, a 0-d tensor only raises the category (bool < int < float)
  EXPECT_EQ((x32 * tensor(2.0, kFloat64)).dtype(), kFloat32);
  EXPECT_EQ((tensor(2.0, kFloat64) - x32).dtype(), kFloat32);
  EXPECT_EQ(where(m, x32, tensor(0.0, kFloat64)).dtype(), kFloat32);
  EXPECT_EQ((i * tensor(0.5, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((m + tensor({3}).reshape({})).dtype(), kInt64);
  EXPECT_EQ((tensor(1.0) + tensor(2.0, kFloat64)).dtype(), kFloat64);  // both 0-d: plain promotion
}

// ---- comparisons, logic -------------------------------------------------------------------------

TEST(Compare, GiveBoolTensorsAndBroadcast) {
  Tensor x = tensor({1.0, 2.0, 3.0});
  EXPECT_EQ((x > 1.5).dtype(), kBool);
  EXPECT_THAT(ivals(x > 1.5), ElementsAre(0, 1, 1));
  EXPECT_THAT(ivals(x < 2), ElementsAre(1, 0, 0));
  EXPECT_THAT(ivals(x >= 2), ElementsAre(0, 1, 1));
  EXPECT_THAT(ivals(x <= 2), ElementsAre(1, 1, 0));
  EXPECT_THAT(ivals(x == 2), ElementsAre(0, 1, 0));
  EXPECT_THAT(ivals(x != 2), ElementsAre(1, 0, 1));
  EXPECT_THAT(ivals(x == tensor({1.0, 0.0, 3.0})), ElementsAre(1, 0, 1));
  EXPECT_THAT(ivals(tensor({1, 2}) < 1.5), ElementsAre(1, 0));  // int vs float number
  Tensor a = tensor({true, true, false}), b = tensor({true, false, false});
  EXPECT_THAT(ivals(a & b), ElementsAre(1, 0, 0));
  EXPECT_THAT(ivals(a | b), ElementsAre(1, 1, 0));
  EXPECT_THAT(ivals(~a), ElementsAre(0, 0, 1));
  EXPECT_THAT(ivals(x.reshape({3, 1}) > x), ElementsAre(0, 0, 0, 1, 0, 0, 1, 1, 0));
  EXPECT_THAT(ivals(isfinite(tensor({1.0, INFINITY, NAN}))), ElementsAre(1, 0, 0));
  EXPECT_THAT(ivals(isnan(tensor({1.0, INFINITY, NAN}))), ElementsAre(0, 0, 1));
  EXPECT_TRUE(allclose(tensor({1.0, 2.0}), tensor({1.0, 2.0 + 1e-7})));
  EXPECT_FALSE(allclose(tensor({1.0, 2.0}), tensor({1.0, 2.1})));
  EXPECT_TRUE(equal(tensor({1, 2}), tensor({1, 2})));
  EXPECT_FALSE(equal(tensor({1, 2}), tensor({1, 3})));
}

// ---- unary ------------------------------------------------------------------------------------

TEST(Unary, ValuesByHand) {
  Tensor x = f64({-2.0, -0.5, 0.0, 1.0, 4.0});
  EXPECT_THAT(vals(exp(x)), Near({std::exp(-2.0), std::exp(-0.5), 1, std::exp(1.0), std::exp(4.0)}, 1e-12));
  EXPECT_THAT(vals(abs(x)), ElementsAre(2, 0.5, 0, 1, 4));
  EXPECT_THAT(vals(relu(x)), ElementsAre(0, 0, 0, 1, 4));
  EXPECT_THAT(vals(leaky_relu(x, 0.1)), Near({-0.2, -0.05, 0, 1, 4}, 1e-15));
  EXPECT_THAT(vals(leaky_relu(x)), Near({-0.02, -0.005, 0, 1, 4}, 1e-15));  // default slope 0.01
  EXPECT_THAT(vals(sign(x)), ElementsAre(-1, -1, 0, 1, 1));
  EXPECT_THAT(vals(sin(x)), Near({std::sin(-2.0), std::sin(-0.5), 0, std::sin(1.0), std::sin(4.0)}, 1e-12));
  EXPECT_THAT(vals(cos(x)), Near({std::cos(-2.0), std::cos(-0.5), 1, std::cos(1.0), std::cos(4.0)}, 1e-12));
  EXPECT_THAT(vals(tanh(x)), Near({std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(1.0), std::tanh(4.0)}, 1e-12));
  // σ(0) = 1/2, σ(-x) = 1 - σ(x)
  EXPECT_THAT(vals(sigmoid(x)),
              Near({1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5, 1 / (1 + std::exp(-1.0)),
                    1 / (1 + std::exp(-4.0))}, 1e-12));
  Tensor p = f64({0.25, 1.0, 4.0, 9.0});
  EXPECT_THAT(vals(sqrt(p)), ElementsAre(0.5, 1, 2, 3));
  EXPECT_THAT(vals(log(p)), Near({std::log(0.25), 0, std::log(4.0), std::log(9.0)}, 1e-12));
  EXPECT_THAT(vals(x.exp()), Near(vals(exp(x)), 0));
  EXPECT_EQ(exp(tensor({0, 1})).dtype(), kFloat32);  // integer input -> float32
  EXPECT_THAT(ivals(abs(tensor({-3, 2}))), ElementsAre(3, 2));
}

TEST(Unary, GeluIsExact) {
  // gelu(x) = x Φ(x); Φ(1) = 0.8413447460685429, Φ(-1) = 1 - Φ(1)
  Tensor x = f64({-1.0, 0.0, 1.0, 3.0});
  const double phi1 = 0.8413447460685429;
  EXPECT_THAT(vals(gelu(x)), Near({-(1 - phi1), 0, phi1, 3 * 0.5 * (1 + std::erf(3 / std::sqrt(2.0)))}, 1e-12));
  EXPECT_THAT(vals(erf(f64({0.0, 0.5}))), Near({0.0, std::erf(0.5)}, 1e-14));
}

TEST(Unary, PowScalarAndTensorExponent) {
  Tensor x = f64({1.0, 2.0, 3.0});
  EXPECT_THAT(vals(pow(x, 2)), ElementsAre(1, 4, 9));
  EXPECT_THAT(vals(x.pow(3)), ElementsAre(1, 8, 27));
  EXPECT_THAT(vals(pow(x, 0.5)), Near({1, std::sqrt(2.0), std::sqrt(3.0)}, 1e-15));
  EXPECT_THAT(vals(pow(x, -1)), Near({1, 0.5, 1.0 / 3}, 1e-15));
  EXPECT_THAT(vals(pow(x, 0)), ElementsAre(1, 1, 1));
  EXPECT_THAT(vals(pow(x, f64({3.0, 0.5, -1.0}))), Near({1, std::sqrt(2.0), 1.0 / 3}, 1e-15));
  EXPECT_THAT(vals(pow(f64({2.0, 3.0}).reshape({2, 1}), f64({1.0, 2.0}))), ElementsAre(2, 4, 3, 9));  // broadcast
  Tensor ip = pow(tensor({2, 3}), 2);
  EXPECT_EQ(ip.dtype(), kInt64);  // integer ** integer stays integer
  EXPECT_THAT(ivals(ip), ElementsAre(4, 9));
  EXPECT_EQ(pow(tensor({2, 3}), 0.5).dtype(), kFloat32);
}

TEST(Unary, ClampMaximumMinimum) {
  Tensor x = tensor({-2.0, 0.5, 3.0});
  EXPECT_THAT(vals(clamp(x, -1.0, 1.0)), ElementsAre(-1, 0.5, 1));
  EXPECT_THAT(vals(x.clamp(0.0)), ElementsAre(0, 0.5, 3));
  EXPECT_THAT(vals(clamp(x, std::nullopt, 0.0)), ElementsAre(-2, 0, 0));
  EXPECT_THAT(ivals(clamp(tensor({-5, 5}), 0, 3)), ElementsAre(0, 3));
  Tensor y = tensor({0.0, 1.0, 1.0});
  EXPECT_THAT(vals(maximum(x, y)), ElementsAre(0, 1, 3));
  EXPECT_THAT(vals(minimum(x, y)), ElementsAre(-2, 0.5, 1));
  EXPECT_THAT(vals(maximum(x, tensor(0.0))), ElementsAre(0, 0.5, 3));  // broadcast 0-d
  Tensor n = maximum(tensor({NAN, 1.0}), tensor({0.0, NAN}));
  EXPECT_TRUE(std::isnan(vals(n)[0]));  // NaN propagates, as in PyTorch
  EXPECT_TRUE(std::isnan(vals(n)[1]));
}

TEST(Unary, ClampWithOneOpenBoundKeepsInfinitiesAndNaN) {
  // As PyTorch: an open bound clamps nothing, so -inf stays -inf (not the lowest finite float).
  const double inf = INFINITY;
  Tensor x = tensor({-inf, -2.0, 0.5, 3.0, inf, NAN});
  std::vector<double> hi = vals(clamp(x, std::nullopt, 1.0)), lo = vals(clamp(x, 0.0));
  EXPECT_THAT(std::vector<double>(hi.begin(), hi.end() - 1), ElementsAre(-inf, -2, 0.5, 1, 1));
  EXPECT_THAT(std::vector<double>(lo.begin(), lo.end() - 1), ElementsAre(0, 0, 0.5, 3, inf));
  EXPECT_TRUE(std::isnan(hi.back()) && std::isnan(lo.back()));
  // int64 with one open bound: the open side is the integer limit, not a cast of inf.
  EXPECT_THAT(ivals(clamp(tensor({int64_t{-9}, int64_t{4}}), std::nullopt, 2)), ElementsAre(-9, 2));
}

TEST(Unary, SoftplusAsPyTorch) {
  // log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.
  const TensorOptions d = TensorOptions().dtype(kFloat64);
  Tensor x = tensor({-2.0, 0.0, 1.0, 30.0}, d);
  EXPECT_THAT(vals(softplus(x)), Near({std::log1p(std::exp(-2.0)), std::log(2.0), std::log1p(std::exp(1.0)), 30.0}, 1e-12));
  Tensor y = tensor({0.4, 0.6}, d);  // beta 2, threshold 1: 0.8 is below, 1.2 above
  EXPECT_THAT(vals(softplus(y, 2.0, 1.0)), Near({std::log1p(std::exp(0.8)) / 2, 0.6}, 1e-12));
  EXPECT_THAT(vals(nn::functional::softplus(y, nn::functional::SoftplusFuncOptions().beta(2).threshold(1))),
              Near({std::log1p(std::exp(0.8)) / 2, 0.6}, 1e-12));
  // dx = sigmoid(beta x) below the threshold, 1 above it
  Tensor z = tensor({0.4, 0.6}, TensorOptions().dtype(kFloat64).requires_grad(true));
  softplus(z, 2.0, 1.0).sum().backward();
  EXPECT_THAT(vals(z.grad()), Near({1 / (1 + std::exp(-0.8)), 1.0}, 1e-12));
  EXPECT_THROW((void)softplus(x, 0.0), ValueError);
  // an integer tensor computes in the default float dtype, as the other float ops
  EXPECT_EQ(softplus(tensor({int64_t{1}})).dtype(), kFloat32);
}

TEST(Unary, SimdBodyAndScalarTailAgreeToAFewUlps) {
  // The CPU runs formulas over SIMD batches (xsimd) and the tail element by element (libm): one
  // value must give the same result at every position, up to the few ulps the two libraries
  // differ by (xsimd's double erf is ~10 ulps from glibc's); a wrong lane, tail index or
  // parameter would be far off.
  for (int64_t n : {1, 3, 5, 8, 11, 17}) {
    for (double v : {-1.7, -0.3, 0.0, 0.4, 2.5}) {
      for (ScalarType dt : {kFloat32, kFloat64}) {
        const double ulp = dt == kFloat32 ? 1.2e-7 : 2.3e-16;
        Tensor x = full({n}, v, TensorOptions().dtype(dt));
        for (Tensor y : {exp(x), tanh(x), sigmoid(x), erf(x), sin(x), log(abs(x) + 1), softplus(x, 2.0, 1.0)}) {
          std::vector<double> e = vals(y);
          for (double got : e) EXPECT_NEAR(got, e.back(), 64 * ulp * std::abs(e.back()) + 1e-300) << "n " << n << " v " << v;
        }
      }
    }
  }
}

TEST(Select, WhereAndMaskedFill) {
  Tensor x = tensor({1.0, -2.0, 3.0, -4.0});
  Tensor pos = x > 0;
  EXPECT_THAT(vals(where(pos, x, zeros({4}))), ElementsAre(1, 0, 3, 0));
  EXPECT_THAT(vals(where(pos, x, -1.0)), ElementsAre(1, -1, 3, -1));
  EXPECT_THAT(vals(where(pos, 7.0, x)), ElementsAre(7, -2, 7, -4));
  // condition, a and b broadcast together: [2, 1] cond, [4] a, 0-d b
  Tensor c = tensor({true, false}).reshape({2, 1});
  Tensor w = where(c, x, tensor(0.0));
  EXPECT_EQ(w.sizes(), (Shape{2, 4}));
  EXPECT_THAT(vals(w), ElementsAre(1, -2, 3, -4, 0, 0, 0, 0));
  EXPECT_EQ(where(pos, x, f64({0.0})).dtype(), kFloat64);
  EXPECT_THAT(vals(masked_fill(x, ~pos, 0.0)), ElementsAre(1, 0, 3, 0));
  EXPECT_THAT(vals(x.masked_fill(pos, 9)), ElementsAre(9, -2, 9, -4));
  // a row mask broadcasts over the columns
  Tensor m = zeros({2, 3}).masked_fill(tensor({true, false, true}), 1.0);
  EXPECT_THAT(vals(m), ElementsAre(1, 0, 1, 1, 0, 1));
}

// Outputs of 16 MiB or more are written with streaming stores (vec/level.hpp, kStreamBytes): the
// same bits as the plain stores of smaller calls. Each op on 5M + 37 elements (20 / 40 MiB, one
// thread so that the call is not split under the threshold) against the same op on slices of
// 256K elements (1 / 2 MiB); in place on a misaligned view (offset 1: plain stores, as a streaming
// store there would fault) against the out-of-place result.
TEST(Binary, LargeOutputsStreamedGiveTheBitsOfSmallCalls) {
  const int saved_threads = get_num_threads();
  set_num_threads(1);
  const int64_t n = (int64_t{5} << 20) + 37, piece = int64_t{256} << 10;
  auto same_bits = [](const Tensor& a, const Tensor& b) {
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    if (ac.sizes() != bc.sizes() || ac.dtype() != bc.dtype()) return false;
    const bool f32 = ac.dtype() == kFloat32;
    const void* pa = f32 ? static_cast<const void*>(ac.data_ptr<float>()) : ac.data_ptr<double>();
    const void* pb = f32 ? static_cast<const void*>(bc.data_ptr<float>()) : bc.data_ptr<double>();
    return std::memcmp(pa, pb, static_cast<size_t>(ac.numel()) * (f32 ? 4 : 8)) == 0;
  };
  manual_seed(29);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const Tensor x = randn({n}, TensorOptions().dtype(dt)) * 3.0, w = randn({n}, TensorOptions().dtype(dt));
    const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&, const Tensor&)>>> ops = {
        {"exp", [](const Tensor& a, const Tensor&) { return exp(a); }},
        {"gelu", [](const Tensor& a, const Tensor&) { return gelu(a); }},
        {"relu", [](const Tensor& a, const Tensor&) { return relu(a); }},
        {"a * b", [](const Tensor& a, const Tensor& b) { return a * b; }},
        {"a + 2", [](const Tensor& a, const Tensor&) { return a + 2.0; }},
        {"gelu_backward", [](const Tensor& a, const Tensor& b) { return gelu_backward(b, a); }},
    };
    for (const auto& [name, op] : ops) {
      const Tensor big = op(x, w);
      std::vector<Tensor> parts;
      for (int64_t k = 0; k < n; k += piece) {
        const int64_t m = std::min(piece, n - k);
        parts.push_back(op(x.narrow(0, k, m), w.narrow(0, k, m)));
      }
      EXPECT_TRUE(same_bits(big, cat(parts, 0))) << name << ", " << to_string(dt);
    }
    Tensor y = x.clone();
    y.narrow(0, 1, n - 1).clamp_(-1.0, 1.0);
    EXPECT_TRUE(same_bits(y.narrow(0, 1, n - 1), clamp(x.narrow(0, 1, n - 1), -1.0, 1.0)))
        << "clamp_ on a misaligned view, " << to_string(dt);
    Tensor z = x.clone();
    z.narrow(0, 1, n - 1).mul_(w.narrow(0, 1, n - 1));
    EXPECT_TRUE(same_bits(z.narrow(0, 1, n - 1), x.narrow(0, 1, n - 1) * w.narrow(0, 1, n - 1)))
        << "mul_ on a misaligned view, " << to_string(dt);
  }
  set_num_threads(saved_threads);
}

}  // namespace
}  // namespace gradlab
