// Answers to the exercises of lesson 17 (CPU vs GPU) that run without a GPU: on the CPU and on
// gradlab's host emulator of the CUDA path (CPU loops, not a GPU; nothing here is timed).

#include <gtest/gtest.h>

#include <gradlab/core/cuda.hpp>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <string>

namespace gl = gradlab;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

// The emulator is switched on for the test body only (every CUDA tensor must be gone before
// disable(), so tensors live in the scope inside).
struct Emulated {
  bool was_real = false;
  Emulated() {
    was_real = gl::cuda::is_available() && !gl::cuda::emulator::enabled();
    if (!was_real) gl::cuda::emulator::enable();
  }
  ~Emulated() {
    if (!was_real) gl::cuda::emulator::disable();
  }
};

}  // namespace

TEST(Lesson17Answers, Exercise3UpstreamGradientOnTheCpuIsADeviceMismatch) {
  Emulated emu;
  std::string what;
  {
    gl::Generator gen(17);
    const gl::Tensor X = gl::randn({64, 10}, f64, &gen) * 3.0;
    const gl::Tensor G = gl::randn({64, 10}, f64, &gen);
    gl::Tensor xc = X.detach().cuda().requires_grad_(true);
    gl::Tensor yc = gl::softmax(xc, 1);
    try {
      (yc * G).sum().backward();  // G stays on the CPU
    } catch (const std::exception& e) {
      what = e.what();
    }
  }
  std::cout << "the error: " << what << "\n";
  EXPECT_NE(what.find("mul: expected all tensors to be on the same device"), std::string::npos)
      << what;
  EXPECT_NE(what.find("got cuda:0 and cpu"), std::string::npos) << what;
}

TEST(Lesson17Answers, Exercise4WithoutDetachTheCpuLeafGetsTheGradient) {
  Emulated emu;
  gl::Generator gen(17);
  const gl::Tensor X = gl::randn({64, 10}, f64, &gen) * 3.0;
  const gl::Tensor G = gl::randn({64, 10}, f64, &gen);
  gl::Tensor x = X.clone().requires_grad_(true);
  gl::Tensor y_ref = gl::softmax(x, 1);
  (y_ref * G).sum().backward();
  const gl::Tensor expected = x.grad().clone();
  x.zero_grad();
  bool xc_leaf = true, xc_grad_defined = true, x_grad_cpu = false;
  double err = 1;
  {
    gl::Tensor xc = x.cuda().requires_grad_(true);  // no detach(): xc is x's copy, in the graph
    gl::Tensor yc = gl::softmax(xc, 1);
    (yc * G.cuda()).sum().backward();
    xc_leaf = xc.is_leaf();
    xc_grad_defined = xc.grad().defined();
  }
  x_grad_cpu = x.grad().defined() && !x.grad().is_cuda();
  err = (x.grad() - expected).abs().max().item<double>();
  std::cout << "xc leaf " << xc_leaf << ", xc.grad() defined " << xc_grad_defined
            << ", x.grad on the CPU " << x_grad_cpu << ", max diff " << err << "\n";
  EXPECT_FALSE(xc_leaf);
  EXPECT_FALSE(xc_grad_defined);
  EXPECT_TRUE(x_grad_cpu);
  EXPECT_LT(err, 1e-12);
}
