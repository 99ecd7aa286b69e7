// nn::init: fans, gains, bounds and moments of each initializer, seeding through a Generator.

#include <cmath>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::vals;

struct Moments {
  double mean = 0, var = 0, absmax = 0;
};
Moments moments(const Tensor& t) {
  Moments m;
  const auto v = vals(t);
  for (double x : v) m.mean += x, m.absmax = std::max(m.absmax, std::abs(x));
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size());
  return m;
}

TEST(Init, FansAndGains) {
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(zeros({128, 64})),
            std::make_pair(int64_t{64}, int64_t{128}));
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(zeros({8, 3, 5, 5})),
            std::make_pair(int64_t{75}, int64_t{200}));
  EXPECT_THROW_MSG(nn::init::calculate_fan_in_and_fan_out(zeros({5})), ShapeError,
                   "fewer than 2 dimensions");
  using namespace nn::init;
  EXPECT_DOUBLE_EQ(calculate_gain(kReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(calculate_gain(kTanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(calculate_gain(kLinear), 1.0);
  EXPECT_DOUBLE_EQ(calculate_gain(kLeakyReLU, std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_DOUBLE_EQ(calculate_gain(kSELU), 0.75);
}

TEST(Init, BoundsAndMoments) {
  Tensor w = empty({256, 128});
  nn::init::uniform_(w, -0.5, 1.5);
  Moments m = moments(w);
  EXPECT_NEAR(m.mean, 0.5, 0.02);
  EXPECT_NEAR(m.var, 4.0 / 12.0, 0.01);
  for (double v : vals(w)) EXPECT_TRUE(v >= -0.5 && v < 1.5);
  nn::init::normal_(w, 2.0, 0.5);
  m = moments(w);
  EXPECT_NEAR(m.mean, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(m.var), 0.5, 0.01);
  nn::init::xavier_uniform_(w);
  const double a = std::sqrt(6.0 / (128 + 256));
  EXPECT_LE(moments(w).absmax, a);
  EXPECT_NEAR(moments(w).var, a * a / 3, 0.05 * a * a / 3);
  nn::init::xavier_normal_(w, 2.0);
  EXPECT_NEAR(std::sqrt(moments(w).var), 2.0 * std::sqrt(2.0 / (128 + 256)), 0.02);
  nn::init::kaiming_uniform_(w, 0.0, nn::init::kFanIn, nn::init::kReLU);
  const double b = std::sqrt(2.0) * std::sqrt(3.0 / 128);
  EXPECT_LE(moments(w).absmax, b);
  EXPECT_GT(moments(w).absmax, 0.99 * b);
  nn::init::kaiming_normal_(w, 0.0, nn::init::kFanOut, nn::init::kReLU);
  EXPECT_NEAR(std::sqrt(moments(w).var), std::sqrt(2.0 / 256), 0.002);
  nn::init::constant_(w, 0.25);
  EXPECT_EQ(moments(w).mean, 0.25);
  nn::init::zeros_(w);
  EXPECT_EQ(moments(w).absmax, 0.0);
  nn::init::ones_(w);
  EXPECT_EQ(moments(w).mean, 1.0);
}

TEST(Init, GeneratorMakesItReproducibleAndNoGraphIsRecorded) {
  Tensor a = empty({4, 4}).requires_grad_(), b = empty({4, 4}).requires_grad_();
  Generator g1(9), g2(9);
  nn::init::kaiming_uniform_(a, std::sqrt(5.0), nn::init::kFanIn, nn::init::kLeakyReLU, &g1);
  nn::init::kaiming_uniform_(b, std::sqrt(5.0), nn::init::kFanIn, nn::init::kLeakyReLU, &g2);
  EXPECT_TRUE(equal(a, b));
  EXPECT_TRUE(a.is_leaf()) << "initializing a parameter keeps it a leaf";
  EXPECT_TRUE(a.requires_grad());
  manual_seed(4);
  nn::Linear l1(5, 3);
  manual_seed(4);
  nn::Linear l2(5, 3);
  EXPECT_TRUE(equal(l1->weight, l2->weight)) << "manual_seed makes layer init reproducible";
  EXPECT_THROW_MSG(nn::init::uniform_(empty({2}, dtype(kInt64))), DTypeError, "floating point");
  EXPECT_THROW_MSG(nn::init::uniform_(empty({2}), 1.0, 0.0), ValueError, "a <= b");
}

}  // namespace
}  // namespace gradlab
