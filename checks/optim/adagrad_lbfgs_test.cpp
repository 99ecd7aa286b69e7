// optim::Adagrad against its update written out, and optim::LBFGS on problems with a known
// minimum (a quadratic: the exact minimiser in a few iterations; Rosenbrock with the strong
// Wolfe line search), its stopping rules, its state_dict, and its errors. LibTorch's own
// trajectories for both: the port program checks/compat/ports/vision_extras.cpp.

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::d64;

TEST(Adagrad, MatchesTheUpdateWrittenOut) {
  Tensor p = d64({1.0, -2.0, 0.5}, {3}, true);
  optim::Adagrad opt({p}, optim::AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.01)
                               .initial_accumulator_value(0.2).eps(1e-10));
  std::vector<double> x = {1.0, -2.0, 0.5}, sum = {0.2, 0.2, 0.2};
  for (int step = 1; step <= 4; ++step) {
    opt.zero_grad();
    Tensor loss = (p * p * p).sum() + (p * 2).sum();  // g = 3 p² + 2
    loss.backward();
    opt.step();
    const double clr = 0.1 / (1 + (step - 1) * 0.05);
    for (size_t i = 0; i < 3; ++i) {
      const double g = 3 * x[i] * x[i] + 2 + 0.01 * x[i];
      sum[i] += g * g;
      x[i] -= clr * g / (std::sqrt(sum[i]) + 1e-10);
    }
    EXPECT_THAT(p.to_vector<double>(), ::testing::Pointwise(::testing::DoubleNear(1e-12), x));
  }
  EXPECT_EQ(opt.state(p).at("step").item<double>(), 4.0);
  EXPECT_THAT(opt.state(p).at("sum").to_vector<double>(),
              ::testing::Pointwise(::testing::DoubleNear(1e-9), sum));
  EXPECT_THROW(optim::Adagrad({p}, optim::AdagradOptions(-1)), ValueError);
  EXPECT_THROW(optim::Adagrad({p}, optim::AdagradOptions(0.1).initial_accumulator_value(-1)), ValueError);
}

// f(x) = ½ xᵀ A x - bᵀ x with A symmetric positive definite: minimiser A⁻¹ b.
struct Quadratic {
  Tensor A = d64({4, 1, 0, 1, 3, 0.5, 0, 0.5, 2}, {3, 3});
  Tensor b = d64({1, -2, 3}, {3});
  Tensor loss(const Tensor& x) const { return 0.5 * (x * matmul(A, x)).sum() - (b * x).sum(); }
};

TEST(LBFGS, FindsTheMinimiserOfAQuadratic) {
  Quadratic q;
  for (bool wolfe : {false, true}) {
    Tensor x = zeros({3}, TensorOptions().dtype(kFloat64)).requires_grad_();
    auto o = optim::LBFGSOptions(1).max_iter(50);
    if (wolfe) o.line_search_fn("strong_wolfe");
    optim::LBFGS opt({x}, o);
    auto closure = [&] {
      opt.zero_grad();
      Tensor l = q.loss(x);
      l.backward();
      return l;
    };
    const double first = opt.step(closure).item<double>();
    EXPECT_EQ(first, 0.0);  // the loss of the first closure call, at x = 0
    // A x = b: [4 1 0; 1 3 .5; 0 .5 2] x = [1 -2 3]
    // A x = b. The run stops once the loss changes by < tolerance_change = 1e-9: x is then
    // within about √1e-9 of the minimiser.
    Tensor want = d64({15.0 / 28, -8.0 / 7, 25.0 / 14}, {3});
    EXPECT_TRUE(allclose(x.detach(), want, 1e-4, 1e-4)) << x << (wolfe ? " (strong_wolfe)" : "");
    EXPECT_TRUE(allclose(matmul(q.A, x.detach()), q.b, 1e-4, 1e-4));
    EXPECT_LT((q.loss(x.detach()) - q.loss(want)).item<double>(), 1e-8);
    EXPECT_LE(opt.state(x).at("n_iter").item<double>(), 50);
  }
}

