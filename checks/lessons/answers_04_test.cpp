// Answers to the exercises of lesson 04 (autograd pitfalls), checked.
#include <gtest/gtest.h>

#include <cmath>
#include <gradlab/gradlab.hpp>
#include <iostream>
#include <string>
#include <vector>

namespace gl = gradlab;

namespace {

const gl::TensorOptions f64 = gl::dtype(gl::kFloat64);

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Lesson04Answers, Exercise1HalfDetachedTarget) {
  const double w0 = 0.5, xv = 2.0, x2v = 3.0;
  gl::Tensor w = gl::tensor(w0, f64.requires_grad(true));
  gl::Tensor x = gl::tensor(xv, f64), x2 = gl::tensor(x2v, f64);
  gl::Tensor target = (w * x2).detach() * w;  // c * w with c = w0 * x2 = 1.5 a constant
  EXPECT_TRUE(target.requires_grad());
  (w * x - target).pow(2).backward();
  const double c = w0 * x2v;
  const double want = 2 * (w0 * xv - c * w0) * (xv - c);  // 2 (1 - 0.75)(2 - 1.5) = 0.25
  EXPECT_NEAR(want, 0.25, 1e-15);
  EXPECT_NEAR(w.grad().item<double>(), want, 1e-12);
}

TEST(Lesson04Answers, Exercise2SinSavesItsInput) {
  gl::Tensor a = gl::tensor({0.0, 1.0, 2.0}, f64.requires_grad(true));
  gl::Tensor e = a.sin();
  gl::Tensor s = (e * 2.0).sum();
  e.add_(1.0);
  EXPECT_EQ(e.version(), 1);
  const std::string err = error_of([&] { s.backward(); });
  EXPECT_EQ(err, "");  // nothing that backward needs was overwritten
  EXPECT_TRUE(gl::allclose(a.grad(), a.detach().cos() * 2.0, 1e-15, 0));
}

TEST(Lesson04Answers, Exercise3BackwardBeforeAndAfterPlusEquals) {
  {
    gl::Tensor c = gl::tensor({1.0, 2.0}, f64.requires_grad(true));
    gl::Tensor k = c.exp();
    k.sum().backward();
    k += 1;
    const std::string err = error_of([&] { k.sum().backward(); });
    std::cout << "without retain_graph: " << err << "\n";
    EXPECT_TRUE(has(err, "retain_graph=true")) << err;
  }
  {
    gl::Tensor c = gl::tensor({1.0, 2.0}, f64.requires_grad(true));
    gl::Tensor k = c.exp();
    k.sum().backward(gl::Tensor(), /*retain_graph=*/true);
    k += 1;
    const std::string err = error_of([&] { k.sum().backward(); });
    std::cout << "with retain_graph: " << err << "\n";
    EXPECT_TRUE(has(err, "modified by an inplace operation") && has(err, "ExpBackward0")) << err;
  }
}

TEST(Lesson04Answers, Exercise4OutOfPlaceStepWithoutNoGrad) {
  gl::Tensor p = gl::tensor({1.0, 2.0}, f64.requires_grad(true));
  gl::Tensor original = p;
  const double lr = 0.1;
  (p * p).sum().backward();
  p = p - lr * p.grad();  // runs: recorded, because grad mode is on
  EXPECT_FALSE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  ASSERT_NE(p.grad_fn(), nullptr);
  EXPECT_EQ(p.grad_fn()->name(), "SubBackward0");
  (p * p).sum().backward();  // the next step
  EXPECT_FALSE(p.grad().defined());                  // a non-leaf keeps no .grad
  EXPECT_TRUE(gl::allclose(original.grad(),           // it flowed to the old leaf:
                           gl::tensor({2.0 + 1.6, 4.0 + 3.2}, f64), 1e-12, 0));  // 2 p0 + 2 p1
  const std::string err = error_of([&] { p = p - lr * p.grad(); });
  std::cout << "second update: " << (err.empty() ? "no error" : err) << "\n";
  EXPECT_TRUE(has(err, "undefined tensor")) << err;  // p.grad() is empty on the non-leaf
}

TEST(Lesson04Answers, Exercise5BackwardInTheLoopFreesSavedTensors) {
  auto kept_after = [](int steps, bool backward) {
    gl::Tensor w6 = gl::full({1024}, 0.01, f64.requires_grad(true));
    (w6 * 1.0).sum().backward();  // allocate w6.grad before measuring
    const std::size_t before = gl::memory::allocated();
    gl::Tensor total = gl::tensor(0.0, f64);
    for (int i = 0; i < steps; ++i) {
      gl::Tensor batch = gl::full({1024}, 1.0 + i, f64);
      gl::Tensor loss = (w6 * batch).tanh().pow(2).mean();
      if (backward) loss.backward();
      total = total + loss;
    }
    return static_cast<double>(gl::memory::allocated()) - static_cast<double>(before);
  };
  const double no10 = kept_after(10, false), no20 = kept_after(20, false);
  const double bw10 = kept_after(10, true), bw20 = kept_after(20, true);
  std::cout << "no backward: " << no10 << " / " << no20 << " B; backward in loop: " << bw10
            << " / " << bw20 << " B\n";
  EXPECT_GT((no20 - no10) / 10, 8192);  // the lesson's growth
  EXPECT_EQ(bw20, bw10);  // backward frees what the nodes saved: flat
  EXPECT_LT(bw20, 256);
}
