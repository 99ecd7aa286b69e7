// Channel-wise dropout: feature_dropout (ops/nn_ops.hpp), F::dropout2d / dropout3d and
// nn::Dropout2d / Dropout3d. Every channel is all zero or all scaled by 1/(1-p); the fraction of
// zeroed channels is near p (a 6-sigma binomial bound, seeded, the seed printed); eval is the
// identity; the gradient is masked on the same channels.

#include <cmath>
#include <iostream>
#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

namespace F = nn::functional;
using checks::rnd64;
using checks::vals;

// For y = dropout(x) over channels of `per` elements each (x nonzero everywhere): checks every
// channel is all 0 or all x / (1 - p), and returns which channels were dropped.
std::vector<bool> dropped_channels(const Tensor& x, const Tensor& y, int64_t per, double p) {
  const std::vector<double> xv = vals(x), yv = vals(y);
  std::vector<bool> dropped;
  for (size_t c = 0; c * per < xv.size(); ++c) {
    const size_t at = c * static_cast<size_t>(per);
    const bool zero = yv[at] == 0.0;
    for (int64_t k = 0; k < per; ++k) {
      const size_t i = at + static_cast<size_t>(k);
      if (zero)
        EXPECT_EQ(yv[i], 0.0) << "channel " << c << " is partly zeroed (element " << k << ")";
      else
        EXPECT_NEAR(yv[i], xv[i] / (1 - p), 1e-12) << "channel " << c << ", element " << k;
    }
    dropped.push_back(zero);
  }
  return dropped;
}

double fraction(const std::vector<bool>& b) {
  double n = 0;
  for (bool v : b) n += v;
  return n / static_cast<double>(b.size());
}

// |fraction - p| within 6 binomial standard deviations of n channels.
void expect_near_p(double frac, double p, size_t n, uint64_t seed) {
  const double sd = std::sqrt(p * (1 - p) / static_cast<double>(n));
  EXPECT_NEAR(frac, p, 6 * sd) << "seed " << seed << ": " << n << " channels";
}

TEST(FeatureDropout, WholeChannelsDroppedAtRatePScaledOtherwise) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::cout << "FeatureDropout seed " << seed << "\n";
    for (double p : {0.2, 0.5}) {
      Generator g(seed);
      Tensor x = rnd64({40, 50, 2, 3}, seed + 100).detach();
      Tensor y = F::dropout2d(x, F::Dropout2dFuncOptions().p(p).generator(&g));
      const auto d = dropped_channels(x, y, 6, p);
      ASSERT_EQ(d.size(), 2000u);
      expect_near_p(fraction(d), p, d.size(), seed);
    }
  }
  Generator g1(9), g2(9);
  Tensor x = rnd64({4, 6, 3, 3}, 5).detach();
  EXPECT_TRUE(equal(feature_dropout(x, 0.4, true, &g1), feature_dropout(x, 0.4, true, &g2)))
      << "the same seed gives the same mask";
}

TEST(FeatureDropout, TwoDimAndFiveDimInputsAndTheEdges) {
  Generator g(4);
  Tensor x2 = rnd64({300, 7}, 6).detach();  // [N, C]: each element is its own channel
  Tensor y2 = feature_dropout(x2, 0.3, true, &g);
  expect_near_p(fraction(dropped_channels(x2, y2, 1, 0.3)), 0.3, 2100, 4);
  Tensor x5 = rnd64({20, 30, 2, 2, 2}, 7).detach();
  Tensor y5 = F::dropout3d(x5, F::Dropout3dFuncOptions().p(0.5).generator(&g));
  expect_near_p(fraction(dropped_channels(x5, y5, 8, 0.5)), 0.5, 600, 4);
  EXPECT_TRUE(feature_dropout(x5, 0.5, false).is_same_storage(x5)) << "eval returns the input";
  EXPECT_TRUE(feature_dropout(x5, 0.0, true).is_same_storage(x5)) << "p = 0 returns the input";
  EXPECT_EQ(sum(abs(feature_dropout(x5, 1.0, true))).item<double>(), 0.0);
  EXPECT_THROW_MSG(feature_dropout(zeros({5}), 0.5), ShapeError, "feature_dropout:",
                   "at least 2 dimensions", "[5]");
  EXPECT_THROW_MSG(feature_dropout(x5, 1.5), ValueError, "feature_dropout:", "between 0 and 1");
  EXPECT_THROW_MSG(feature_dropout(zeros({2, 3}, dtype(kInt64)), 0.5), DTypeError,
                   "feature_dropout:", "floating point");
}

