// Answers to the exercises of lesson 01 (dynamic graph), checked.
#include <gtest/gtest.h>

#include <cmath>
#include <gradlab/gradlab.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace gl = gradlab;

namespace {

int count_named(const gl::Tensor& root, const std::string& name) {
  std::istringstream lines(gl::autograd::graph_summary(root));
  int n = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name, 0) == 0 && (line.size() == name.size() || line[name.size()] == ' ')) ++n;
  return n;
}

// The lesson's forward with the third branch of exercise 1.
gl::Tensor forward3(const gl::Tensor& x, char* branch) {
  gl::Tensor h = x * 2;
  const float s = h.sum().item<float>();
  if (s == 0) {
    *branch = 'C';
    return (h * h).sum();
  }
  if (s > 0) {
    *branch = 'A';
    return gl::relu(h).sum();
  }
  *branch = 'B';
  return (gl::tanh(h) * h).sum();
}

// The lesson's forward with its body under NoGradGuard (exercise 3).
gl::Tensor forward_nograd(const gl::Tensor& x) {
  gl::NoGradGuard no_grad;
  gl::Tensor h = x * 2;
  gl::Tensor y = h.sum().item<float>() > 0 ? gl::relu(h) : gl::tanh(h) * h;
  return y.sum();
}

}  // namespace

TEST(Lesson01Answers, Exercise1ThirdBranchZeroSum) {
  gl::Tensor x = gl::tensor({{1.0, -1.0}, {2.0, -2.0}}, gl::requires_grad());  // sum(2x) = 0
  char b = '?';
  gl::Tensor l = forward3(x, &b);
  EXPECT_EQ(b, 'C');
  // Sum <- Mul(h, h) <- Mul(x * 2) <- AccumulateGrad
  EXPECT_EQ(gl::autograd::count_nodes(l), 4u);
  EXPECT_EQ(count_named(l, "MulBackward0"), 2);
  EXPECT_EQ(count_named(l, "SumBackward0"), 1);
  EXPECT_EQ(count_named(l, "AccumulateGrad"), 1);
  l.backward();
  const std::vector<float> g = x.grad().to_vector<float>(), xv = x.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_FLOAT_EQ(g[i], 2 * 2 * (2 * xv[i]));  // 2*2*h = 8x
}

TEST(Lesson01Answers, Exercise2LoopTo1000) {
  gl::Tensor xl = gl::tensor({0.5, 1.0}, gl::requires_grad());
  gl::Tensor y = xl;
  int steps = 0;
  while (gl::norm(y).item<float>() < 1000) {
    y = y * 2;
    ++steps;
  }
  gl::Tensor loss = y.sum();
  EXPECT_EQ(steps, 10);  // 1.118 * 2^9 = 572 < 1000 <= 1.118 * 2^10 = 1145
  EXPECT_EQ(gl::autograd::count_nodes(loss), 12u);
  EXPECT_EQ(count_named(loss, "MulBackward0"), 10);
  loss.backward();
  EXPECT_EQ(xl.grad().to_vector<float>(), (std::vector<float>{1024.0f, 1024.0f}));
}

TEST(Lesson01Answers, Exercise3NoGradGuardRecordsNothing) {
  gl::Tensor xa = gl::tensor({{1.0, -2.0}, {3.0, 0.5}}, gl::requires_grad());
  gl::Tensor xb = gl::tensor({{-1.0, 2.0}, {-3.0, 0.5}}, gl::requires_grad());
  gl::Tensor la = forward_nograd(xa), lb = forward_nograd(xb);
  EXPECT_NEAR(la.item<double>(), 9.0, 1e-5);  // the values are unchanged
  EXPECT_EQ(gl::autograd::count_nodes(la), 0u);
  EXPECT_EQ(gl::autograd::count_nodes(lb), 0u);
  EXPECT_EQ(la.grad_fn(), nullptr);
  EXPECT_FALSE(la.requires_grad());
  try {
    la.backward();
    ADD_FAILURE() << "backward did not throw";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("does not require grad"), std::string::npos) << e.what();
  }
}
