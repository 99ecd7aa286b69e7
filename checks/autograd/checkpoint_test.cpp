// gradlab::checkpoint (torch.utils.checkpoint): the same gradients as the plain run, for inputs
// and captured parameters, less memory kept between forward and backward, dropout repeated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gradlab/gradlab.hpp"

namespace {

using namespace gradlab;
namespace F = gradlab::nn::functional;

struct Mlp {
  Tensor w1, w2;
  explicit Mlp(int64_t width) {
    manual_seed(3);
    w1 = (randn({width, width}) * 0.1).requires_grad_(true);
    w2 = (randn({width, width}) * 0.1).requires_grad_(true);
  }
  // activations of x's size inside: matmul, relu (saved), matmul, tanh (saved, the output)
  Tensor block(const Tensor& x) const { return tanh(matmul(relu(matmul(x, w1)), w2)); }
};

TEST(Checkpoint, GradientsEqualThePlainRun) {
  Mlp m(16);
  manual_seed(4);
  Tensor x = randn({8, 16}, TensorOptions().requires_grad(true));
  Tensor plain = m.block(m.block(x)).pow(2).sum();
  const TensorList want = autograd::grad({plain}, {x, m.w1, m.w2});
  Tensor h = checkpoint([&](const TensorList& in) { return m.block(in[0]); }, {x});
  EXPECT_EQ(h.grad_fn()->name(), "CheckpointBackward");
  Tensor ck = checkpoint([&](const TensorList& in) { return m.block(in[0]); }, {h}).pow(2).sum();
  EXPECT_EQ(ck.item<double>(), plain.item<double>());
  ck.backward();
  // the recomputation does the same float operations: equal bit for bit
  EXPECT_TRUE(equal(x.grad(), want[0]));
  EXPECT_TRUE(equal(m.w1.grad(), want[1]));
  EXPECT_TRUE(equal(m.w2.grad(), want[2]));
}

TEST(Checkpoint, CapturedParametersGetGradientsWhenNoInputRequiresGrad) {
  Mlp m(8);
  Tensor x = ones({2, 8});
  checkpoint([&](const TensorList& in) { return m.block(in[0]); }, {x}).sum().backward();
  Tensor g1 = m.w1.grad().clone();
  m.w1.mutable_grad().zero_();
  m.block(x).sum().backward();
  EXPECT_TRUE(equal(g1, m.w1.grad()));
}

TEST(Checkpoint, KeepsOnlyTheInputsBetweenForwardAndBackward) {
  Mlp m(256);
  Tensor x = randn({512, 256}, TensorOptions().requires_grad(true));
  memory::empty_cache();
  auto held_after_forward = [&](bool ck) {
    const std::size_t base = memory::allocated();
    Tensor y = ck ? checkpoint([&](const TensorList& in) { return m.block(in[0]); }, {x}) : m.block(x);
    const std::size_t held = memory::allocated() - base;  // y + what backward keeps
    y.sum().backward();
    return held;
  };
  const std::size_t act = 512 * 256 * 4;  // one [512, 256] float32 activation
  const std::size_t plain = held_after_forward(false), ck = held_after_forward(true);
  EXPECT_GE(plain, 2 * act);  // y and relu's output, saved for backward (x is the caller's)
  EXPECT_EQ(ck, act);         // y only
}

TEST(Checkpoint, DropoutMasksRepeatInTheRecomputation) {
  manual_seed(5);
  Tensor x = randn({64, 32}, TensorOptions().requires_grad(true));
  auto fn = [](const TensorList& in) { return F::dropout(in[0] * 3.0, 0.5, true); };
  manual_seed(9);
  Tensor y = checkpoint(fn, {x});
  y.sum().backward();
  // d/dx of dropout(3x) is 3 * mask / (1 - p): zero exactly where the forward output is zero
  EXPECT_TRUE(equal(eq(x.grad(), 0.0), eq(y, 0.0)));
  Tensor x2 = x.detach().requires_grad_(true);
  manual_seed(9);
  fn({x2}).sum().backward();
  EXPECT_TRUE(equal(x.grad(), x2.grad()));
}

TEST(Checkpoint, AModifiedInputIsReportedAndBadArgumentsAreErrors) {
  Tensor x = randn({4}, TensorOptions().requires_grad(true));
  Tensor a = x * 1.0;
  Tensor y = checkpoint([](const TensorList& in) { return in[0] * in[0]; }, {a});
  {
    NoGradGuard g;
    a.add_(1.0);
  }
  EXPECT_THROW(y.sum().backward(), AutogradError);
  EXPECT_THROW(checkpoint(nullptr, {x}), ValueError);
  EXPECT_THROW(checkpoint([](const TensorList&) { return Tensor(); }, {x}), ValueError);
}

}  // namespace
