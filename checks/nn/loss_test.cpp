// Loss modules: values against PyTorch (reductions, label smoothing, ignore_index), gradients,
// errors.

#include <cmath>
#include <sstream>

#include "nn/nn_helpers.hpp"
#include "nn/pytorch_ref_nn.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::grad_ok;
using checks::Near;
using checks::rnd64;
using checks::vals;

Tensor logits() { return d64(ref::ce_logits, {4, 5}); }
Tensor target() { return from_vector(ref::ce_target, {4}); }

TEST(CrossEntropyLoss, ReductionsMatchPyTorch) {
  EXPECT_NEAR(nn::CrossEntropyLoss()(logits(), target()).item<double>(), ref::ce_mean, 1e-14);
  EXPECT_NEAR(
      nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction(kSum))(logits(), target())
          .item<double>(),
      ref::ce_sum, 1e-13);
  Tensor none =
      nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction(kNone))(logits(), target());
  EXPECT_EQ(none.sizes(), (Shape{4}));
  EXPECT_THAT(vals(none), Near(ref::ce_none, 1e-14));
}

TEST(CrossEntropyLoss, LabelSmoothingAndIgnoreIndexMatchPyTorch) {
  EXPECT_NEAR(
      nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(0.1))(logits(), target())
          .item<double>(),
      ref::ce_smooth, 1e-14);
  Tensor t2 = from_vector(ref::ce_target_ignore, {4});
  nn::CrossEntropyLoss smooth_ignore(
      nn::CrossEntropyLossOptions().label_smoothing(0.2).ignore_index(2));
  Tensor x = logits().requires_grad_();
  Tensor l = smooth_ignore(x, t2);
  EXPECT_NEAR(l.item<double>(), ref::ce_smooth_ignore, 1e-14);
  l.backward();
  EXPECT_THAT(vals(x.grad()), Near(ref::ce_smooth_ignore_grad, 1e-14));
  EXPECT_NEAR(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().ignore_index(2).reduction(kSum))(
                  logits(), t2)
                  .item<double>(),
              ref::ce_sum_ignore, 1e-13);
}

TEST(CrossEntropyLoss, GradcheckAndErrors) {
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().label_smoothing(0.1));
  Tensor t = from_vector(std::vector<int64_t>{2, 0, 1}, {3});
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return ce(in[0], t); }, {rnd64({3, 4}, 1)},
                      "CrossEntropyLoss"));
  EXPECT_THROW_MSG(ce(zeros({3, 4}), zeros({3})), DTypeError, "int64");
  EXPECT_THROW_MSG(ce(zeros({3, 4}), from_vector(std::vector<int64_t>{0, 4, 1}, {3})), ShapeError,
                   "out of range", "[0, 4)", "got 4");
  EXPECT_THROW_MSG(ce(zeros({3, 4}), from_vector(std::vector<int64_t>{0, 1}, {2})), ShapeError,
                   "batch_size");
  std::ostringstream os;
  ce->pretty_print(os);
  EXPECT_EQ(os.str(), "CrossEntropyLoss(reduction=mean, ignore_index=-100, label_smoothing=0.1)");
}

