// gradcheck / gradgradcheck on functions whose gradients are known right or known wrong: every
// check must pass on the right ones and catch the wrong ones, naming what it found.

#include "gradlab/testing/gradcheck.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>

#include "gradlab/gradlab.hpp"
#include "gradlab/testing/op_table.hpp"

namespace {

using namespace gradlab;
using gradlab::testing::gradcheck;
using gradlab::testing::GradcheckError;
using gradlab::testing::GradcheckOptions;
using gradlab::testing::GradcheckReport;
using gradlab::testing::gradgradcheck;
using gradlab::testing::TensorFn;

TensorOptions f64() { return TensorOptions().dtype(kFloat64); }
Tensor leaf(Shape s, uint64_t seed = 1, double lo = -1.0, double hi = 1.0) {
  Generator g(seed);
  return (rand(s, f64(), &g) * (hi - lo) + lo).detach().requires_grad_(true);
}
GradcheckOptions quiet(const std::string& name) {
  return GradcheckOptions().name(name).raise_exception(false);
}

// y = x³ with a hand-written backward; `Mode` picks a deliberate fault.
enum class Fault { None, Factor, OneElement, SquaredUpstream, Noise, DetachedSecondOrder };
std::atomic<int> g_calls{0};

template <Fault F>
struct Cube : autograd::Function<Cube<F>> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static TensorList backward(autograd::AutogradContext* ctx, TensorList g) {
    Tensor x = ctx->get_saved_variables()[0];
    Tensor d = 3.0 * x * x;
    if constexpr (F == Fault::Factor) return {g[0] * 2.0 * x * x};
    if constexpr (F == Fault::SquaredUpstream)
      return {g[0] * g[0].abs() * d};  // same for g in {0, 1}
    if constexpr (F == Fault::DetachedSecondOrder) return {g[0] * 3.0 * x.detach() * x.detach()};
    if constexpr (F == Fault::OneElement) {
      // Right everywhere except element [2, 4], which is 0.01 too large.
      Tensor bump = zeros_like(x);
      {
        NoGradGuard ng;
        bump.index_put_(eq(arange(15, TensorOptions().dtype(kInt64)).reshape({3, 5}), 14), 0.01);
      }
      return {g[0] * (d + bump)};
    }
    if constexpr (F == Fault::Noise) return {g[0] * d + 1e-12 * static_cast<double>(++g_calls)};
    return {g[0] * d};
  }
};

template <Fault F>
TensorFn cube() {
  return [](const TensorList& in) { return TensorList{Cube<F>::apply(in[0])}; };
}

TEST(Gradcheck, PassesOnRightGradientsWithFullJacobian) {
  Tensor x = leaf({3, 5}), w = leaf({5, 4}, 2);
  auto f = [](const TensorList& in) { return TensorList{log_softmax(matmul(in[0], in[1]), 1)}; };
  GradcheckReport r = gradcheck(f, {x, w}, quiet("log_softmax(x @ w)"));
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_EQ(r.mode, "full Jacobian");
  EXPECT_EQ(r.jacobian_rows, 12);
  EXPECT_EQ(r.jacobian_cols, 35);
  EXPECT_EQ(r.num_failures, 0);
  EXPECT_LT(r.max_abs_err, 1e-8);
  EXPECT_TRUE(r.taylor.ran);
  EXPECT_NEAR(r.taylor.order, 2.0, 0.2) << r.text();
  EXPECT_NE(r.text().find("gradcheck passed for log_softmax(x @ w)"), std::string::npos)
      << r.text();
  // PyTorch's defaults.
  const GradcheckOptions d;
  EXPECT_EQ(d.eps_, 1e-6);
  EXPECT_EQ(d.atol_, 1e-5);
  EXPECT_EQ(d.rtol_, 1e-3);
  EXPECT_EQ(d.nondet_tol_, 0.0);
  EXPECT_TRUE(d.raise_exception_);
  EXPECT_FALSE(d.fast_mode_);
  EXPECT_TRUE(d.check_undefined_grad_);
}

