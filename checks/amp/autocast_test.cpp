// amp::autocast: the op policy (low type / float32), nesting and disabling, thread-locality,
// gradients reaching float32 parameters, and that backward is never autocast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "gradlab/gradlab.hpp"

namespace {

using namespace gradlab;
namespace F = gradlab::nn::functional;

TEST(Autocast, LowTypeListRunsInBFloat16OnTheCpu) {
  manual_seed(0);
  Tensor x = randn({4, 3}), w = randn({5, 3}), b = randn({5});
  Tensor img = randn({1, 2, 5, 5}), k = randn({3, 2, 3, 3});
  amp::autocast ac(kCPU);
  EXPECT_TRUE(amp::is_autocast_enabled(kCPU));
  EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16);
  EXPECT_EQ(matmul(x, w.t()).dtype(), kBFloat16);
  EXPECT_EQ(mm(x, w.t()).dtype(), kBFloat16);
  EXPECT_EQ(bmm(x.unsqueeze(0), w.t().unsqueeze(0)).dtype(), kBFloat16);
  EXPECT_EQ(F::linear(x, w, b).dtype(), kBFloat16);
  EXPECT_EQ(F::conv2d(img, k, Tensor()).dtype(), kBFloat16);
  EXPECT_EQ(relu(F::linear(x, w, b)).dtype(), kBFloat16);  // not on a list: its input's dtype
  // float64 is not "eligible" (PyTorch): it stays float64
  EXPECT_EQ(matmul(x.to(kFloat64), w.t().to(kFloat64)).dtype(), kFloat64);
}

TEST(Autocast, Float32ListWidensHalfInputs) {
  manual_seed(1);
  Tensor h = randn({4, 6}).to(kBFloat16);
  Tensor target = tensor({0, 2, 5, 1});
  amp::autocast ac(kCPU);
  EXPECT_EQ(softmax(h, 1).dtype(), kFloat32);
  EXPECT_EQ(log_softmax(h, 1).dtype(), kFloat32);
  EXPECT_EQ(F::cross_entropy(h, target).dtype(), kFloat32);
  EXPECT_EQ(F::mse_loss(h, h).dtype(), kFloat32);
  EXPECT_EQ(F::layer_norm(h, {6}, Tensor(), Tensor(), 1e-5).dtype(), kFloat32);
  EXPECT_EQ(exp(h).dtype(), kFloat32);
  EXPECT_EQ(log(h.abs() + 1).dtype(), kFloat32);
  EXPECT_EQ(sum(h).dtype(), kFloat32);
  EXPECT_EQ(mean(h, {1}).dtype(), kFloat32);
  EXPECT_EQ((h + h).dtype(), kBFloat16);  // not on a list
  // the ops that had drifted off the list: their structs' kAutocast trait now says Float32
  EXPECT_EQ(pow(h, 2.0).dtype(), kFloat32);
  EXPECT_EQ(pow(h.abs() + 1, h).dtype(), kFloat32);
  EXPECT_EQ(softplus(h).dtype(), kFloat32);
  EXPECT_EQ(F::smooth_l1_loss(h, h).dtype(), kFloat32);
  EXPECT_EQ(relu(h).dtype(), kBFloat16);  // None
  // promote (cat): every input in the widest floating dtype among them
  EXPECT_EQ(cat({h, h.to(kFloat32)}, 0).dtype(), kFloat32);
  // batch_norm: float32 statistics, the input's dtype out
  EXPECT_EQ(F::batch_norm(h, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5).dtype(), kBFloat16);
}

TEST(Autocast, OutsideTheGuardNothingIsCast) {
  Tensor x = ones({2, 2});
  { amp::autocast ac(kCPU); }
  EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
  EXPECT_EQ(matmul(x, x).dtype(), kFloat32);
  EXPECT_EQ(sum(x.to(kBFloat16)).dtype(), kBFloat16);
}

TEST(Autocast, NestsAndDisablesAsTorchAutocast) {
  Tensor x = ones({2, 2});
  amp::autocast outer(kCPU);
  EXPECT_EQ(matmul(x, x).dtype(), kBFloat16);
  {
    amp::autocast off(kCPU, std::nullopt, /*enabled=*/false);
    EXPECT_FALSE(amp::is_autocast_enabled(kCPU));
    EXPECT_EQ(matmul(x, x).dtype(), kFloat32);
    {
      amp::autocast half(kCPU, kFloat16);
      EXPECT_EQ(matmul(x, x).dtype(), kFloat16);
    }
    EXPECT_EQ(matmul(x, x).dtype(), kFloat32);
  }
  EXPECT_EQ(matmul(x, x).dtype(), kBFloat16);
  {
    amp::autocast inner(kCPU);  // dtype defaults to the current one
    EXPECT_EQ(amp::get_autocast_dtype(kCPU), kBFloat16);
  }
  // the CUDA slot is separate: CPU tensors do not see it
  amp::autocast cuda(DeviceType::CUDA);
  EXPECT_TRUE(amp::is_autocast_enabled(DeviceType::CUDA));
  EXPECT_EQ(amp::get_autocast_dtype(DeviceType::CUDA), kFloat16);
  EXPECT_THROW(amp::autocast(kCPU, kFloat64), DTypeError);
}

TEST(Autocast, IsThreadLocal) {
  amp::autocast ac(kCPU);
  bool other = true;
  ScalarType dt = kBFloat16;
  std::thread t([&] {
    other = amp::is_autocast_enabled(kCPU);
    dt = matmul(ones({2, 2}), ones({2, 2})).dtype();
  });
  t.join();
  EXPECT_FALSE(other);
  EXPECT_EQ(dt, kFloat32);
}

TEST(Autocast, Float32ParametersGetFloat32GradientsAndBackwardIsNotCast) {
  manual_seed(2);
  Tensor w = randn({3, 4}, TensorOptions().requires_grad(true));
  Tensor x = randn({5, 4});
  Tensor loss;
  {
    amp::autocast ac(kCPU);
    Tensor y = F::linear(x, w, Tensor());  // bfloat16
    ASSERT_EQ(y.dtype(), kBFloat16);
    loss = sum(y * y);  // float32
  }
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  // against the float32 run: bfloat16 rounding of x, w and y (3 roundings, u = 2^-8)
  Tensor w32 = w.detach().requires_grad_(true);
  sum(F::linear(x, w32, Tensor()).pow(2)).backward();
  const double scale = w32.grad().abs().max().item<double>();
  EXPECT_LT((w.grad() - w32.grad()).abs().max().item<double>(), 8 * std::ldexp(1.0, -8) * scale);
  EXPECT_GT((w.grad() - w32.grad()).abs().max().item<double>(), 0.0);  // it did run in bfloat16
  // backward inside an autocast region still uses forward's dtypes
  Tensor w2 = w.detach().requires_grad_(true);
  amp::autocast ac(kCPU);
  Tensor l2 = sum(F::linear(x, w2, Tensor()));
  l2.backward();
  EXPECT_EQ(w2.grad().dtype(), kFloat32);
}

}  // namespace
