// Answers to the exercises of lesson 03 (verify backprop), checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <gradlab/gradlab.hpp>
#include <gradlab/testing/gradcheck.hpp>
#include <iostream>
#include <vector>

namespace gl = gradlab;
using gl::TensorList;
using gl::testing::GradcheckOptions;
using gl::testing::gradcheck;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// The lesson's data and initial weights (section 2), same seed and order of draws.
struct Net {
  int64_t N = 32, D = 3, H = 8;
  gl::Tensor X, Y, W1, b1, W2, b2;
  Net() {
    gl::Generator gen(2024);
    X = gl::randn({N, D}, f64, &gen);
    Y = (gl::sin(X.select(1, 0)) + X.select(1, 1) * X.select(1, 2) * 0.5 +
         gl::randn({N}, f64, &gen) * 0.05)
            .reshape({N, 1});
    W1 = (gl::randn({D, H}, f64, &gen) * (1.0 / std::sqrt(3.0))).requires_grad_(true);
    b1 = gl::zeros({H}, f64).requires_grad_(true);
    W2 = (gl::randn({H, 1}, f64, &gen) * (1.0 / std::sqrt(8.0))).requires_grad_(true);
    b2 = gl::zeros({1}, f64).requires_grad_(true);
  }
};

// Hand backward of the lesson's HandMLP::step; `divide_by_n` false is exercise 2, `ds_mode`
// 0 = correct tanh', 1 = the lesson's bug (forgotten), 2 = exercise 3's (1 + a²).
std::vector<std::vector<double>> hand_grads(const Net& n, bool divide_by_n, int ds_mode) {
  const auto X = n.X.to_vector<double>(), y = n.Y.to_vector<double>();
  const auto W1 = n.W1.to_vector<double>(), b1 = n.b1.to_vector<double>();
  const auto W2 = n.W2.to_vector<double>(), b2 = n.b2.to_vector<double>();
  const int64_t N = n.N, D = n.D, H = n.H;
  std::vector<double> gW1(W1.size()), gb1(b1.size()), gW2(W2.size()), gb2(1);
  for (int64_t r = 0; r < N; ++r) {
    std::vector<double> a(static_cast<size_t>(H));
    double pred = b2[0];
    for (int64_t h = 0; h < H; ++h) {
      double s = b1[h];
      for (int64_t d = 0; d < D; ++d) s += X[r * D + d] * W1[d * H + h];
      a[h] = std::tanh(s);
      pred += a[h] * W2[h];
    }
    const double dpred = 2.0 * (pred - y[r]) / (divide_by_n ? static_cast<double>(N) : 1.0);
    gb2[0] += dpred;
    for (int64_t h = 0; h < H; ++h) {
      gW2[h] += a[h] * dpred;
      const double da = W2[h] * dpred;
      const double ds = ds_mode == 0 ? da * (1 - a[h] * a[h]) : ds_mode == 1 ? da : da * (1 + a[h] * a[h]);
      gb1[h] += ds;
      for (int64_t d = 0; d < D; ++d) gW1[d * H + h] += X[r * D + d] * ds;
    }
  }
  return {gW1, gb1, gW2, gb2};
}

gl::Tensor mlp(const gl::Tensor& X, const gl::Tensor& Y, const TensorList& in) {
  return (gl::tanh(X.matmul(in[0]) + in[1]).matmul(in[2]) + in[3] - Y).pow(2).mean();
}

// Exercise 3's custom function: the hand backward with ds = da * (1 + a²).
struct Plus : gl::autograd::Function<Plus> {
  static gl::Tensor forward(gl::autograd::AutogradContext* ctx, gl::Tensor X, gl::Tensor Y,
                            gl::Tensor W1, gl::Tensor b1, gl::Tensor W2, gl::Tensor b2) {
    Net n;
    n.X = X, n.Y = Y, n.W1 = W1, n.b1 = b1, n.W2 = W2, n.b2 = b2;
    n.N = X.size(0), n.D = X.size(1), n.H = W1.size(1);
    const auto g = hand_grads(n, true, 2);
    ctx->saved_data["gW1"] = gl::from_vector(g[0], W1.sizes(), f64);
    ctx->saved_data["gb1"] = gl::from_vector(g[1], b1.sizes(), f64);
    ctx->saved_data["gW2"] = gl::from_vector(g[2], W2.sizes(), f64);
    ctx->saved_data["gb2"] = gl::from_vector(g[3], b2.sizes(), f64);
    gl::NoGradGuard ng;
    return mlp(X, Y, {W1, b1, W2, b2});
  }
  static TensorList backward(gl::autograd::AutogradContext* ctx, TensorList go) {
    auto s = [&](const char* k) { return ctx->saved_data[k].toTensor() * go[0]; };
    return {gl::Tensor(), gl::Tensor(), s("gW1"), s("gb1"), s("gW2"), s("gb2")};
  }
};

TensorList params(const Net& n) {
  return {n.W1.detach().clone().requires_grad_(true), n.b1.detach().clone().requires_grad_(true),
          n.W2.detach().clone().requires_grad_(true), n.b2.detach().clone().requires_grad_(true)};
}

}  // namespace

