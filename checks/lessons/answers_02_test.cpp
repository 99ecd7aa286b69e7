// Answers to the exercises of lesson 02 (tensors and autograd), checked.
#include <gtest/gtest.h>

#include <cmath>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <string>
#include <vector>

namespace gl = gradlab;

namespace {
const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);
const gl::TensorOptions f64_grad = gl::dtype(gl::kFloat64).requires_grad(true);
}  // namespace

TEST(Lesson02Answers, Exercise1SigmoidChainRule) {
  const double xv = 0.5, wv = -1.5, bv = 0.25;
  gl::Tensor sx = gl::tensor(xv, f64_grad), sw = gl::tensor(wv, f64_grad),
             sb = gl::tensor(bv, f64_grad);
  gl::Tensor h = gl::sigmoid(sw * sx + sb);
  (h * h).backward();
  const double u = wv * xv + bv, s = 1 / (1 + std::exp(-u));
  const double dloss_du = 2 * s * (s * (1 - s));  // d(h^2)/dh * d sigmoid/du
  EXPECT_NEAR(sw.grad().item<double>(), dloss_du * xv, 1e-12);
  EXPECT_NEAR(sx.grad().item<double>(), dloss_du * wv, 1e-12);
  EXPECT_NEAR(sb.grad().item<double>(), dloss_du, 1e-12);
}

TEST(Lesson02Answers, Exercise2ThreeStepsAndMissingDivide) {
  gl::Tensor a = gl::tensor({1.0, 2.0}, f64_grad);
  for (int i = 0; i < 3; ++i) (a * a).sum().backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{6.0, 12.0}));  // 3 * 2a

  gl::Tensor bX = gl::tensor({1.0, 2.0, -1.0, 0.5}, f64);
  gl::Tensor bY = gl::tensor({2.0, 3.0, -1.0, 2.0}, f64);
  gl::Tensor w = gl::tensor(0.5, f64_grad);
  ((w * bX - bY).pow(2)).mean().backward();
  const double full = w.grad().item<double>();
  w.zero_grad();
  for (int64_t start : {0, 2})
    ((w * bX.narrow(0, start, 2) - bY.narrow(0, start, 2)).pow(2)).sum().backward();  // no / 4
  EXPECT_NEAR(w.grad().item<double>(), 4 * full, 1e-12);
}

TEST(Lesson02Answers, Exercise3RetainGradTooLate) {
  gl::Tensor px = gl::tensor(0.5, f64_grad), pw = gl::tensor(-1.5, f64_grad),
             pb = gl::tensor(0.25, f64_grad);
  gl::Tensor ph = gl::tanh(pw * px + pb);
  gl::Tensor ploss = ph * ph;
  ploss.backward();
  ph.retain_grad();  // too late: backward has already passed h
  EXPECT_TRUE(ph.retains_grad());
  EXPECT_FALSE(ph.grad().defined());
  EXPECT_TRUE(px.grad().defined());
}

TEST(Lesson02Answers, Exercise4BackwardOfNoGradLoss) {
  gl::Tensor sx = gl::tensor(0.5, f64_grad), sw = gl::tensor(-1.5, f64_grad),
             sb = gl::tensor(0.25, f64_grad);
  gl::Tensor loss;
  {
    gl::NoGradGuard g;
    gl::Tensor h = gl::tanh(sw * sx + sb);
    loss = h * h;
  }
  std::string msg;
  try {
    loss.backward();
  } catch (const std::exception& e) {
    msg = e.what();
  }
  std::cout << "message: " << msg << "\n";
  EXPECT_NE(msg.find("does not require grad"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NoGradGuard"), std::string::npos) << msg;
}
