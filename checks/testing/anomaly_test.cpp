// Anomaly mode as issue 3 asks: the first op that turns finite inputs into NaN/Inf is named with
// the user's line and every input's shape, min, max and NaN/Inf counts; in backward, the node and
// the line of its forward call. The in-place guard names the consumer and the write.

#include <gtest/gtest.h>

#include <string>

#include "gradlab/gradlab.hpp"

namespace {

using namespace gradlab;

TensorOptions f64() { return TensorOptions().dtype(kFloat64); }

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const autograd::AnomalyError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("other exception: ") + e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(AnomalyMode, ForwardNamesTheFirstOpItsLineAndEveryInputsStatistics) {
  Tensor a = tensor({1.0, 0.0, 3.0}, f64()).requires_grad_(true);
  Tensor b = tensor({{2.0, 0.0, 0.0}, {1.0, 1.0, -4.0}}, f64());
  autograd::DetectAnomalyGuard guard;
  int line = 0;
  const std::string m = message_of([&] {
    Tensor c = a * 2.0;  // finite
    line = __LINE__ + 1;
    Tensor d = div(c, b);  // 0 / 0 = NaN and 2 / 0 = inf: born here
    Tensor e = d.exp();    // non-finite in, non-finite out: not reported again
  });
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(has(m, "anomaly detected in forward: Div")) << m;
  EXPECT_TRUE(has(m, "anomaly_test.cpp:" + std::to_string(line))) << m;
  // Both inputs (after broadcasting: a * 2 as [2, 3] and b), with shape, range and counts.
  EXPECT_TRUE(has(m, "input 0: shape [2, 3] float64, min 0, max 6, nan 0, +inf 0, -inf 0")) << m;
  EXPECT_TRUE(has(m, "input 1: shape [2, 3] float64, min -4, max 2, nan 0, +inf 0, -inf 0")) << m;
  EXPECT_TRUE(has(m, "nan 1")) << m;  // the output's counts
  EXPECT_TRUE(has(m, "+inf 1")) << m;
  EXPECT_FALSE(has(m, "Exp")) << m;
}

TEST(AnomalyMode, InsideACompositeOpTheUsersLineIsNamed) {
  // softmax is composed (x - max, exp, sum, div): the primitive that overflows is named, at the
  // line where the user called softmax.
  Tensor x = tensor({1e308, -1e308}, f64()).requires_grad_(true);
  autograd::DetectAnomalyGuard guard;
  const int line = __LINE__ + 1;
  const std::string m = message_of([&] { Tensor y = softmax(x, 0); });
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(has(m, "anomaly detected in forward: Sub")) << m;  // -1e308 - 1e308 = -inf
  EXPECT_TRUE(has(m, "anomaly_test.cpp:" + std::to_string(line))) << m;
  EXPECT_TRUE(has(m, "min -1e+308, max 1e+308")) << m;
}

TEST(AnomalyMode, BackwardNamesTheNodeAndItsForwardLine) {
  Tensor x = tensor({0.0, 4.0}, f64()).requires_grad_(true);
  const int line = __LINE__ + 1;
  Tensor r = sqrt(x);  // forward is finite (0 and 2); d√x/dx = 1 / (2√x) is inf at 0
  Tensor loss = (r * 3.0).sum();
  autograd::DetectAnomalyGuard guard;
  const std::string m = message_of([&] { loss.backward(); });
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(has(m, "anomaly detected in backward: SqrtBackward0")) << m;
  EXPECT_TRUE(has(m, "The forward op was called at ")) << m;
  EXPECT_TRUE(has(m, "anomaly_test.cpp:" + std::to_string(line))) << m;
  EXPECT_TRUE(has(m, "grad of output 0: shape [2] float64, min 3, max 3, nan 0"))
      << m;                            // incoming: finite
  EXPECT_TRUE(has(m, "+inf 1")) << m;  // outgoing: one inf
}

// Lesson 13: an op inside a module carries gradlab's own line (layers.cpp); the user's line that
// called the module is named beside it, in forward and in backward.
TEST(AnomalyMode, InsideAModuleTheUsersCallOfTheModuleIsNamed) {
  manual_seed(0);
  nn::Linear fc(2, 1);
  {
    NoGradGuard no_grad;
    fc->weight.fill_(1e38);
  }
  const Tensor x = full({1, 2}, 3.0);  // float32; 3e38 + 3e38 overflows float32 in the Addmm
  autograd::DetectAnomalyGuard guard;
  const int line = __LINE__ + 1;
  const std::string m = message_of([&] { Tensor y = fc(x); });
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(has(m, "anomaly detected in forward: Addmm (called at src/gradlab/nn/")) << m;
  EXPECT_TRUE(
      has(m, ", inside a module called at checks/testing/anomaly_test.cpp:" + std::to_string(line)))
      << m;
  // A module called from gradlab's own code (diagnose::Model's forward) keeps the caller's line
  // out: no "inside a module called at src/gradlab/...".
  const std::string lib = message_of([&] { Tensor y = diagnose::Model(fc)(x); });
  EXPECT_TRUE(has(lib, "anomaly detected in forward: Addmm")) << lib;
  EXPECT_FALSE(has(lib, "inside a module")) << lib;
}

TEST(AnomalyMode, BackwardInsideAModuleNamesTheUsersCallToo) {
  // Forward finite (1e-30 * 1e38 = 1e8), backward not: dx = g W = 1e10 * 1e38 overflows float32,
  // born in the Addmm node recorded inside fc.
  nn::Linear fc(1, 1);
  {
    NoGradGuard no_grad;
    fc->weight.fill_(1e38);
    fc->bias.fill_(0.0);
  }
  const Tensor x = full({1, 1}, 1e-30).requires_grad_(true);  // float32
  const int line = __LINE__ + 1;
  Tensor h = fc(x);
  Tensor loss = (h * 1e10).sum();  // outside the module: the incoming gradient 1e10 is finite
  ASSERT_NE(h.grad_fn(), nullptr);
  EXPECT_EQ(h.grad_fn()->module_site.loc.line(), static_cast<unsigned>(line));
  EXPECT_FALSE(loss.grad_fn()->module_site.known());  // recorded outside any module
  autograd::DetectAnomalyGuard guard;
  const std::string m = message_of([&] { loss.backward(); });
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(has(m, "anomaly detected in backward: AddmmBackward0")) << m;
  EXPECT_TRUE(has(m, "The forward op was called at src/gradlab/nn/")) << m;
  EXPECT_TRUE(
      has(m, ", inside a module called at checks/testing/anomaly_test.cpp:" + std::to_string(line)))
      << m;
}

TEST(AnomalyMode, ModuleCallScopeKeepsTheUsersLineAgainstLibraryCalls) {
  EXPECT_FALSE(ModuleCallScope::current().known());
  const int line = __LINE__ + 1;
  ModuleCallScope user(Site::current());
  EXPECT_EQ(ModuleCallScope::current().loc.line(), static_cast<unsigned>(line));
  {
    const int inner = __LINE__ + 1;
    ModuleCallScope nested(Site::current());  // a user module calling another: innermost wins
    EXPECT_EQ(ModuleCallScope::current().loc.line(), static_cast<unsigned>(inner));
  }
  EXPECT_EQ(ModuleCallScope::current().loc.line(), static_cast<unsigned>(line));
  ModuleCallScope none(Site::unknown());  // unknown sites change nothing
  EXPECT_EQ(ModuleCallScope::current().loc.line(), static_cast<unsigned>(line));
}

TEST(AnomalyMode, OffMeansNoChecksAndNoThrow) {
  autograd::set_detect_anomaly(false);
  Tensor x = tensor({0.0, 4.0}, f64()).requires_grad_(true);
  Tensor y = log(x);  // -inf, silently, as in PyTorch
  EXPECT_TRUE(std::isinf(y.to_vector<double>()[0]));
  EXPECT_NO_THROW(sqrt(x).sum().backward());
  EXPECT_TRUE(std::isinf(x.grad().to_vector<double>()[0]));
}

TEST(InplaceGuard, NamesTheConsumerOpAndTheWrite) {
  Tensor x = tensor({1.0, 2.0}, f64()).requires_grad_(true);
  Tensor y = x.sigmoid();
  const int consumer_line = __LINE__ + 1;
  Tensor s = (y * y).sum();  // MulBackward0 saves y (and runs first in backward)
  const int write_line = __LINE__ + 1;
  y.mul_(2.0);
  std::string m;
  try {
    s.backward();
  } catch (const AutogradError& e) {
    m = e.what();
  }
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(has(m, "modified by an inplace operation")) << m;
  EXPECT_TRUE(has(m, "It was modified at ") &&
              has(m, "anomaly_test.cpp:" + std::to_string(write_line)))
      << m;
  EXPECT_TRUE(has(m, "it is needed by MulBackward0 (forward called at ")) << m;
  EXPECT_TRUE(has(m, "anomaly_test.cpp:" + std::to_string(consumer_line))) << m;
}

}  // namespace