TEST(Gradcheck, FactorErrorFailsWithReadableTextAndOrderOneTaylor) {
  Tensor x = leaf({3, 5}, 3, 0.5, 1.5);
  GradcheckReport r = gradcheck(cube<Fault::Factor>(), {x},
                                quiet("cube").reproduce("RC_PARAMS=\"seed=42\" ./prop"));
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.first_failure(), "jacobian");
  EXPECT_EQ(r.num_failures, 15 + 15);  // the 15 diagonal entries, and uᵀJ at every element
  const std::string t = r.text();
  EXPECT_EQ(
      t.rfind("gradcheck failed for cube: input 0 of 1, shape [3, 5], float64\n  element [", 0), 0u)
      << t;
  EXPECT_NE(t.find("]: analytic = "), std::string::npos) << t;
  EXPECT_NE(t.find(", numeric = "), std::string::npos) << t;
  EXPECT_NE(t.find("  |diff| = "), std::string::npos) << t;
  EXPECT_NE(t.find(" > atol + rtol*|numeric| = "), std::string::npos) << t;
  EXPECT_NE(t.find("(eps=1e-06 atol=1e-05 rtol=1e-03)"), std::string::npos) << t;
  EXPECT_NE(t.find("reproduce: RC_PARAMS=\"seed=42\" ./prop"), std::string::npos) << t;
  // analytic = 2x², numeric = 3x² at the worst element.
  const auto& w = r.failures.front();
  EXPECT_NEAR(w.analytic / w.numeric, 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(w.abs_err, std::abs(w.analytic - w.numeric), 1e-15);
  EXPECT_NEAR(w.tolerance, 1e-5 + 1e-3 * std::abs(w.numeric), 1e-15);
  EXPECT_GT(w.abs_err, w.tolerance);
  EXPECT_EQ(r.top(3).size(), 3u);
  // The remainder of a wrong gradient shrinks at order 1.
  EXPECT_TRUE(r.taylor.ran);
  EXPECT_NEAR(r.taylor.order, 1.0, 0.2) << t;
}

TEST(Gradcheck, NamesTheSingleWrongJacobianEntry) {
  Tensor x = leaf({3, 5}, 4, 0.5, 1.5);
  GradcheckReport r = gradcheck(cube<Fault::OneElement>(), {x}, quiet("cube"));
  ASSERT_FALSE(r.ok);
  const auto& w = r.failures.front();
  EXPECT_EQ(w.check, "jacobian");
  EXPECT_EQ(w.input, 0);
  EXPECT_EQ(w.element, (Shape{2, 4}));
  EXPECT_EQ(w.output, 0);
  EXPECT_EQ(w.output_element, (Shape{2, 4}));
  EXPECT_NEAR(w.analytic - w.numeric, 0.01, 1e-7);
  // One Jacobian entry and the matching element of uᵀJ fail, nothing else.
  EXPECT_EQ(r.num_failures, 2);
  EXPECT_NE(r.text().find("Jacobian entry d output 0 [2, 4] / d input 0 [2, 4]"), std::string::npos)
      << r.text();
}

TEST(Gradcheck, JsonHoldsTheSameReport) {
  Tensor x = leaf({2, 3}, 5, 0.5, 1.5);
  GradcheckReport r = gradcheck(cube<Fault::Factor>(), {x}, quiet("cube \"quoted\""));
  const auto j = nlohmann::json::parse(r.json());
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["name"], "cube \"quoted\"");
  EXPECT_EQ(j["mode"], "full Jacobian");
  EXPECT_EQ(j["options"]["eps"], 1e-6);
  EXPECT_EQ(j["num_failures"], r.num_failures);
  ASSERT_EQ(j["failures"].size(), std::min<size_t>(5, r.failures.size()));
  EXPECT_EQ(j["failures"][0]["element"], nlohmann::json(r.failures[0].element));
  EXPECT_EQ(j["failures"][0]["analytic"].get<double>(), r.failures[0].analytic);
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(j["inputs"][0]["dtype"], "float64");
  EXPECT_TRUE(j["taylor"]["ran"].get<bool>());
}

TEST(Gradcheck, RaisesByDefault) {
  Tensor x = leaf({4}, 6, 0.5, 1.5);
  try {
    gradcheck(cube<Fault::Factor>(), {x}, GradcheckOptions().name("cube"));
    FAIL() << "gradcheck did not throw";
  } catch (const GradcheckError& e) {
    EXPECT_FALSE(e.report().ok);
    EXPECT_EQ(std::string(e.what()), e.report().text());
  }
  EXPECT_NO_THROW(gradcheck(cube<Fault::None>(), {x}, GradcheckOptions().name("cube")));
}

TEST(Gradcheck, Float32InputsAreCheckedInFloat64WithAHint) {
  Tensor x = leaf({3, 4}, 7).detach().to(kFloat32).requires_grad_(true);
  GradcheckReport r =
      gradcheck(TensorFn([](const TensorList& in) { return TensorList{tanh(in[0]) * in[0]}; }), {x},
                quiet("tanh(x) * x"));
  EXPECT_TRUE(r.ok) << r.text();  // no false failure from float32 rounding
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("input 0 is float32: checked in float64"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.text().find("hint: create test inputs with dtype(kFloat64)"), std::string::npos)
      << r.text();
  EXPECT_EQ(r.input_dtypes[0], kFloat32);
  // Without the upcast the differences are float32's: the warning says failures may be rounding.
  GradcheckReport r32 =
      gradcheck(TensorFn([](const TensorList& in) { return TensorList{tanh(in[0]) * in[0]}; }), {x},
                quiet("tanh(x) * x").upcast_float32(false));
  ASSERT_FALSE(r32.warnings.empty());
  EXPECT_NE(r32.warnings[0].find("failures below may be rounding"), std::string::npos)
      << r32.warnings[0];
}

