// softmax family and losses against hand-computed values.

#include <cmath>

#include "common/check_helpers.hpp"

namespace gradlab {
namespace {

namespace F = nn::functional;
using checks::f64;
using checks::i64;
using checks::Near;
using checks::vals;
using ::testing::ElementsAre;

// logits = [[1, 2, 3], [1, 1, 1]]
Tensor logits() { return f64({{1.0, 2.0, 3.0}, {1.0, 1.0, 1.0}}); }
const double kLse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));  // logsumexp of row 0

TEST(Softmax, ValuesSumToOneAndAreShiftInvariant) {
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  Tensor s = softmax(logits(), 1);
  EXPECT_THAT(vals(s), Near({std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15));
  EXPECT_THAT(vals(s.sum({1})), Near({1, 1}, 1e-15));
  // huge logits: exp would overflow without the max shift
  EXPECT_THAT(vals(softmax(f64({1000.0, 1000.0}), 0)), ElementsAre(0.5, 0.5));
  EXPECT_THAT(vals(softmax(logits(), 0)), Near({0.5, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(-2.0)),
                                                0.5, 1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(2.0))}, 1e-15));
  EXPECT_THAT(vals(F::softmax(logits(), -1)), Near(vals(s), 0));
  EXPECT_EQ(softmax(tensor({1, 2}), 0).dtype(), kFloat32);
}

TEST(Softmax, LogSoftmax) {
  Tensor l = log_softmax(logits(), 1);
  EXPECT_THAT(vals(l), Near({1 - kLse0, 2 - kLse0, 3 - kLse0, -std::log(3.0), -std::log(3.0), -std::log(3.0)}, 1e-14));
  Tensor big = log_softmax(f64({0.0, 1000.0}), 0);  // log(softmax) would give log(0) = -inf
  EXPECT_THAT(vals(big), Near({-1000, 0}, 1e-12));
  EXPECT_THAT(vals(logits().log_softmax(-1)), Near(vals(l), 0));
}

TEST(Losses, CrossEntropyMeanSumNone) {
  const double l0 = kLse0 - 3, l1 = std::log(3.0);
  Tensor t = i64({2, 0});
  EXPECT_NEAR(F::cross_entropy(logits(), t).item<double>(), (l0 + l1) / 2, 1e-14);
  EXPECT_NEAR(F::cross_entropy(logits(), t, F::CrossEntropyFuncOptions().reduction(F::kSum)).item<double>(),
              l0 + l1, 1e-14);
  Tensor none = F::cross_entropy(logits(), t, F::CrossEntropyFuncOptions().reduction(F::kNone));
  EXPECT_EQ(none.sizes(), (Shape{2}));
  EXPECT_THAT(vals(none), Near({l0, l1}, 1e-14));
  // 1-D logits with a 0-d target
  EXPECT_NEAR(F::cross_entropy(f64({1.0, 2.0, 3.0}), tensor(std::initializer_list<int64_t>{2}).reshape({})).item<double>(),
              l0, 1e-14);
  EXPECT_EQ(F::cross_entropy(tensor({{0.0, 0.0}}), i64({1})).dtype(), kFloat32);
}

TEST(Losses, CrossEntropyLabelSmoothing) {
  // (1 - ε) nll + ε mean_c(-log p_c); for row 0, mean_c(-log p_c) = lse - mean(x) = lse - 2
  const double eps = 0.1, l0 = kLse0 - 3, u0 = kLse0 - 2, l1 = std::log(3.0);
  auto opts = F::CrossEntropyFuncOptions().label_smoothing(eps);
  EXPECT_NEAR(F::cross_entropy(logits(), i64({2, 0}), opts).item<double>(),
              ((1 - eps) * l0 + eps * u0 + l1) / 2, 1e-14);
  EXPECT_NEAR(F::cross_entropy(logits(), i64({2, 0}), F::CrossEntropyFuncOptions().label_smoothing(1.0)).item<double>(),
              (u0 + l1) / 2, 1e-14);
}