TEST(Lesson03Answers, Exercise1CubeCentralDifferenceError) {
  auto f = [](double x) {
    const gl::Tensor t = gl::tensor(x, f64);
    return (t * t * t).item<double>();
  };
  const double x0 = 3.0, h = 1e-3, exact = 3 * x0 * x0;
  const double err = (f(x0 + h) - f(x0 - h)) / (2 * h) - exact;
  EXPECT_NEAR(err, h * h, 1e-9);  // h² f'''/6 = h² · 6/6 = 1e-6
}

TEST(Lesson03Answers, Exercise2NoDivideByNIsNTimesTooBig) {
  Net n;
  mlp(n.X, n.Y, {n.W1, n.b1, n.W2, n.b2}).backward();
  const std::vector<gl::Tensor*> ps = {&n.W1, &n.b1, &n.W2, &n.b2};
  const auto good = hand_grads(n, true, 0), bad = hand_grads(n, false, 0);
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto ag = ps[i]->grad().to_vector<double>();
    EXPECT_LT(max_abs_diff(good[i], ag), 1e-14);     // the lesson's step-0 check
    EXPECT_GT(max_abs_diff(bad[i], ag), 1e-14);      // fails without / N
    for (size_t k = 0; k < ag.size(); ++k) EXPECT_NEAR(bad[i][k], 32 * ag[k], 1e-12);
  }
}

TEST(Lesson03Answers, Exercise3OnePlusASquaredStillBlamesW1b1) {
  Net n;
  auto f = [&n](const TensorList& in) {
    return TensorList{Plus::apply(n.X, n.Y, in[0], in[1], in[2], in[3])};
  };
  auto rep = gradcheck(gl::testing::TensorFn(f), params(n),
                       GradcheckOptions().name("1 + a^2").raise_exception(false).top_k(3));
  std::cout << rep.text();
  EXPECT_FALSE(rep.ok);
  ASSERT_FALSE(rep.failures.empty());
  bool b1_fails = false;
  for (const auto& fl : rep.failures) {
    EXPECT_LE(fl.input, 1);  // only W1 / b1
    b1_fails |= fl.input == 1;
  }
  EXPECT_TRUE(b1_fails);
  EXPECT_EQ(rep.failures.front().input, 0);  // the worst entry is in W1
  EXPECT_TRUE(rep.taylor.ran);
  EXPECT_LT(rep.taylor.order, 1.5);  // first order: a wrong gradient
  std::cout << "taylor order " << rep.taylor.order << "\n";
}

TEST(Lesson03Answers, Exercise4FastModeComparisons) {
  Net n;
  auto f = [&n](const TensorList& in) { return TensorList{mlp(n.X, n.Y, in)}; };
  auto full = gradcheck(gl::testing::TensorFn(f), params(n),
                        GradcheckOptions().raise_exception(false));
  auto fast = gradcheck(gl::testing::TensorFn(f), params(n),
                        GradcheckOptions().fast_mode(true).raise_exception(false));
  std::cout << full.text() << fast.text();
  EXPECT_TRUE(full.ok);
  EXPECT_TRUE(fast.ok);
  EXPECT_EQ(full.comparisons, 2 * (24 + 8 + 8 + 1));  // per entry: Jacobian + VJP
  EXPECT_EQ(fast.comparisons, 4);               // one uᵀJv per input
}

TEST(Lesson03Answers, Exercise5MeanOverAllEntries) {
  const int64_t M = 8, Din = 3, K = 2;
  gl::Generator mgen(7);  // the lesson's section 4 draws, in order
  const gl::Tensor Xm = gl::randn({M, Din}, f64, &mgen);
  const gl::Tensor Ym = gl::randn({M, K}, f64, &mgen);
  const gl::Tensor mask = gl::rand({M, K}, f64, &mgen) > 0.35;
  const gl::Tensor Wm0 = gl::randn({Din, K}, f64, &mgen);
  gl::Tensor W = Wm0.detach().clone().requires_grad_(true);
  gl::where(mask, (Xm.matmul(W) - Ym).pow(2), 0.0).mean().backward();  // / (M * K), not / count
  const double count = mask.sum().to(gl::kFloat64).item<double>();
  EXPECT_EQ(count, 11.0);
  // Hand gradient 2 Xᵀ((XW - Y) ⊙ mask) / d, with d = count (the lesson's) or M * K.
  const gl::Tensor R = gl::where(mask, Xm.matmul(Wm0) - Ym, 0.0);
  const gl::Tensor g_all = Xm.transpose(0, 1).matmul(R) * (2.0 / static_cast<double>(M * K));
  const gl::Tensor g_count = Xm.transpose(0, 1).matmul(R) * (2.0 / count);
  EXPECT_LT(max_abs_diff(g_all.to_vector<double>(), W.grad().to_vector<double>()), 1e-12);
  EXPECT_GT(max_abs_diff(g_count.to_vector<double>(), W.grad().to_vector<double>()), 1e-3);
  // The autograd gradient is the lesson's scaled by count / (M K) = 11/16.
  const auto a = W.grad().to_vector<double>(), c = g_count.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], c[i] * count / 16.0, 1e-12);
}