TEST(Gradcheck, KinkIsReportedAsNonDifferentiablePointNotAFailure) {
  Tensor x = leaf({3, 4}, 8);
  {
    NoGradGuard ng;
    x.index_put_(eq(arange(12, TensorOptions().dtype(kInt64)).reshape({3, 4}), 9),
                 0.0);  // x[2, 1] = 0
  }
  GradcheckReport r = gradcheck(
      TensorFn([](const TensorList& in) { return TensorList{relu(in[0])}; }), {x}, quiet("relu"));
  EXPECT_TRUE(r.ok) << r.text();
  ASSERT_EQ(r.kinks.size(), 1u) << r.text();
  EXPECT_EQ(r.kinks[0].element, (Shape{2, 1}));
  EXPECT_EQ(r.kinks[0].value, 0.0);
  EXPECT_NE(r.text().find("non-differentiable point at input 0 [2, 1] = 0.0"), std::string::npos)
      << r.text();
  // Without kink detection the same element is a gradient failure.
  GradcheckReport plain =
      gradcheck(TensorFn([](const TensorList& in) { return TensorList{relu(in[0])}; }), {x},
                quiet("relu").check_kinks(false));
  EXPECT_FALSE(plain.ok);
  EXPECT_EQ(plain.failures.front().element, (Shape{2, 1}));
}

TEST(Gradcheck, BackwardNonlinearInTheUpstreamGradientIsCaught) {
  // One-hot rows of the Jacobian cannot see g * |g| (it is g for g in {0, 1}): the random
  // upstream gradient and the linearity check can.
  Tensor x = leaf({2, 3}, 9, 0.5, 1.5);
  GradcheckReport r = gradcheck(cube<Fault::SquaredUpstream>(), {x}, quiet("cube"));
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.first_failure(), "vjp");
  bool linearity_failed = false;
  for (const auto& c : r.checks) linearity_failed |= c.name == "linearity" && !c.passed;
  EXPECT_TRUE(linearity_failed) << r.text();
  EXPECT_NE(r.text().find("backward is not linear in the upstream gradient"), std::string::npos)
      << r.text();
}

TEST(Gradcheck, NondeterministicBackwardIsCaughtWithinNondetTol) {
  Tensor x = leaf({2, 3}, 10, 0.5, 1.5);
  GradcheckReport r = gradcheck(cube<Fault::Noise>(), {x}, quiet("cube").check_linearity(false));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.first_failure(), "nondeterminism") << r.text();
  EXPECT_NE(r.text().find("backward is not reproducible"), std::string::npos) << r.text();
  GradcheckReport loose =
      gradcheck(cube<Fault::Noise>(), {x}, quiet("cube").check_linearity(false).nondet_tol(1e-6));
  EXPECT_TRUE(loose.ok) << loose.text();
}

TEST(Gradcheck, FunctionThatModifiesAnInputIsCaught) {
  Tensor x = leaf({3}, 11);
  Tensor counter = zeros({1}, f64());  // not differentiated: passed through to every call
  auto f = [](const TensorList& in) {
    Tensor c = in[1];
    c.add_(1.0);  // the write gradcheck must report
    return TensorList{in[0] * 2.0};
  };
  GradcheckReport r = gradcheck(TensorFn(f), {x, counter}, quiet("f"));
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.first_failure(), "inputs_unchanged");
  EXPECT_NE(r.text().find("fn modified input 1 in place"), std::string::npos) << r.text();
  EXPECT_NE(r.text().find("gradcheck_test.cpp"), std::string::npos)
      << r.text();  // where the write was
}

// Two outputs (x², x³); backward mistakes an undefined gradient for ones.
struct TwoOutputs : autograd::Function<TwoOutputs> {
  static TensorList forward(autograd::AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    ctx->set_materialize_grads(false);
    return {x * x, x * x * x};
  }
  static TensorList backward(autograd::AutogradContext* ctx, TensorList g) {
    Tensor x = ctx->get_saved_variables()[0];
    Tensor g0 = g[0].defined() ? g[0] : ones_like(x);  // wrong: undefined means zero
    Tensor g1 = g[1].defined() ? g[1] : zeros_like(x);
    return {g0 * 2.0 * x + g1 * 3.0 * x * x};
  }
};

