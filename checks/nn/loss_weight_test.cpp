// Class weights of cross_entropy / nll_loss and weight / pos_weight of
// binary_cross_entropy_with_logits, against the formulas written out (LibTorch's values: the
// port program checks/compat/ports/vision_extras.cpp).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::grad_ok;
namespace F = nn::functional;

TEST(ClassWeights, CrossEntropyAndNllWeighEachTargetAndTheMeanDividesByTheirSum) {
  Tensor x = checks::rnd64({4, 3}, 11).detach();
  Tensor t = from_vector(std::vector<int64_t>{0, 2, 1, 2}, {4});
  Tensor w = d64({0.5, 2.0, 3.0}, {3});
  Tensor lp = log_softmax(x, 1);
  const std::vector<double> l = lp.to_vector<double>(), wv = {0.5, 2.0, 3.0};
  const std::vector<int64_t> tv = {0, 2, 1, 2};
  double num = 0, den = 0, smooth = 0;
  std::vector<double> none;
  for (int i = 0; i < 4; ++i) {
    num += -wv[tv[i]] * l[i * 3 + tv[i]];
    den += wv[tv[i]];
    none.push_back(-wv[tv[i]] * l[i * 3 + tv[i]]);
    for (int c = 0; c < 3; ++c) smooth += -wv[c] * l[i * 3 + c] / 3.0;
  }
  EXPECT_NEAR(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(w)).item<double>(),
              num / den, 1e-12);
  EXPECT_NEAR(F::nll_loss(lp, t, F::NLLLossFuncOptions().weight(w)).item<double>(), num / den, 1e-12);
  EXPECT_NEAR(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(w).reduction(kSum)).item<double>(),
              num, 1e-12);
  EXPECT_THAT(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(w).reduction(kNone))
                  .to_vector<double>(),
              ::testing::Pointwise(::testing::DoubleNear(1e-12), none));
  // Label smoothing ε: (1 - ε) weighted nll + ε / C Σ_c -w_c logp_c, both over Σ w[t_i].
  EXPECT_NEAR(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.2))
                  .item<double>(),
              (0.8 * num + 0.2 * smooth) / den, 1e-12);
  // ignore_index drops a target from the numerator and its weight from the denominator.
  Tensor t2 = from_vector(std::vector<int64_t>{0, 2, 1, -100}, {4});
  EXPECT_NEAR(F::cross_entropy(x, t2, F::CrossEntropyFuncOptions().weight(w)).item<double>(),
              (num - none[3]) / (den - 3.0), 1e-12);
  // Unit weights are the unweighted loss; the module registers the weight as a buffer.
  EXPECT_NEAR(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(ones({3}, x.options()))).item<double>(),
              F::cross_entropy(x, t).item<double>(), 1e-12);
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(w));
  EXPECT_NEAR(ce->forward(x, t).item<double>(), num / den, 1e-12);
  EXPECT_EQ(ce->named_buffers().size(), 1u);
  nn::NLLLoss nll(nn::NLLLossOptions().weight(w));
  EXPECT_NEAR(nll->forward(lp, t).item<double>(), num / den, 1e-12);
  Tensor xr = checks::rnd64({4, 3}, 12);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) {
    return F::cross_entropy(in[0], t, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.1));
  }, {xr}, "weighted cross_entropy"));
}

TEST(ClassWeights, BadWeightsAreClearErrors) {
  Tensor x = zeros({2, 3}), t = from_vector(std::vector<int64_t>{0, 1}, {2});
  EXPECT_THROW(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(ones({2}))), ShapeError);
  EXPECT_THROW(F::nll_loss(x, t, F::NLLLossFuncOptions().weight(ones({3, 1}))), ShapeError);
  EXPECT_THROW(F::nll_loss(x, t, F::NLLLossFuncOptions().weight(ones({3}, TensorOptions().dtype(kInt64)))),
               DTypeError);
  try {
    F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(ones({2})));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("one value per class"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[3]"));
  }
}

TEST(BCEWithLogitsWeights, PosWeightScalesThePositiveTermAndWeightTheWhole) {
  Tensor x = d64({-2.0, -0.5, 0.0, 1.5, 3.0, -1.0}, {2, 3});
  Tensor y = d64({1.0, 0.0, 1.0, 0.3, 1.0, 0.0}, {2, 3});
  Tensor pw = d64({2.0, 0.5, 4.0}, {3}), w = d64({1.0, 3.0}, {2, 1});
  const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  const double p[3] = {2.0, 0.5, 4.0}, ww[2] = {1.0, 3.0};
  double sum = 0;
  for (int i = 0; i < 6; ++i) {
    const double s = 1 / (1 + std::exp(-xv[i]));
    sum += -ww[i / 3] * (p[i % 3] * yv[i] * std::log(s) + (1 - yv[i]) * std::log(1 - s));
  }
  auto o = F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw).weight(w);
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(x, y, o).item<double>(), sum / 6, 1e-12);
  nn::BCEWithLogitsLoss loss(nn::BCEWithLogitsLossOptions().pos_weight(pw).weight(w).reduction(kSum));
  EXPECT_NEAR(loss->forward(x, y).item<double>(), sum, 1e-12);
  EXPECT_EQ(loss->named_buffers().size(), 2u);
  // Without weights it is the old loss; the large-logit case stays finite.
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(d64({1000.0, -1000.0}, {2}), d64({0.0, 1.0}, {2}),
                                                  F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(d64({3.0}, {1})))
                  .item<double>(),
              (1000.0 + 3 * 1000.0) / 2, 1e-9);
  EXPECT_THROW(F::binary_cross_entropy_with_logits(x, y, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(ones({2}))),
               ShapeError);
  EXPECT_THROW(F::binary_cross_entropy_with_logits(x, y, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(ones({4, 2, 3}))),
               ShapeError);
  Tensor xr = checks::rnd64({2, 3}, 13);
  EXPECT_TRUE(grad_ok([&](const TensorList& in) {
    return F::binary_cross_entropy_with_logits(in[0], y, o);
  }, {xr}, "bce_with_logits pos_weight"));
}

}  // namespace
}  // namespace gradlab
