// The digits MLP (64-128-10 ReLU, SGD 0.05 + momentum 0.9, batch 64: bench/train_workload.hpp's
// run) trained on CUDA follows the CPU run of the same seed step by step.
//
// Both runs start from the same weights (manual_seed(0), then nn::Module::to(cuda) for the CUDA
// copy), see the same shuffled batches (one seeded Generator; on CUDA the batches are cut with
// index_select on the device) and take the same steps. What may differ is rounding: the GEMMs
// (OpenBLAS on the CPU; cuBLAS on a GPU, a host loop under the emulator) sum in another order.
// So the loss curves must agree step by step, |loss_cuda - loss_cpu| <= rtol * max(1, loss_cpu):
//   float32: rtol 1e-4. The emulator measures 1.0e-7 (GEMM order only; a GPU's cuBLAS differs
//            from OpenBLAS the same way), i.e. ~2 float32 ulps after 69 steps of momentum SGD.
//   float64: rtol 1e-10 (measured 4.9e-16 on the emulator).
// Final test accuracy (360 images): within 1 percentage point in float32, within one image in
// float64; both >= 90% and the loss must fall by half, or agreeing proves little.
// Kept small for the emulator: 3 epochs over the 1437 training images (69 steps).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <gradlab/gradlab.hpp>
#include <vector>

#include "cuda/cuda_env.hpp"

namespace {

namespace gl = gradlab;
namespace nn = gradlab::nn;
namespace optim = gradlab::optim;

struct Split {
  gl::Tensor x_train, y_train, x_test, y_test;
};

const Split& digits() {
  static const Split s = [] {
    const gl::data::DigitsSplit d = gl::data::load_digits_split();  // bench_train's split
    return Split{d.train.data(), d.train.targets(), d.test.data(), d.test.targets()};
  }();
  return s;
}

struct Run {
  std::vector<double> losses;
  double test_acc = 0;
  std::vector<double> params;  ///< every parameter, flattened, after training
};

constexpr int kEpochs = 3;
constexpr int64_t kBatch = 64;

Run train(gl::Device device, gl::ScalarType dtype) {
  const Split& d = digits();
  gl::manual_seed(0);
  nn::Sequential model(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  model->to(dtype);
  model->to(device);
  for (const gl::Tensor& p : model->parameters()) {
    EXPECT_EQ(p.device().type, device.type)
        << "Module::to(" << device.str() << ") left a parameter on " << p.device().str();
    EXPECT_EQ(p.dtype(), dtype);
  }
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  nn::CrossEntropyLoss criterion;
  const gl::Tensor x_train = d.x_train.to(dtype).to(device), y_train = d.y_train.to(device);
  const gl::Tensor x_test = d.x_test.to(dtype).to(device), y_test = d.y_test.to(device);
  Run r;
  gl::Generator gen(0);
  const int64_t n = x_train.size(0);
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    const gl::Tensor perm = gl::randperm(n, &gen).to(device);
    for (int64_t start = 0; start < n; start += kBatch) {
      const gl::Tensor idx = perm.slice(0, start, std::min(start + kBatch, n));
      const gl::Tensor xb = gl::index_select(x_train, 0, idx),
                       yb = gl::index_select(y_train, 0, idx);
      opt.zero_grad();
      gl::Tensor loss = criterion(model(xb), yb);
      EXPECT_EQ(loss.device().type, device.type);
      loss.backward();
      opt.step();
      r.losses.push_back(loss.item<double>());
    }
  }
  for (const gl::Tensor& p : model->parameters()) {
    EXPECT_EQ(p.device().type, device.type)
        << "a parameter left " << device.str() << " during training";
    if (p.grad().defined()) {
      EXPECT_EQ(p.grad().device().type, device.type) << "a gradient is not on " << device.str();
    }
    for (double v : p.to_vector<double>()) r.params.push_back(v);
  }
  gl::NoGradGuard no_grad;
  model->eval();
  const gl::Tensor pred = gl::argmax(model(x_test), 1);
  r.test_acc = gl::mean((pred == y_test).to(gl::kFloat32)).item<double>();
  return r;
}

void compare_runs(gl::ScalarType dtype, double loss_rtol, double acc_tol) {
  const Run cpu = train(gl::Device(gl::kCPU), dtype);
  const Run gpu = train(gl::Device(gl::kCUDA), dtype);
  ASSERT_EQ(cpu.losses.size(), gpu.losses.size());
  double worst = 0;
  size_t worst_step = 0;
  for (size_t i = 0; i < cpu.losses.size(); ++i) {
    const double rel =
        std::abs(gpu.losses[i] - cpu.losses[i]) / std::max(1.0, std::abs(cpu.losses[i]));
    if (!(rel <= worst)) worst = rel, worst_step = i;
  }
  double pdiff = 0, pmax = 0;
  for (size_t i = 0; i < cpu.params.size(); ++i) {
    pdiff = std::max(pdiff, std::abs(gpu.params[i] - cpu.params[i]));
    pmax = std::max(pmax, std::abs(cpu.params[i]));
  }
  std::printf(
      "[train-smoke] %s on the %s: %zu steps; loss %.6f -> %.6f (CPU) / %.6f -> %.6f (CUDA); "
      "largest loss difference %.3g (relative, step %zu); parameters differ by %.3g (max |p| "
      "%.3g); test accuracy CPU %.4f, CUDA %.4f\n",
      gl::to_string(dtype).c_str(), gl::testing_cuda::backend_name(), cpu.losses.size(),
      cpu.losses.front(), cpu.losses.back(), gpu.losses.front(), gpu.losses.back(), worst,
      worst_step, pdiff, pmax, cpu.test_acc, gpu.test_acc);
  EXPECT_LE(worst, loss_rtol) << "the CUDA loss curve leaves the CPU one at step " << worst_step
                              << ": CPU " << cpu.losses[worst_step] << ", CUDA "
                              << gpu.losses[worst_step];
  EXPECT_LE(std::abs(gpu.test_acc - cpu.test_acc), acc_tol)
      << "test accuracy CPU " << cpu.test_acc << ", CUDA " << gpu.test_acc;
  // The run itself must be a training run, or agreeing proves little.
  EXPECT_LT(cpu.losses.back(), 0.5 * cpu.losses.front()) << "the loss did not fall";
  EXPECT_GE(cpu.test_acc, 0.9);
  EXPECT_GE(gpu.test_acc, 0.9);
}

TEST(CudaTraining, DigitsMlpFloat32FollowsTheCpuRun) {
  GRADLAB_USE_CUDA_BACKEND();
  compare_runs(gl::kFloat32, 1e-4, 0.01);
}

TEST(CudaTraining, DigitsMlpFloat64FollowsTheCpuRun) {
  GRADLAB_USE_CUDA_BACKEND();
  compare_runs(gl::kFloat64, 1e-10, 1.0 / 360 + 1e-9);
}

}  // namespace