TEST(Gradcheck, UndefinedOutputGradientMustActAsZero) {
  Tensor x = leaf({4}, 12, 0.5, 1.5);
  GradcheckReport r =
      gradcheck(TensorFn([](const TensorList& in) { return TwoOutputs::apply(in[0]); }), {x},
                quiet("two outputs"));
  ASSERT_FALSE(r.ok) << r.text();
  EXPECT_EQ(r.first_failure(), "undefined_grad");
  EXPECT_NE(r.text().find("an undefined output gradient must act as zeros"), std::string::npos)
      << r.text();
}

TEST(Gradcheck, FastModeOnLargeInputsAndLocalizesAFailure) {
  Tensor x = leaf({64, 64}, 13);
  GradcheckReport r =
      gradcheck(TensorFn([](const TensorList& in) { return TensorList{tanh(in[0]).sum({1})}; }),
                {x}, quiet("tanh"));
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_EQ(r.mode, "fast (uᵀJv)");  // 4096 elements: above full_jacobian_max_numel
  Tensor y = leaf({64, 64}, 14, 0.5, 1.5);
  GradcheckReport bad = gradcheck(cube<Fault::Factor>(), {y}, quiet("cube").fast_mode(true));
  ASSERT_FALSE(bad.ok) << bad.text();
  ASSERT_FALSE(bad.failures.empty()) << bad.text();
  EXPECT_EQ(bad.mode, "fast (uᵀJv)");
  // The fast product fails, then every element is checked to name the worst ones.
  EXPECT_EQ(bad.failures.front().check, "vjp");
  EXPECT_EQ(bad.failures.front().element.size(), 2u);
}

TEST(Gradcheck, TaylorOrderIsTwoForRightAndOneForWrongGradients) {
  Tensor x = leaf({5}, 15, 0.5, 1.5);
  GradcheckReport good = gradcheck(cube<Fault::None>(), {x}, quiet("cube"));
  GradcheckReport bad = gradcheck(cube<Fault::Factor>(), {x}, quiet("cube"));
  EXPECT_NEAR(good.taylor.order, 2.0, 0.15);
  EXPECT_TRUE(good.taylor.passed);
  EXPECT_NEAR(bad.taylor.order, 1.0, 0.15);
  EXPECT_FALSE(bad.taylor.passed);
  EXPECT_EQ(good.taylor.h.size(), good.taylor.remainder.size());
  // A linear function's remainder is rounding only: no order, no failure.
  GradcheckReport lin = gradcheck(
      TensorFn([](const TensorList& in) { return TensorList{in[0] * 3.0}; }), {x}, quiet("3x"));
  EXPECT_TRUE(lin.ok);
  EXPECT_TRUE(std::isnan(lin.taylor.order));
}

TEST(Gradgradcheck, SecondDerivativesOfBuiltInOps) {
  Tensor x = leaf({2, 3}, 16);
  for (auto f : std::vector<TensorFn>{
           [](const TensorList& in) { return TensorList{tanh(in[0])}; },
           [](const TensorList& in) { return TensorList{softmax(in[0], 1)}; },
           [](const TensorList& in) { return TensorList{in[0] * in[0] * in[0]}; }}) {
    GradcheckReport r = gradgradcheck(f, {x}, {}, quiet("f"));
    EXPECT_TRUE(r.ok) << r.text();
    EXPECT_EQ(r.name, "gradgrad of f");
  }
}

TEST(Gradgradcheck, CatchesABackwardThatIsNotDifferentiable) {
  Tensor x = leaf({4}, 17, 0.5, 1.5);
  EXPECT_TRUE(gradcheck(cube<Fault::DetachedSecondOrder>(), {x}, quiet("cube")).ok);
  GradcheckReport r = gradgradcheck(cube<Fault::DetachedSecondOrder>(), {x}, {}, quiet("cube"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text().find("gradcheck failed for gradgrad of cube"), std::string::npos) << r.text();
}

TEST(Gradcheck, NonDifferentiableArgumentsPassThrough) {
  Tensor x = leaf({3, 4}, 18);
  Tensor idx = tensor({2, 0, 1});
  auto f = [](const TensorList& in) {
    return TensorList{gather(in[0], 1, in[1].reshape({3, 1})), in[1]};
  };
  GradcheckReport r = gradcheck(TensorFn(f), {x, idx}, quiet("gather"));
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_EQ(r.checked_inputs, std::vector<int64_t>{0});
  EXPECT_THROW(gradcheck(TensorFn(f), {x.detach(), idx}, quiet("gather")), ValueError);
}

// The stable BCE-with-logits formula must have the right gradient at x = 0 exactly (zero-init
// logits): sigmoid(0) - y = 0.5 - y.
TEST(Gradcheck, BinaryCrossEntropyWithLogitsGradientAtZero) {
  Tensor x = zeros({3}, f64()).requires_grad_(true);
  Tensor y = tensor({0.0, 0.25, 1.0}, f64());
  Tensor loss = nn::functional::binary_cross_entropy_with_logits(x, y, nn::functional::kSum);
  loss.backward();
  EXPECT_TRUE(allclose(x.grad(), tensor({0.5, 0.25, -0.5}, f64()), 0, 1e-15)) << x.grad();
  GradcheckReport r =
      gradcheck(TensorFn([y](const TensorList& in) {
                  return TensorList{nn::functional::binary_cross_entropy_with_logits(in[0], y)};
                }),
                {x}, quiet("bce at 0"));
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_TRUE(r.kinks.empty()) << r.text();
}

}  // namespace