TEST(FeatureDropout, TheGradientIsMaskedOnTheSameChannels) {
  Generator g(11);
  Tensor x = rnd64({6, 10, 3, 3}, 12), r = rnd64({6, 10, 3, 3}, 13).detach();
  Tensor y = F::dropout2d(x, F::Dropout2dFuncOptions().p(0.4).generator(&g));
  sum(y * r).backward();
  const auto d = dropped_channels(x.detach(), y.detach(), 9, 0.4);
  const std::vector<double> gv = vals(x.grad()), rv = vals(r);
  for (size_t c = 0; c < d.size(); ++c)
    for (size_t k = 0; k < 9; ++k) {
      const size_t i = c * 9 + k;
      EXPECT_NEAR(gv[i], d[c] ? 0.0 : rv[i] / 0.6, 1e-12) << "channel " << c;
    }
}

TEST(FunctionalDropoutNd, UnbatchedInputsAndRankErrors) {
  Generator g(21);
  // [C, H, W]: channels are dim 0.
  Tensor x3 = rnd64({400, 2, 2}, 22).detach();
  Tensor y3 = F::dropout2d(x3, F::Dropout2dFuncOptions().p(0.5).generator(&g));
  EXPECT_EQ(y3.sizes(), x3.sizes());
  expect_near_p(fraction(dropped_channels(x3, y3, 4, 0.5)), 0.5, 400, 21);
  Tensor x4 = rnd64({300, 2, 1, 2}, 23).detach();
  Tensor y4 = F::dropout3d(x4, F::Dropout3dFuncOptions().p(0.5).generator(&g));
  expect_near_p(fraction(dropped_channels(x4, y4, 4, 0.5)), 0.5, 300, 21);
  EXPECT_TRUE(F::dropout2d(x3, F::Dropout2dFuncOptions().training(false)).is_same_storage(x3));
  EXPECT_THROW_MSG(F::dropout2d(zeros({4, 5})), ShapeError, "dropout2d:",
                   "3-D (unbatched) or 4-D (batched)", "[4, 5]");
  EXPECT_THROW_MSG(F::dropout2d(zeros({1, 2, 3, 4, 5})), ShapeError, "dropout2d:", "[N, C, H, W]");
  EXPECT_THROW_MSG(F::dropout3d(zeros({2, 3, 4})), ShapeError, "dropout3d:",
                   "4-D (unbatched) or 5-D (batched)", "[N, C, D, H, W]");
  EXPECT_THROW_MSG(F::dropout2d(x3, F::Dropout2dFuncOptions().inplace(true)), ValueError,
                   "dropout2d:", "in-place");
  EXPECT_THROW_MSG(F::dropout2d(x3, F::Dropout2dFuncOptions().p(-0.1)), ValueError,
                   "dropout2d:", "between 0 and 1");
  // dropout's options form is dropout itself.
  Generator g1(5), g2(5);
  EXPECT_TRUE(equal(F::dropout(x3, F::DropoutFuncOptions().p(0.3).generator(&g1)),
                    dropout(x3, 0.3, true, &g2)));
}

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  m.pretty_print(os);
  return os.str();
}

TEST(Dropout2dModule, TrainDropsChannelsEvalIsIdentity) {
  Generator g(31);
  nn::Dropout2d drop(nn::Dropout2dOptions(0.25).generator(&g));
  EXPECT_EQ(printed(*drop), "Dropout2d(p=0.25)");
  Tensor x = rnd64({50, 40, 2, 2}, 32).detach();
  Tensor y = drop(x);
  expect_near_p(fraction(dropped_channels(x, y, 4, 0.25)), 0.25, 2000, 31);
  drop->eval();
  EXPECT_TRUE(drop(x).is_same_storage(x));
  EXPECT_THROW_MSG(nn::Dropout2d(1.5), ValueError, "Dropout2d:", "between 0 and 1");
  drop->train();
  EXPECT_THROW_MSG(drop(zeros({3, 4})), ShapeError, "dropout2d:", "[3, 4]");
  EXPECT_EQ(nn::Dropout2d()->options.p(), 0.5);
}

TEST(Dropout3dModule, TrainDropsChannelsEvalIsIdentity) {
  Generator g(41);
  nn::Dropout3d drop(nn::Dropout3dOptions(0.5).generator(&g));
  EXPECT_EQ(printed(*drop), "Dropout3d(p=0.5)");
  Tensor x = rnd64({20, 30, 2, 1, 2}, 42).detach();
  Tensor y = drop(x);
  expect_near_p(fraction(dropped_channels(x, y, 4, 0.5)), 0.5, 600, 41);
  drop->eval();
  EXPECT_TRUE(drop(x).is_same_storage(x));
  drop->train();
  EXPECT_THROW_MSG(drop(zeros({2, 3, 4})), ShapeError, "dropout3d:", "[2, 3, 4]");
}

}  // namespace
}  // namespace gradlab