TEST(LBFGS, StrongWolfeSolvesRosenbrockAndCountsItsEvaluations) {
  Tensor xy = d64({-1.5, 2.0}, {2}, true);
  optim::LBFGS opt({xy}, optim::LBFGSOptions(1).max_iter(200).line_search_fn("strong_wolfe"));
  int calls = 0;
  auto closure = [&] {
    ++calls;
    opt.zero_grad();
    Tensor a = xy.select(0, 0), b = xy.select(0, 1);
    Tensor l = (1 - a) * (1 - a) + 100 * (b - a * a) * (b - a * a);
    l.backward();
    return l;
  };
  for (int i = 0; i < 5; ++i) opt.step(closure);
  EXPECT_NEAR(xy.select(0, 0).item<double>(), 1.0, 1e-5);
  EXPECT_NEAR(xy.select(0, 1).item<double>(), 1.0, 1e-5);
  EXPECT_EQ(opt.state(xy).at("func_evals").item<double>(), calls);
}

TEST(LBFGS, MaxIterBoundsTheClosureCallsOfOneStep) {
  Quadratic q;
  Tensor x = zeros({3}, TensorOptions().dtype(kFloat64)).requires_grad_();
  optim::LBFGS opt({x}, optim::LBFGSOptions(0.1).max_iter(4));
  int calls = 0;
  auto closure = [&] {
    ++calls;
    opt.zero_grad();
    Tensor l = q.loss(x);
    l.backward();
    return l;
  };
  opt.step(closure);
  // One call, then one per iteration but the last (whose loss would be the next step's first);
  // max_eval = 4 * 5 / 4 = 5 is not reached.
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(opt.state(x).at("n_iter").item<double>(), 4);
  EXPECT_EQ(opt.state(x).at("func_evals").item<double>(), 4);
  // max_iter 3 gives max_eval 3: the evaluations stop it after 2 iterations.
  Tensor y = zeros({3}, TensorOptions().dtype(kFloat64)).requires_grad_();
  optim::LBFGS three({y}, optim::LBFGSOptions(0.1).max_iter(3));
  three.step([&] {
    three.zero_grad();
    Tensor l = q.loss(y);
    l.backward();
    return l;
  });
  EXPECT_EQ(three.state(y).at("n_iter").item<double>(), 2);
  // max_eval stops it sooner.
  Tensor z = zeros({3}, TensorOptions().dtype(kFloat64)).requires_grad_();
  optim::LBFGS few({z}, optim::LBFGSOptions(0.1).max_iter(10).max_eval(2));
  calls = 0;
  few.step([&] {
    ++calls;
    few.zero_grad();
    Tensor l = q.loss(z);
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 2);
}

TEST(LBFGS, ResumingFromStateDictEqualsAnUninterruptedRun) {
  Quadratic q;
  auto make_closure = [&](optim::LBFGS& opt, Tensor& x) {
    return [&] {
      opt.zero_grad();
      Tensor l = q.loss(x) + 0.1 * (x * x * x * x).sum();
      l.backward();
      return l;
    };
  };
  const auto o = optim::LBFGSOptions(0.5).max_iter(2).history_size(3);
  Tensor a = d64({1, 1, 1}, {3}, true);
  optim::LBFGS oa({a}, o);
  for (int i = 0; i < 4; ++i) oa.step(make_closure(oa, a));
  Tensor b = d64({1, 1, 1}, {3}, true);
  {
    optim::LBFGS first({b}, o);
    for (int i = 0; i < 2; ++i) first.step(make_closure(first, b));
    optim::LBFGS second({b}, o);
    second.load_state_dict(first.state_dict());
    for (int i = 0; i < 2; ++i) second.step(make_closure(second, b));
  }
  EXPECT_TRUE(allclose(a.detach(), b.detach(), 1e-12, 1e-14)) << a << b;
}

TEST(LBFGS, ErrorsAreClear) {
  Tensor x = zeros({2}).requires_grad_();
  optim::LBFGS opt({x});
  EXPECT_THROW(opt.step(), ValueError);  // no closure
  EXPECT_THROW(optim::LBFGS({x}, optim::LBFGSOptions().line_search_fn("backtracking")), ValueError);
  EXPECT_THROW(optim::LBFGS(std::vector<Tensor>{}), ValueError);
  EXPECT_THROW(opt.step([&] { return (x * 2).sum().unsqueeze(0).expand({2}); }), ValueError);
  try {
    opt.step();
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("closure"));
  }
}

}  // namespace
}  // namespace gradlab
