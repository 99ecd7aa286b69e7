// Lesson 19's exercise answers (lessons/19_inside_the_engine/README.md), checked.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <gradlab/gradlab.hpp>
#include <gradlab/ops/op.hpp>
#include <gradlab/testing/gradcheck.hpp>
#include <gradlab/testing/mutants.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace gl = gradlab;
using gl::autograd::GradList;
using gl::testing::GradcheckOptions;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

// Exercise 1: softsign as an op struct.
// y = x / (1 + |x|)      dx = dy / (1 + |x|)²
struct Softsign : gl::autograd::Op<Softsign> {
  static constexpr const char* kName = "SoftsignBackward0";
  gl::autograd::SavedTensor x_;
  gl::Tensor forward(const gl::Tensor& x) {
    save(x_, x);
    return x / (gl::abs(x) + 1.0);
  }
  GradList backward(const GradList& dy) {
    gl::Tensor d = gl::abs(x_.unpack()) + 1.0;
    return {dy[0] / (d * d)};
  }
};
gl::Tensor softsign(const gl::Tensor& x, gl::Site site = {}) {
  return gl::autograd::record<Softsign>(site, x);
}

TEST(Lesson19Answers, Exercise1SoftsignPassesGradcheckEvenAtZero) {
  gl::Tensor x = gl::tensor({-2.0, -0.5, 0.0, 0.3, 1.7}, f64.requires_grad(true));
  gl::Tensor y = softsign(x);
  EXPECT_EQ(y.grad_fn()->name(), "SoftsignBackward0");
  const auto rep = gl::testing::gradcheck(gl::testing::TensorFn([](const gl::TensorList& in) {
                                            return gl::TensorList{softsign(in[0])};
                                          }),
                                          {x}, GradcheckOptions().raise_exception(false));
  EXPECT_TRUE(rep.ok) << rep.first_failure();
  EXPECT_TRUE(rep.kinks.empty()) << "1/(1+|x|)² is continuous at 0: no kink to report";
  // The wrong backward dy / (1 + |x|) (the square forgotten) is rejected.
  gl::testing::BackwardOverride<Softsign> m([](Softsign& op, const GradList& g) {
    return GradList{g[0] / (gl::abs(op.x_.unpack()) + 1.0)};
  });
  const auto bad = gl::testing::gradcheck(gl::testing::TensorFn([](const gl::TensorList& in) {
                                            return gl::TensorList{softsign(in[0])};
                                          }),
                                          {x.detach().requires_grad_(true)},
                                          GradcheckOptions().raise_exception(false));
  EXPECT_FALSE(bad.ok);
}

// Exercise 2: the lesson's smooth_abs with a backward 0.05% too large.
struct SmoothAbs : gl::autograd::Op<SmoothAbs> {
  static constexpr const char* kName = "SmoothAbsBackward0";
  gl::autograd::SavedTensor x_, y_;
  gl::Tensor forward(const gl::Tensor& x) {
    gl::Tensor y = gl::sqrt(x * x + 1.0) - 1.0;
    save(x_, x);
    save(y_, y, gl::autograd::kOutput);
    return y;
  }
  GradList backward(const GradList& dy) { return {dy[0] * x_.unpack() / (y_.unpack() + 1.0)}; }
};
gl::Tensor smooth_abs(const gl::Tensor& x, gl::Site site = {}) {
  return gl::autograd::record<SmoothAbs>(site, x);
}

TEST(Lesson19Answers, Exercise2ASmallScaleErrorPassesTheToleranceButNotTheTaylorTest) {
  gl::testing::BackwardOverride<SmoothAbs> m([](SmoothAbs& op, const GradList& g) {
    return GradList{1.0005 * g[0] * op.x_.unpack() / (op.y_.unpack() + 1.0)};
  });
  gl::Tensor x = gl::tensor({{-2.5, -0.3, 0.0}, {0.4, 1.0, 2.8}}, f64.requires_grad(true));
  const gl::testing::TensorFn f(
      [](const gl::TensorList& in) { return gl::TensorList{smooth_abs(in[0])}; });
  const auto rep = gl::testing::gradcheck(f, {x}, GradcheckOptions().raise_exception(false));
  // Every Jacobian entry is within atol + rtol |numeric| (5e-4 relative < rtol 1e-3) ...
  EXPECT_EQ(rep.num_failures, 0);
  // ... and the Taylor remainder, which has no tolerance, still sees it.
  EXPECT_FALSE(rep.ok);
  EXPECT_EQ(rep.first_failure(), "taylor");
  // With rtol 1e-4 the Jacobian comparison catches it too.
  const auto strict = gl::testing::gradcheck(
      f, {x}, GradcheckOptions().rtol(1e-4).check_taylor(false).raise_exception(false));
  EXPECT_GT(strict.num_failures, 0);
}

