// create_graph: the backward pass is recorded, so gradients of gradients work.

#include <cmath>

#include "common/check_helpers.hpp"
#include "common/finite_diff.hpp"

namespace gradlab {
namespace {

using checks::f64;
using checks::grads_match_finite_diff;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

// d/dx of Σ f(x), recorded (create_graph), so it can be differentiated again.
Tensor d1(const Tensor& y, const Tensor& x) {
  return autograd::grad({y.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
}

TEST(CreateGraph, CubeSecondAndThirdDerivative) {
  Tensor x = f64({2.0, -1.0}, true);
  Tensor g = d1(x * x * x, x);  // 3x²
  EXPECT_THAT(vals(g), ElementsAre(12, 3));
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.grad_fn() != nullptr);
  Tensor g2 = d1(g, x);  // 6x
  EXPECT_THAT(vals(g2), ElementsAre(12, -6));
  Tensor g3 = d1(g2, x);  // 6
  EXPECT_THAT(vals(g3), ElementsAre(6, 6));
  Tensor p = d1(d1(x.pow(3), x), x);  // through PowBackward0 as well
  EXPECT_THAT(vals(p), ElementsAre(12, -6));
}

TEST(CreateGraph, WithoutItTheGradientHasNoGraph) {
  Tensor x = f64({2.0}, true);
  Tensor g = autograd::grad({(x * x * x).sum()}, {x})[0];
  EXPECT_FALSE(g.requires_grad());
  EXPECT_TRUE(g.grad_fn() == nullptr);
  (x * x).sum().backward();
  EXPECT_FALSE(x.grad().requires_grad());
}

TEST(CreateGraph, SecondDerivativesOfUnaryOps) {
  const std::vector<double> xs = {-1.5, 0.3, 2.0};
  Tensor x = tensor({-1.5, 0.3, 2.0}, dtype(kFloat64).requires_grad(true));
  std::vector<double> s2, t2, e2, sin2;
  for (double v : xs) {
    const double s = 1 / (1 + std::exp(-v)), t = std::tanh(v);
    s2.push_back(s * (1 - s) * (1 - 2 * s));  // σ'' = σ(1-σ)(1-2σ)
    t2.push_back(-2 * t * (1 - t * t));       // tanh'' = -2 tanh (1 - tanh²)
    e2.push_back(std::exp(v));
    sin2.push_back(-std::sin(v));
  }
  EXPECT_THAT(vals(d1(d1(sigmoid(x), x), x)), Near(s2, 1e-12));
  EXPECT_THAT(vals(d1(d1(tanh(x), x), x)), Near(t2, 1e-12));
  EXPECT_THAT(vals(d1(d1(exp(x), x), x)), Near(e2, 1e-12));
  EXPECT_THAT(vals(d1(d1(sin(x), x), x)), Near(sin2, 1e-12));
  Tensor p = f64({0.5, 2.0}, true);
  EXPECT_THAT(vals(d1(d1(log(p), p), p)), Near({-4.0, -0.25}, 1e-12));              // -1/x²
  EXPECT_THAT(vals(d1(d1(sqrt(p), p), p)), Near({-0.25 * std::pow(0.5, -1.5), -0.25 * std::pow(2.0, -1.5)}, 1e-12));
}

TEST(CreateGraph, MixedPartials) {
  Tensor x = f64({3.0}, true), y = f64({2.0}, true);
  Tensor f = x * y * y;  // ∂f/∂x = y², ∂²f/∂y∂x = 2y
  Tensor fx = autograd::grad({f}, {x}, {}, std::nullopt, true)[0];
  EXPECT_THAT(vals(fx), ElementsAre(4));
  TensorList h = autograd::grad({fx}, {x, y}, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_FALSE(h[0].defined() && h[0].item<double>() != 0);  // ∂²f/∂x² = 0
  EXPECT_THAT(vals(h[1]), ElementsAre(4));
}

TEST(CreateGraph, BackwardWithCreateGraphGivesADifferentiableDotGrad) {
  Tensor x = f64({1.5}, true);
  (x * x * x).backward({}, std::nullopt, /*create_graph=*/true);
  Tensor g = x.grad();  // 3x² with a graph
  EXPECT_NEAR(g.item<double>(), 6.75, 1e-12);
  ASSERT_TRUE(g.requires_grad());
  Tensor g2 = autograd::grad({g}, {x})[0];
  EXPECT_NEAR(g2.item<double>(), 9.0, 1e-12);  // 6x
  x.zero_grad();  // NOTE: .grad holding its own graph is a reference cycle (as in PyTorch): break it
}

TEST(CreateGraph, HessianVectorProductsMatchFiniteDifferences) {
  Generator gen(3);
  Tensor x = rand({2, 3}, kFloat64, &gen).requires_grad_();
  Tensor w = rand({3, 4}, kFloat64, &gen).requires_grad_();
  // f(x, w) = ∂/∂x Σ sigmoid(x @ w): its own gradient is a Hessian-vector product
  auto first = [](const TensorList& v) {
    return autograd::grad({sigmoid(matmul(v[0], v[1])).sum()}, {v[0]}, {}, std::nullopt, true)[0];
  };
  EXPECT_TRUE(grads_match_finite_diff(first, {x, w}));
  auto softmax_grad = [](const TensorList& v) {
    Tensor y = (softmax(v[0], 1) * v[1]).sum();
    return autograd::grad({y}, {v[0]}, {}, std::nullopt, true)[0];
  };
  Tensor c = rand({2, 3}, kFloat64, &gen).requires_grad_();
  EXPECT_TRUE(grads_match_finite_diff(softmax_grad, {x, c}));
  auto div_log = [](const TensorList& v) {
    Tensor y = (log(v[0] * v[0] + 1) / (v[0] + 2)).sum();
    return autograd::grad({y}, {v[0]}, {}, std::nullopt, true)[0];
  };
  EXPECT_TRUE(grads_match_finite_diff(div_log, {x}));
}

}  // namespace
}  // namespace gradlab