TEST(Losses, CrossEntropyIgnoreIndex) {
  const double l0 = kLse0 - 3;
  // -100 (the default) is skipped, and the mean is over the targets that are kept
  EXPECT_NEAR(F::cross_entropy(logits(), i64({2, -100})).item<double>(), l0, 1e-14);
  EXPECT_NEAR(F::cross_entropy(logits(), i64({2, 0}), F::CrossEntropyFuncOptions().ignore_index(0)).item<double>(),
              l0, 1e-14);
  Tensor none = F::cross_entropy(logits(), i64({-100, 0}), F::CrossEntropyFuncOptions().reduction(F::kNone));
  EXPECT_THAT(vals(none), Near({0, std::log(3.0)}, 1e-14));
  // with label smoothing, ignored rows contribute nothing either
  auto opts = F::CrossEntropyFuncOptions().label_smoothing(0.2);
  EXPECT_NEAR(F::cross_entropy(logits(), i64({-100, 1}), opts).item<double>(), std::log(3.0), 1e-14);
}

TEST(Losses, NllLoss) {
  Tensor logp = log_softmax(logits(), 1);
  Tensor t = i64({2, 0});
  EXPECT_NEAR(F::nll_loss(logp, t).item<double>(), F::cross_entropy(logits(), t).item<double>(), 1e-15);
  // nll picks -logp[i, t_i]: with logp given directly
  Tensor lp = f64({{-0.5, -1.0}, {-2.0, -0.25}});
  EXPECT_DOUBLE_EQ(F::nll_loss(lp, i64({1, 0})).item<double>(), (1.0 + 2.0) / 2);
  EXPECT_DOUBLE_EQ(F::nll_loss(lp, i64({1, 0}), F::NLLLossFuncOptions().reduction(F::kSum)).item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(F::nll_loss(lp, i64({1, 0}), F::NLLLossFuncOptions().ignore_index(0)).item<double>(), 1.0);
  // every target ignored: 0 / 0, as in PyTorch
  EXPECT_TRUE(std::isnan(F::nll_loss(lp, i64({1, 1}), F::NLLLossFuncOptions().ignore_index(1)).item<double>()));
  EXPECT_THAT(vals(F::nll_loss(lp, i64({0, 1}), F::NLLLossFuncOptions().reduction(F::kNone))), ElementsAre(0.5, 0.25));
}

TEST(Losses, MseL1) {
  Tensor a = f64({1.0, 2.0, 3.0}), b = f64({1.0, 0.0, 0.0});
  EXPECT_DOUBLE_EQ(F::mse_loss(a, b).item<double>(), 13.0 / 3);
  EXPECT_DOUBLE_EQ(F::mse_loss(a, b, F::kSum).item<double>(), 13.0);
  EXPECT_THAT(vals(F::mse_loss(a, b, F::kNone)), ElementsAre(0, 4, 9));
  EXPECT_DOUBLE_EQ(F::l1_loss(a, b).item<double>(), 5.0 / 3);
  EXPECT_THAT(vals(F::l1_loss(b, a, F::kNone)), ElementsAre(0, 2, 3));
}

TEST(Losses, BinaryCrossEntropyWithLogitsIsStable) {
  Tensor x = f64({0.0, 2.0, -1.0}), y = f64({1.0, 0.0, 1.0});
  // y = 1: log(1 + e^-x); y = 0: log(1 + e^x)
  const std::vector<double> l = {std::log(2.0), std::log(1 + std::exp(2.0)), std::log(1 + std::exp(1.0))};
  EXPECT_THAT(vals(F::binary_cross_entropy_with_logits(x, y, F::kNone)), Near(l, 1e-14));
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(x, y).item<double>(), (l[0] + l[1] + l[2]) / 3, 1e-14);
  // soft targets: y = 0.5 at x = 0 gives log 2
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(f64({0.0}), f64({0.5})).item<double>(), std::log(2.0), 1e-15);
  // |x| = 1000 would overflow exp(x): the stable form gives exactly 1000
  EXPECT_THAT(vals(F::binary_cross_entropy_with_logits(f64({1000.0, -1000.0}), f64({0.0, 1.0}), F::kNone)),
              ElementsAre(1000, 1000));
  // float32 input with a bool/int target
  EXPECT_EQ(F::binary_cross_entropy_with_logits(tensor({0.0}), tensor({1})).dtype(), kFloat32);
}

}  // namespace
}  // namespace gradlab