// ---- confidence in the numeric reference
// ---------------------------------------------------------

using gradlab::testing::Verdict;

// The graph from slow.ComposedGraphSlow.GradientOfRandomGraphs,
// RC_PARAMS="seed=12324338776958529620" (v2 = v0 * v0, gelu, exp, exp, sin; v1 unused): at x = 1.5
// the inner exp is about 1e4 and the gradient about 1e5, so sin oscillates faster than eps = 1e-6
// resolves. The gradient is right: gradcheck must not call it a failure.
TensorFn seed_graph() {
  return [](const TensorList& in) { return TensorList{sin(exp(exp(gelu(in[0] * in[0]))))}; };
}

TEST(GradcheckConfidence, UnresolvedFunctionIsInconclusiveNotAFailure) {
  Tensor x0 = full({}, 1.5, f64()).requires_grad_(true);
  Tensor x1 = zeros({}, f64()).requires_grad_(true);
  GradcheckReport r = gradcheck(seed_graph(), {x0, x1}, quiet("random graph"));
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.verdict, Verdict::Inconclusive) << r.text();
  EXPECT_TRUE(r.inconclusive());
  EXPECT_EQ(r.num_failures, 0) << r.text();
  ASSERT_FALSE(r.inconclusive_entries.empty()) << r.text();
  const auto& e = r.inconclusive_entries.front();
  EXPECT_EQ(e.input, 0);
  EXPECT_TRUE(e.refined);
  EXPECT_GT(std::abs(e.analytic), 1e5);
  EXPECT_GT(e.numeric_spread, e.tolerance);  // the reference moves by more than the tolerance
  EXPECT_NEAR(e.numeric_spread, std::abs(e.numeric_eps - e.numeric_half), 1e-9);
  // Richardson: the true derivative is about (4 D(eps/2) - D(eps)) / 3; the analytic one is it.
  EXPECT_NEAR((4 * e.numeric_half - e.numeric_eps) / 3, e.analytic, 0.02 * std::abs(e.analytic));
  // The Taylor fit is unusable for the same reason, and says so.
  EXPECT_TRUE(r.taylor.inconclusive) << r.text();
  EXPECT_TRUE(r.taylor.passed);
  EXPECT_EQ(r.num_inconclusive, static_cast<int64_t>(r.inconclusive_entries.size()) + 1);
  const std::string t = r.text();
  EXPECT_EQ(t.rfind("gradcheck inconclusive for random graph: the numeric estimate is unstable "
                    "here (",
                    0),
            0u)
      << t;
  EXPECT_NE(t.find("inconclusive: the numeric estimate is unstable here at"), std::string::npos)
      << t;
  EXPECT_NE(t.find("taylor: inconclusive: the numeric estimate is unstable here"),
            std::string::npos)
      << t;
  const auto j = nlohmann::json::parse(r.json());
  EXPECT_EQ(j["verdict"], "inconclusive");
  EXPECT_EQ(j["num_inconclusive"], r.num_inconclusive);
  EXPECT_FALSE(j["inconclusive"].empty());
  EXPECT_TRUE(j["taylor"]["inconclusive"].get<bool>());
  // Not raised by default; fail_on_inconclusive makes it a failure that raises.
  EXPECT_NO_THROW(gradcheck(seed_graph(), {x0, x1}, GradcheckOptions().name("random graph")));
  GradcheckReport strict =
      gradcheck(seed_graph(), {x0, x1}, quiet("random graph").fail_on_inconclusive(true));
  EXPECT_FALSE(strict.ok);
  EXPECT_EQ(strict.verdict, Verdict::Inconclusive);
  EXPECT_EQ(strict.first_failure(), "inconclusive");
  EXPECT_THROW(
      gradcheck(seed_graph(), {x0, x1}, GradcheckOptions().name("g").fail_on_inconclusive(true)),
      GradcheckError);
  // Where the same function is resolved (x = 0.5: inner exp about 3, gradient about 4), it passes.
  Tensor calm = full({}, 0.5, f64()).requires_grad_(true);
  GradcheckReport ok = gradcheck(seed_graph(), {calm, x1}, quiet("random graph"));
  EXPECT_EQ(ok.verdict, Verdict::Passed) << ok.text();
  EXPECT_EQ(ok.num_inconclusive, 0);
}