TEST(CrossEntropyLoss, FusedNodeMatchesTheCompositeOracle) {
  namespace F = nn::functional;
  const std::vector<F::CrossEntropyFuncOptions> opts = {
      F::CrossEntropyFuncOptions(),
      F::CrossEntropyFuncOptions().reduction(kSum),
      F::CrossEntropyFuncOptions().reduction(kNone),
      F::CrossEntropyFuncOptions().label_smoothing(0.3),
      F::CrossEntropyFuncOptions().label_smoothing(0.2).ignore_index(2),
      F::CrossEntropyFuncOptions().label_smoothing(0.1).ignore_index(2).reduction(kNone),
      F::CrossEntropyFuncOptions().label_smoothing(1.0).reduction(kSum)};
  Tensor t = from_vector(ref::ce_target_ignore, {4});
  for (size_t k = 0; k < opts.size(); ++k) {
    Tensor a = logits().requires_grad_(), b = logits().requires_grad_();
    Tensor fused = F::cross_entropy(a, t, opts[k]),
           composite = cross_entropy_loss_reference(b, t, static_cast<int64_t>(opts[k].reduction_),
                                                     opts[k].ignore_index_, opts[k].label_smoothing_);
    EXPECT_EQ(fused.grad_fn()->name(), "CrossEntropyLossBackward0");
    EXPECT_THAT(vals(fused), Near(vals(composite), 1e-14)) << "options " << k;
    Tensor u = rnd64(fused.sizes(), 50 + k).detach();
    sum(fused * u).backward();
    sum(composite * u).backward();
    EXPECT_THAT(vals(a.grad()), Near(vals(b.grad()), 1e-14)) << "options " << k;
    EXPECT_TRUE(grad_ok([&](const TensorList& in) { return F::cross_entropy(in[0], t, opts[k]); },
                        {rnd64({4, 5}, k)}, "cross_entropy fused"));
    EXPECT_TRUE(checks::gradgrad_ok(
        [&](const TensorList& in) { return F::cross_entropy(in[0], t, opts[k]); },
        {rnd64({4, 5}, 20 + k)}, "cross_entropy fused"));
  }
  // float32 and extreme logits.
  Tensor big = d64({1000.0, -1000.0, 0.0, 0.0, 0.0, 0.0}, {2, 3});
  Tensor ti = from_vector(std::vector<int64_t>{1, 2}, {2});
  EXPECT_NEAR(F::cross_entropy(big, ti).item<double>(),
              cross_entropy_loss_reference(big, ti).item<double>(), 1e-9);
  EXPECT_EQ(F::cross_entropy(big.to(kFloat32), ti).dtype(), kFloat32);
  EXPECT_NEAR(F::cross_entropy(big.to(kFloat32), ti).item<double>(), (2000.0 + std::log(3.0)) / 2,
              1e-3);
}

TEST(NLLLoss, EqualsCrossEntropyOnLogSoftmax) {
  Tensor lp = log_softmax(logits(), 1);
  EXPECT_NEAR(nn::NLLLoss()(lp, target()).item<double>(), ref::nll_mean, 1e-14);
  EXPECT_NEAR(nn::NLLLoss()(lp, target()).item<double>(),
              nn::CrossEntropyLoss()(logits(), target()).item<double>(), 1e-14);
  nn::NLLLoss nll(nn::NLLLossOptions().ignore_index(0).reduction(kSum));
  Tensor t = from_vector(std::vector<int64_t>{0, 0, 3, 1}, {4});
  EXPECT_NEAR(nll(lp, t).item<double>(), -(lp[2][3].item<double>() + lp[3][1].item<double>()),
              1e-14);
}

TEST(RegressionLosses, MatchPyTorch) {
  Tensor a = d64(ref::reg_input, {2, 3}), b = d64(ref::reg_target, {2, 3});
  EXPECT_NEAR(nn::MSELoss()(a, b).item<double>(), ref::mse_mean, 1e-14);
  EXPECT_NEAR(nn::MSELoss(kSum)(a, b).item<double>(), ref::mse_sum, 1e-14);
  EXPECT_NEAR(nn::L1Loss()(a, b).item<double>(), ref::l1_mean, 1e-14);
  Tensor y = d64(ref::bce_target, {2, 3});
  EXPECT_NEAR(nn::BCEWithLogitsLoss()(a * 3, y).item<double>(), ref::bce_mean, 1e-14);
  EXPECT_THAT(vals(nn::BCEWithLogitsLoss(kNone)(a * 3, y)), Near(ref::bce_none, 1e-14));
  // Stable for huge logits.
  EXPECT_NEAR(
      nn::BCEWithLogitsLoss()(d64({1000.0, -1000.0}, {2}), d64({0.0, 1.0}, {2})).item<double>(),
      1000.0, 1e-9);
}

TEST(RegressionLosses, GradcheckAndShapeErrors) {
  Tensor b = rnd64({2, 3}, 3).detach();
  nn::MSELoss mse;
  nn::L1Loss l1;
  nn::BCEWithLogitsLoss bce;
  Tensor y = d64(ref::bce_target, {2, 3});
  EXPECT_TRUE(
      grad_ok([&](const TensorList& in) { return mse(in[0], b); }, {rnd64({2, 3}, 4)}, "MSELoss"));
  EXPECT_TRUE(
      grad_ok([&](const TensorList& in) { return l1(in[0], b); }, {rnd64({2, 3}, 5)}, "L1Loss"));
  EXPECT_TRUE(grad_ok([&](const TensorList& in) { return bce(in[0], y); }, {rnd64({2, 3}, 6)},
                      "BCEWithLogitsLoss"));
  EXPECT_THROW_MSG(mse(zeros({4, 1}), zeros({4})), ShapeError, "mse_loss", "[4, 1]", "[4]",
                   "squeeze");
}

}  // namespace
}  // namespace gradlab
