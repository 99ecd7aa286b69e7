// request_interrupt (core/interrupt.hpp): the next op, or the next node of a running backward,
// throws InterruptedError; throwing clears the request, so the code after it runs normally.
#include <gtest/gtest.h>

#include "gradlab/core/interrupt.hpp"
#include "gradlab/gradlab.hpp"

namespace {

namespace gl = gradlab;

TEST(Interrupt, TheNextOpThrowsOnce) {
  gl::clear_interrupt();
  auto x = gl::ones({3});
  gl::request_interrupt();
  EXPECT_TRUE(gl::interrupt_requested());
  EXPECT_THROW(gl::exp(x), gl::InterruptedError);
  EXPECT_FALSE(gl::interrupt_requested());
  EXPECT_NO_THROW(gl::exp(x));  // cleared by the throw
  EXPECT_DOUBLE_EQ((x * 2).sum().item<double>(), 6.0);
}

TEST(Interrupt, ClearForgetsARequest) {
  gl::request_interrupt();
  gl::clear_interrupt();
  EXPECT_NO_THROW(gl::exp(gl::ones({2})));
}

TEST(Interrupt, BackwardStopsBetweenNodes) {
  gl::clear_interrupt();
  auto w = gl::ones({2}).requires_grad_(true);
  auto y = w;
  for (int i = 0; i < 10; ++i) y = y * 1.5;
  // A hook on an intermediate: when backward reaches it, it requests an interrupt; the
  // engine throws at its next node, or at the next op of a backward formula.
  auto mid = w * 1.0;
  auto loss = (mid * 2).sum() + y.sum();
  mid.register_hook([](const gl::Tensor&) { gl::request_interrupt(); });
  EXPECT_THROW(loss.backward(), gl::InterruptedError);
  EXPECT_FALSE(gl::interrupt_requested());
  // A fresh graph runs to its end.
  auto again = (w * 3).sum();
  again.backward();
  EXPECT_TRUE(w.grad().defined());
}

}  // namespace