// y = sin(x) * exp(x / 2) (smooth, derivatives of order 1 on [0.5, 1.5]) with a backward that is
// `kScale` times the true one (negative: a wrong sign).
template <int kPerMille>
struct Scaled : autograd::Function<Scaled<kPerMille>> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return sin(x) * exp(x * 0.5);
  }
  static TensorList backward(autograd::AutogradContext* ctx, TensorList g) {
    Tensor x = ctx->get_saved_variables()[0];
    Tensor d = (cos(x) + sin(x) * 0.5) * exp(x * 0.5);
    return {g[0] * d * (kPerMille / 1000.0)};
  }
};
template <int kPerMille>
TensorFn scaled() {
  return [](const TensorList& in) { return TensorList{Scaled<kPerMille>::apply(in[0])}; };
}

template <int kPerMille>
void expect_failed_not_inconclusive(const Tensor& x, const GradcheckOptions& o) {
  GradcheckReport r = gradcheck(scaled<kPerMille>(), {x}, o);
  EXPECT_FALSE(r.ok) << r.text();
  EXPECT_EQ(r.verdict, Verdict::Failed) << r.text();
  EXPECT_EQ(r.num_inconclusive, 0) << r.text();
  EXPECT_TRUE(r.inconclusive_entries.empty()) << r.text();
  ASSERT_FALSE(r.failures.empty()) << r.text();
  const auto& w = r.failures.front();
  EXPECT_TRUE(w.refined);             // redone at eps/2 before it was called a failure
  EXPECT_LT(w.numeric_spread, 1e-6);  // and the reference is stable there
  EXPECT_NEAR(w.analytic / w.numeric, kPerMille / 1000.0, 1e-6);
  EXPECT_EQ(r.text().rfind("gradcheck failed for", 0), 0u) << r.text();
  EXPECT_THROW(gradcheck(scaled<kPerMille>(), {x}, GradcheckOptions()), GradcheckError);
}

TEST(GradcheckConfidence, WrongGradientOnAWellConditionedFunctionIsStillAFailure) {
  Tensor x = leaf({3, 2}, 21, 0.5, 1.5);
  expect_failed_not_inconclusive<1010>(x, quiet("scaled 1.01"));
  expect_failed_not_inconclusive<-1000>(x, quiet("wrong sign"));
  // Just wrong: 0.3% off, three times rtol.
  expect_failed_not_inconclusive<1003>(x, quiet("scaled 1.003"));
  // Fast mode goes through the same refinement.
  expect_failed_not_inconclusive<1010>(leaf({40, 40}, 22, 0.5, 1.5),
                                       quiet("scaled 1.01 fast").fast_mode(true));
  // The control: the right backward passes with nothing refined or inconclusive.
  GradcheckReport good = gradcheck(scaled<1000>(), {x}, quiet("scaled 1"));
  EXPECT_EQ(good.verdict, Verdict::Passed) << good.text();
  EXPECT_EQ(good.num_refined, 0);
  // The Taylor test sees the wrong sign and the 1% factor at order 1 (no tolerance involved).
  for (const auto& r : {gradcheck(scaled<-1000>(), {x}, quiet("sign")),
                        gradcheck(scaled<1010>(), {x}, quiet("1.01"))}) {
    EXPECT_FALSE(r.taylor.passed) << r.text();
    EXPECT_FALSE(r.taylor.inconclusive) << r.text();
    EXPECT_NEAR(r.taylor.order, 1.0, 0.3) << r.text();
  }
}

// exp(k x) with eps = 1e-2, k = 8.3: D(eps) is off by (k eps)²/6 ≈ 1.15e-3 relative, above
// rtol = 1e-3; D(eps) and D(eps/2) differ by 3/4 of that (stable), and the Richardson value is
// right to (k eps)⁴/480 ≈ 4e-8: a right gradient that only the extrapolation confirms.
// exp(8.3 x) with a backward 0.5% too large.
struct ExpScaled : autograd::Function<ExpScaled> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
    Tensor y = exp(x * 8.3);
    ctx->save_for_backward({y});
    return y;
  }
  static TensorList backward(autograd::AutogradContext* ctx, TensorList g) {
    return {g[0] * ctx->get_saved_variables()[0] * (8.3 * 1.005)};
  }
};

