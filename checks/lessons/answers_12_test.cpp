// The answers of lesson 12's exercises that are numbers or behaviour (lessons/12_out_of_memory).
#include <gtest/gtest.h>

#include "gradlab/gradlab.hpp"

namespace {

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace F = gradlab::nn::functional;

nn::Sequential mlp() {
  gl::manual_seed(0);
  return nn::Sequential(nn::Linear(256, 512), nn::ReLU(), nn::Linear(512, 512), nn::ReLU(), nn::Linear(512, 512),
                        nn::ReLU(), nn::Linear(512, 10));
}

std::vector<double> flat(nn::Sequential& m) {
  gl::NoGradGuard g;
  return nn::utils::parameters_to_vector(m->parameters()).to_vector<double>();
}

// Exercise 1: 4 accumulated micro-batch losses without the division give 4x the big batch's step.
TEST(Lesson12Answers, Exercise1ForgettingTheDivision) {
  gl::manual_seed(1);
  const gl::Tensor x = gl::randn({512, 256}), y = gl::randint(0, 10, {512});
  nn::Sequential big = mlp(), acc = mlp(), start = mlp();
  gl::optim::SGD ob(big->parameters(), gl::optim::SGDOptions(0.4)), oa(acc->parameters(), gl::optim::SGDOptions(0.1));
  F::cross_entropy(big(x), y).backward();
  ob.step();  // lr 0.4 = 4 x 0.1
  for (int k = 0; k < 4; ++k) F::cross_entropy(acc(x.narrow(0, 128 * k, 128)), y.narrow(0, 128 * k, 128)).backward();
  oa.step();  // lr 0.1, losses not divided by 4
  const std::vector<double> b = flat(big), a = flat(acc), s = flat(start);
  double diff = 0, moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    moved = std::max(moved, std::abs(b[i] - s[i]));
  }
  EXPECT_LT(diff, 1e-6);  // equal up to float32 rounding
  EXPECT_GT(moved, 1e-4);
}

// Exercise 3: float16 + GradScaler on the full-size loss skips no step; the scale stays 65536.
TEST(Lesson12Answers, Exercise3NoStepIsSkipped) {
  gl::manual_seed(1);
  const gl::Tensor x = gl::randn({256, 256}), y = gl::randint(0, 10, {256});
  nn::Sequential m = mlp();
  gl::optim::SGD o(m->parameters(), gl::optim::SGDOptions(0.0));
  gl::amp::GradScaler scaler;
  for (int t = 0; t < 4; ++t) {
    o.zero_grad();
    gl::Tensor loss;
    {
      gl::amp::autocast ac(gl::kCPU, gl::kFloat16);
      loss = F::cross_entropy(m(x), y);
    }
    scaler.scale(loss).backward();
    EXPECT_TRUE(scaler.step(o)) << "step " << t;
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 65536.0);
  }
}

}  // namespace
