// nn::utils clipping (against PyTorch) and the diagnostics: parameters_not_updated and
// find_unregistered_tensors.

#include <cmath>

#include "nn/nn_helpers.hpp"
#include "nn/pytorch_ref_nn.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

std::vector<Tensor> with_grads() {
  Tensor a = zeros({2, 3}, dtype(kFloat64)).requires_grad_(),
         b = zeros({4}, dtype(kFloat64)).requires_grad_();
  a.mutable_grad() = d64(ref::clip_g1, {2, 3});
  b.mutable_grad() = d64(ref::clip_g2, {4});
  return {a, b};
}

TEST(ClipGradNorm, MatchesPyTorchForEachNormType) {
  struct Case {
    double p;
    double total;
    const std::vector<double>& g1;
    const std::vector<double>& g2;
  };
  const Case cases[] = {
      {2.0, ref::clip_total_2, ref::clip_g1_after_2, ref::clip_g2_after_2},
      {INFINITY, ref::clip_total_inf, ref::clip_g1_after_inf, ref::clip_g2_after_inf},
      {1.0, ref::clip_total_1, ref::clip_g1_after_1, ref::clip_g2_after_1},
      {3.0, ref::clip_total_3, ref::clip_g1_after_3, ref::clip_g2_after_3}};
  for (const Case& c : cases) {
    auto ps = with_grads();
    EXPECT_NEAR(nn::utils::grad_norm(ps, c.p), c.total, 1e-12) << c.p;
    EXPECT_NEAR(nn::utils::clip_grad_norm_(ps, 0.5, c.p), c.total, 1e-12) << c.p;
    EXPECT_THAT(vals(ps[0].grad()), Near(c.g1, 1e-14)) << c.p;
    EXPECT_THAT(vals(ps[1].grad()), Near(c.g2, 1e-14)) << c.p;
  }
}

TEST(ClipGradNorm, SmallNormsStayNonFiniteCanThrowNoGradsGiveZero) {
  auto ps = with_grads();
  const double total = nn::utils::clip_grad_norm_(ps, 100.0);
  EXPECT_THAT(vals(ps[0].grad()), Near(ref::clip_g1, 1e-6))
      << "norm below max_norm: (almost) unchanged";
  EXPECT_NEAR(total, ref::clip_total_2, 1e-12);
  Tensor p = zeros({2}).requires_grad_();
  p.mutable_grad() = tensor({NAN, 1.0});
  EXPECT_THROW_MSG(nn::utils::clip_grad_norm_(p, 1.0, 2.0, true), ValueError, "non-finite");
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_(p, 1.0)));
  Tensor q = zeros({2}).requires_grad_();
  EXPECT_EQ(nn::utils::clip_grad_norm_(q, 1.0), 0.0);
}

TEST(ClipGradValue, ClampsEveryElement) {
  auto ps = with_grads();
  nn::utils::clip_grad_value_(ps, 0.3);
  for (const Tensor& p : ps)
    for (double v : vals(p.grad())) EXPECT_LE(std::abs(v), 0.3);
  EXPECT_THROW_MSG(nn::utils::clip_grad_value_(ps, -1), ValueError, "clip_value");
}

// A model with the classic bug: a trainable tensor kept as a member but never registered.
struct ScaledImpl : nn::Module {
  ScaledImpl() {
    fc = register_module("fc", nn::Linear(3, 2));
    scale = ones({2}).requires_grad_();  // BUG: not register_parameter("scale", ...)
  }
  Tensor forward(const Tensor& x) { return fc(x) * scale; }
  nn::Linear fc{nullptr};
  Tensor scale;
};

TEST(Diagnostics, UnregisteredTensorIsFoundAndNeverUpdated) {
  ScaledImpl m;
  EXPECT_EQ(m.parameters().size(), 2u) << "scale is missing from parameters()";
  Tensor x = randn({4, 3});
  Tensor loss = sum(m.forward(x) * m.forward(x));
  auto found = nn::find_unregistered_tensors(loss, m);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].tensor.impl(), m.scale.impl());
  EXPECT_EQ(found[0].used_by, "MulBackward0");
  EXPECT_THAT(found[0].describe(), ::testing::HasSubstr("[2] float32"));
  EXPECT_THAT(found[0].used_at.str(), ::testing::HasSubstr("utils_test.cpp"));

  optim::SGD opt(m.parameters(), 0.1);
  auto before = nn::snapshot_parameters(m);
  const Tensor scale_before = m.scale.detach().clone();
  loss.backward();
  opt.step();
  EXPECT_TRUE(equal(m.scale, scale_before)) << "the optimizer never sees scale";
  EXPECT_TRUE(m.scale.grad().defined()) << "...even though it has a gradient";
  EXPECT_TRUE(nn::parameters_not_updated(before, m).empty()) << "every registered parameter moved";
}

TEST(Diagnostics, ParametersNotUpdatedNamesFrozenAndDisconnectedOnes) {
  struct TwoHeadsImpl : nn::Module {
    TwoHeadsImpl() {
      used = register_module("used", nn::Linear(3, 1));
      unused = register_module("unused", nn::Linear(3, 1));
      frozen = register_parameter("frozen", ones({1}), /*requires_grad=*/false);
    }
    Tensor forward(const Tensor& x) { return used(x) * frozen; }
    nn::Linear used{nullptr}, unused{nullptr};
    Tensor frozen;
  };
  TwoHeadsImpl m;
  optim::SGD opt(m.parameters(), 0.1);
  auto before = nn::snapshot_parameters(m);
  sum(m.forward(randn({4, 3}))).backward();
  opt.step();
  EXPECT_THAT(nn::parameters_not_updated(before, m), ElementsAre("unused.weight", "unused.bias"))
      << "frozen parameters are not reported";
  auto after = nn::snapshot_parameters(m);
  EXPECT_THAT(nn::parameters_not_updated(before, after),
              ElementsAre("unused.weight", "unused.bias"));
  EXPECT_TRUE(nn::find_unregistered_tensors(sum(m.forward(randn({2, 3}))), m).empty());
}

}  // namespace
}  // namespace gradlab