TEST(GradcheckConfidence, TruncationErrorAtEpsIsResolvedByRichardson) {
  Tensor x = full({1}, 0.3, f64()).requires_grad_(true);
  auto f = TensorFn([](const TensorList& in) { return TensorList{exp(in[0] * 8.3)}; });
  // A raised eps makes the Taylor test assume float32 rounding (1e-5 relative): exp's remainder is
  // above that floor at h = 1e-3 only, too few points to fit an order, and the floor bounds the
  // error along v only loosely: inconclusive, not a pass.
  GradcheckReport coarse = gradcheck(f, {x}, quiet("exp(8.3 x)").eps(1e-2).atol(1e-12));
  EXPECT_EQ(coarse.verdict, Verdict::Inconclusive) << coarse.text();
  EXPECT_TRUE(coarse.taylor.inconclusive) << coarse.text();
  EXPECT_NE(coarse.text().find("too few to fit an order"), std::string::npos) << coarse.text();
  EXPECT_TRUE(coarse.inconclusive_entries.empty()) << coarse.text();
  // fn is float64 throughout: with its rounding level the Taylor fit has points enough.
  GradcheckOptions o = quiet("exp(8.3 x)").eps(1e-2).atol(1e-12).taylor_rel_noise(1e-14);
  GradcheckReport r = gradcheck(f, {x}, o);
  EXPECT_EQ(r.verdict, Verdict::Passed) << r.text();
  EXPECT_EQ(r.num_refined, 2);  // the Jacobian entry and uᵀJ
  EXPECT_NE(r.text().find("(2 refined at eps/2)"), std::string::npos) << r.text();
  EXPECT_LT(r.max_abs_err, 1e-6 * std::exp(0.3 * 8.3) * 8.3) << r.text();
  // The same with a 0.5% wrong backward is a failure against the refined value.
  GradcheckReport bad = gradcheck(
      TensorFn([](const TensorList& in) { return TensorList{ExpScaled::apply(in[0])}; }), {x}, o);
  EXPECT_EQ(bad.verdict, Verdict::Failed) << bad.text();
  ASSERT_FALSE(bad.failures.empty());
  EXPECT_TRUE(bad.failures.front().refined);
  EXPECT_NEAR(bad.failures.front().analytic / bad.failures.front().numeric, 1.005, 1e-6);
}

// sin(3e4 x): resolved at eps = 1e-6 (phase 0.03), not at the Taylor test's first steps (h = 1e-3:
// 30 radians, where |L(x+hv) - L(x)| << h |∇L·v| mimics order 1). The test halves h further until
// the orders settle, and passes a right gradient.
TEST(GradcheckConfidence, TaylorHalvesFurtherUntilTheOrdersSettle) {
  Tensor x = full({1}, 0.7, f64()).requires_grad_(true);
  GradcheckReport r =
      gradcheck(TensorFn([](const TensorList& in) { return TensorList{sin(in[0] * 3e4)}; }), {x},
                quiet("sin(3e4 x)"));
  EXPECT_EQ(r.verdict, Verdict::Passed) << r.text();
  EXPECT_FALSE(r.taylor.inconclusive) << r.text();
  EXPECT_GT(r.taylor.h.size(), 7u) << r.text();
  EXPECT_NEAR(r.taylor.order, 2.0, 0.3) << r.text();
  EXPECT_GT(r.taylor.noise, 0.0);
}

// 1 + 10 ((x - ½)³ ± 2e-4 (x - ½)²) at x = ½: the remainder is tiny and, for one sign of v, its
// cubic and quadratic terms cancel near h = 2e-4, so the orders do not settle before it reaches
// the rounding floor F. Two remainders below F at h and h/2 bound the first-order error by 5F/h,
// far below the tolerance: a pass, not an inconclusive fit.
TEST(GradcheckConfidence, TaylorRemainderReachingTheFloorBoundsTheError) {
  Tensor x = full({1}, 0.5, f64()).requires_grad_(true);
  int via_floor = 0;
  for (double c2 : {2e-4, -2e-4}) {
    auto f = TensorFn([c2](const TensorList& in) {
      Tensor d = in[0] - 0.5;
      return TensorList{(d * d * d + d * d * c2) * 10.0 + 1.0};
    });
    GradcheckReport r = gradcheck(f, {x}, quiet("cubic"));
    EXPECT_EQ(r.verdict, Verdict::Passed) << r.text();
    EXPECT_FALSE(r.taylor.inconclusive) << r.text();
    for (const auto& c : r.checks)
      if (c.name == "taylor" && c.detail.find("reaches the rounding floor") != std::string::npos)
        ++via_floor;
  }
  EXPECT_EQ(via_floor, 1);
}

// gelu(x) = 0.5 x (1 + erf(x/√2)) is -0 in float64 for x below about -8.4 (erf rounds to -1, as
// in PyTorch), while its analytic gradient at these inputs is 1e-19 or less, not 0: the Taylor
// remainder is h |∇L·v|, order 1, from a difference far below atol (slow.ComposedGraphSlow, seed
// 17690064307483740343, failed on it). A constant function whose backward is off by more than atol still fails.
struct ConstantWithGrad : autograd::Function<ConstantWithGrad> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double slope) {
    ctx->saved_data["slope"] = slope;
    return x * 0.0;
  }
  static TensorList backward(autograd::AutogradContext* ctx, TensorList g) {
    return {g[0] * ctx->saved_data["slope"].toDouble(), Tensor()};
  }
};