// Exercise 3: relu in the lesson's Value engine.
struct V {
  double data = 0, grad = 0;
  std::vector<std::shared_ptr<V>> prev;
  std::function<void()> backward_fn = [] {};
};
using Value = std::shared_ptr<V>;
Value val(double d) {
  return std::make_shared<V>(V{d, 0, {}, [] {}});
}
Value operator*(const Value& a, const Value& b) {
  auto o = std::make_shared<V>(V{a->data * b->data, 0, {a, b}, {}});
  V* w = o.get();
  o->backward_fn = [a, b, w] { a->grad += b->data * w->grad, b->grad += a->data * w->grad; };
  return o;
}
Value operator+(const Value& a, const Value& b) {
  auto o = std::make_shared<V>(V{a->data + b->data, 0, {a, b}, {}});
  V* w = o.get();
  o->backward_fn = [a, b, w] { a->grad += w->grad, b->grad += w->grad; };
  return o;
}
Value relu(const Value& a) {
  auto o = std::make_shared<V>(V{a->data > 0 ? a->data : 0.0, 0, {a}, {}});
  V* w = o.get();
  o->backward_fn = [a, w] { a->grad += (w->data > 0 ? 1.0 : 0.0) * w->grad; };
  return o;
}
void backward(const Value& root) {
  std::vector<V*> post;
  std::set<V*> seen;
  std::function<void(V*)> visit = [&](V* n) {
    if (!seen.insert(n).second) return;
    for (const Value& p : n->prev) visit(p.get());
    post.push_back(n);
  };
  visit(root.get());
  root->grad = 1;
  for (auto it = post.rbegin(); it != post.rend(); ++it) (*it)->backward_fn();
}

TEST(Lesson19Answers, Exercise3ReluInTheValueEngineMatchesGradlab) {
  for (const auto& [v1, v2] :
       {std::pair{0.8, -0.45}, std::pair{-0.8, 0.45}, std::pair{0.8, -1.45}}) {
    Value x1 = val(v1), x2 = val(v2);
    Value r = relu(x1 * x2 + x1);
    Value y = r * r + r * x2;
    backward(y);
    gl::Tensor g1 = gl::tensor(v1, f64.requires_grad(true)),
               g2 = gl::tensor(v2, f64.requires_grad(true));
    gl::Tensor gr = gl::relu(g1 * g2 + g1);
    gl::Tensor gy = gr * gr + gr * g2;
    gy.backward();
    EXPECT_NEAR(y->data, gy.item<double>(), 1e-12);
    EXPECT_NEAR(x1->grad, g1.grad().item<double>(), 1e-12) << v1 << ", " << v2;
    EXPECT_NEAR(x2->grad, g2.grad().item<double>(), 1e-12) << v1 << ", " << v2;
  }
}

// Exercise 4: q = exp(h.detach()): h keeps one consumer, x.grad loses the path through q.
TEST(Lesson19Answers, Exercise4DetachCutsOnePathOfTheDiamond) {
  const double x0 = 0.6;
  gl::Tensor x = gl::tensor(x0, f64.requires_grad(true));
  gl::Tensor h = gl::tanh(x);
  gl::Tensor p = gl::sin(h), q = gl::exp(h.detach());
  std::vector<std::string> order;
  p.register_hook([&](const gl::Tensor&) { order.push_back("p"); });
  h.register_hook([&](const gl::Tensor&) { order.push_back("h"); });
  (p * q).backward();
  const double hv = std::tanh(x0);
  EXPECT_NEAR(x.grad().item<double>(), std::cos(hv) * std::exp(hv) * (1 - hv * hv), 1e-12);
  EXPECT_EQ(order, (std::vector<std::string>{"p", "h"}));
  EXPECT_FALSE(q.requires_grad());
}

}  // namespace