TEST(GradcheckConfidence, OrderOneFromAGradientDifferenceBelowAtolIsNotAFailure) {
  Tensor x = tensor({-11.0, -9.5, -12.25}, f64()).requires_grad_(true);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    GradcheckReport r = gradcheck(TensorFn([](const TensorList& in) { return TensorList{gelu(in[0])}; }), {x},
                                  quiet("gelu deep tail").seed(seed).fail_on_inconclusive(true));
    EXPECT_EQ(r.verdict, Verdict::Passed) << "seed " << seed << "\n" << r.text();
    EXPECT_TRUE(r.taylor.passed) << r.text();
    EXPECT_NEAR(r.taylor.order, 1.0, 0.3) << r.text();
    int within_atol = 0;
    for (const auto& c : r.checks)
      if (c.name == "taylor" && c.detail.find("differs from the numeric one by only") != std::string::npos)
        ++within_atol;
    EXPECT_EQ(within_atol, 1) << r.text();
  }
  // The same shape of remainder from a wrong backward of a constant: order 1, error above atol.
  auto constant = [](double slope) {
    return TensorFn([slope](const TensorList& in) { return TensorList{ConstantWithGrad::apply(in[0], slope)}; });
  };
  Tensor y = tensor({0.5, -1.5, 2.0}, f64()).requires_grad_(true);
  GradcheckReport bad = gradcheck(constant(1e-3), {y}, quiet("constant, backward 1e-3"));
  EXPECT_EQ(bad.verdict, Verdict::Failed) << bad.text();
  EXPECT_FALSE(bad.taylor.passed) << bad.text();
  EXPECT_NEAR(bad.taylor.order, 1.0, 0.3) << bad.text();
  // Below atol the elementwise check accepts it, and so does the Taylor test now.
  GradcheckReport tiny = gradcheck(constant(1e-9), {y}, quiet("constant, backward 1e-9"));
  EXPECT_EQ(tiny.verdict, Verdict::Passed) << tiny.text();
  EXPECT_TRUE(tiny.taylor.passed) << tiny.text();
}

// Regressions from the op-table properties: second derivatives on small, well-conditioned
// inputs, judged strictly (inconclusive counts as a failure) with gradcheck seeds 0..99 and the
// ones named (the seed draws u, the upstream gradients and the Taylor direction v).
void expect_gradgrad_passes_strictly(const std::string& row, const gradlab::testing::OpParams& p,
                                     const Tensor& x, std::vector<uint64_t> seeds = {}) {
  const gradlab::testing::OpSpec& spec = gradlab::testing::op_spec(row);
  for (uint64_t s = 0; s < 100; ++s) seeds.push_back(s);
  int passed = 0;
  for (uint64_t seed : seeds) {
    GradcheckOptions o = spec.options();
    o.raise_exception(false).fail_on_inconclusive(true).seed(seed).name(row);
    GradcheckReport r = gradgradcheck(spec.bind(p), {x.detach().requires_grad_(true)}, {}, o);
    EXPECT_EQ(r.verdict, gradlab::testing::Verdict::Passed) << "seed " << seed << "\n" << r.text();
    passed += r.verdict == gradlab::testing::Verdict::Passed ? 1 : 0;
  }
  EXPECT_EQ(passed, static_cast<int>(seeds.size()));
}

// slow.OpTable/GradgradSlow.SecondOrder/tanh, RC_PARAMS="seed=10628504319778601157": the Taylor
// fit read order 1.42 on rounding noise ("expected 2") for a right second derivative.
TEST(GradcheckConfidence, TanhSecondOrderOnTheFlakySeedsInputPasses) {
  Tensor x = tensor({1.0011, 0.0417, 2.4729, -1.4951}, f64()).reshape({2, 2});
  expect_gradgrad_passes_strictly("tanh", gradlab::testing::OpParams(), x);
}

// OpTable/Gradgrad.SecondOrder/batch_norm, seed 17111494834531011952: batch_norm over two values
// per channel is nearly constant, its gradient comes from cancellation, and two tiny-step
// samples put the rounding floor at 1.5e-17 under remainders of ~1e-16: the orders never settled
// (inconclusive). On this input (the case rounded to 4 digits) that happened for 59 of 20000
// gradcheck seeds, the first five listed; six samples measure the floor.
TEST(GradcheckConfidence, BatchNormOfTwoValuesSecondOrderIsConclusive) {
  Tensor x = tensor({-1.8524, 0.9802, -1.4791, 1.6990}, f64()).reshape({1, 2, 2});
  expect_gradgrad_passes_strictly(
      "batch_norm", gradlab::testing::OpParams().set("training", true).set("affine", false), x,
      {240, 611, 1118, 1397, 1566});
}
