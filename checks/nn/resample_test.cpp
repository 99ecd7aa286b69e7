// nn::AvgPool2d, AdaptiveAvgPool1d / 2d, Upsample / F::interpolate, GroupNorm, the enum tags
// (torch::kReLU, torch::kLinear, ...), and the windowed ops' output-size rule. The ops' values
// and gradients are in the op table (op_table/resample.cpp); these check the modules, the
// functional dispatch, known values and the errors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::grad_ok;
using checks::gradgrad_ok;
namespace F = nn::functional;

std::vector<double> vals(const Tensor& t) { return t.contiguous().to_vector<double>(); }

TEST(AvgPool2d, KnownValuesPaddingAndDivisors) {
  // [[1, 2, 3], [4, 5, 6], [7, 8, 9]], kernel 2, stride 1.
  Tensor x = d64({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  EXPECT_THAT(vals(avg_pool2d(x, 2, IntPair(1))), ::testing::ElementsAre(3, 4, 6, 7));
  // kernel 2, stride 2, padding 1: windows of 1, 2, 2, 4 input elements, each divided by 4 with
  // count_include_pad, by its own count without.
  Tensor with_pad = avg_pool2d(x, 2, IntPair(2), 1);
  EXPECT_THAT(vals(with_pad), ::testing::ElementsAre(0.25, 5.0 / 4, 11.0 / 4, 28.0 / 4));
  Tensor own = avg_pool2d(x, 2, IntPair(2), 1, false, /*count_include_pad=*/false);
  EXPECT_THAT(vals(own), ::testing::ElementsAre(1, 2.5, 5.5, 7));
  EXPECT_THAT(vals(avg_pool2d(x, 2, IntPair(2), 1, false, true, 2)),
              ::testing::ElementsAre(0.5, 2.5, 5.5, 14));
  // ceil_mode: 3x3 with kernel 2 stride 2 gets a last, partial window.
  EXPECT_EQ(avg_pool2d(x, 2).sizes(), Shape({1, 1, 1, 1}));
  Tensor ceil = avg_pool2d(x, 2, std::nullopt, 0, /*ceil_mode=*/true);
  EXPECT_EQ(ceil.sizes(), Shape({1, 1, 2, 2}));
  EXPECT_THAT(vals(ceil), ::testing::ElementsAre(3, 4.5, 7.5, 9));  // divisor: the clipped window
  // The module and F:: take LibTorch's options (stride defaults to the kernel).
  nn::AvgPool2d pool(nn::AvgPool2dOptions(2).stride(1));
  EXPECT_THAT(vals(pool->forward(x)), ::testing::ElementsAre(3, 4, 6, 7));
  EXPECT_THAT(vals(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).stride(1))),
              ::testing::ElementsAre(3, 4, 6, 7));
  EXPECT_EQ(nn::AvgPool2d(2)->forward(x).sizes(), Shape({1, 1, 1, 1}));
  std::ostringstream os;
  pool->pretty_print(os);
  EXPECT_EQ(os.str(), "AvgPool2d(kernel_size=[2, 2], stride=[1, 1], padding=[0, 0])");
}

TEST(AvgPool2d, AnInfReachesOnlyTheWindowsHoldingIt) {
  // 1 x 1 x 4 x 4 with inf at (0, 0): of the 2x2 windows, only the first holds it; NaN at (3, 3)
  // only the last. (A formulation that multiplied far taps by 0 would spread NaN over rows.)
  std::vector<double> v(16, 1.0);
  v[0] = std::numeric_limits<double>::infinity();
  v[15] = std::numeric_limits<double>::quiet_NaN();
  Tensor x = d64(v, {1, 1, 4, 4});
  const std::vector<double> y = vals(avg_pool2d(x, 2));
  ASSERT_EQ(y.size(), 4u);
  EXPECT_TRUE(std::isinf(y[0]));
  EXPECT_EQ(y[1], 1.0);
  EXPECT_EQ(y[2], 1.0);
  EXPECT_TRUE(std::isnan(y[3]));
  const std::vector<double> a = vals(adaptive_avg_pool2d(x, {3, 3}));
  EXPECT_TRUE(std::isinf(a[0]));
  EXPECT_EQ(a[2], 1.0);
  EXPECT_EQ(a[6], 1.0);
  EXPECT_TRUE(std::isnan(a[8]));
  const std::vector<double> u = vals(upsample_bilinear2d(x, {8, 8}, false));
  EXPECT_EQ(u[63 - 8 * 7], 1.0);  // row 0, last column: far from both
  EXPECT_TRUE(std::isinf(u[0]));
}

TEST(AvgPool2d, ErrorsNameTheOpAndTheLimit) {
  Tensor x = zeros({1, 1, 4, 4});
  EXPECT_THROW(avg_pool2d(x, 2, IntPair(1), 2), ValueError);  // padding > kernel / 2
  EXPECT_THROW(avg_pool2d(x, 0), ValueError);
  EXPECT_THROW(avg_pool2d(x, 2, std::nullopt, 0, false, true, 0), ValueError);
  EXPECT_THROW(avg_pool2d(zeros({4, 4}), 2), ShapeError);
  EXPECT_THROW(avg_pool2d(x, 5), ShapeError);  // the kernel does not fit
  EXPECT_THROW(avg_pool2d(zeros({1, 1, 4, 4}, TensorOptions().dtype(kInt64)), 2), DTypeError);
  try {
    avg_pool2d(x, 2, IntPair(1), 2);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("avg_pool2d"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("half of kernel size"));
  }
}

TEST(WindowedOps, ADilatedKernelWiderThanThePaddedInputIsAnError) {
  // H = 1, kernel 2, stride 2: (1 - 2) / 2 truncates to 0 in C++, which once counted one window
  // that does not fit; PyTorch says the output is too small.
  Tensor x = zeros({1, 1, 1, 4});
  EXPECT_THROW(max_pool2d(x, 2, IntPair(2)), ShapeError);
  EXPECT_THROW(unfold(x, 2, 1, 0, 2), ShapeError);
  EXPECT_THROW(conv2d(x, zeros({1, 1, 2, 2}), {}, 2), ShapeError);
  EXPECT_THROW(avg_pool2d(x, 2, IntPair(2)), ShapeError);
  EXPECT_EQ(max_pool2d(zeros({1, 1, 2, 4}), 2, IntPair(2)).sizes(), Shape({1, 1, 1, 2}));
}

TEST(AdaptiveAvgPool, WindowsCoverTheInputAndGlobalPoolingIsTheMean) {
  Tensor x = checks::rnd64({2, 3, 5, 7}, 1);
  EXPECT_TRUE(allclose(adaptive_avg_pool2d(x, 1).reshape({2, 3}), x.mean({2, 3}), 1e-12, 1e-12));
  nn::AdaptiveAvgPool2d gap(nn::AdaptiveAvgPool2dOptions({1, 1}));
  EXPECT_EQ(gap->forward(x).sizes(), Shape({2, 3, 1, 1}));
  // 5 -> 3: windows [0, 2), [1, 4), [3, 5).
  Tensor r = d64({1, 2, 3, 4, 5}, {1, 1, 5});
  EXPECT_THAT(vals(adaptive_avg_pool1d(r, 3)), ::testing::ElementsAre(1.5, 3, 4.5));
  EXPECT_THAT(vals(nn::AdaptiveAvgPool1d(3)->forward(r)), ::testing::ElementsAre(1.5, 3, 4.5));
  // Larger than the input: each output repeats (or averages two) inputs.
  EXPECT_THAT(vals(adaptive_avg_pool1d(d64({1, 2}, {1, 1, 2}), 3)),
              ::testing::ElementsAre(1, 1.5, 2));
  // Unbatched [C, H, W] keeps its rank.
  EXPECT_EQ(adaptive_avg_pool2d(zeros({3, 4, 4}), {2, 1}).sizes(), Shape({3, 2, 1}));
  EXPECT_THROW(adaptive_avg_pool2d(x, {0, 2}), ValueError);
  EXPECT_TRUE(grad_ok([](const TensorList& in) { return adaptive_avg_pool2d(in[0], {2, 3}); },
                      {checks::rnd64({1, 2, 5, 4}, 2)}, "adaptive_avg_pool2d"));
}

TEST(Interpolate, NearestAndBilinearKnownValues) {
  Tensor x = d64({1, 2, 3, 4}, {1, 1, 2, 2});
  EXPECT_THAT(vals(F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}))),
              ::testing::ElementsAre(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
  // align_corners: the corners stay, the middle is their mean.
  Tensor line = d64({0, 1}, {1, 1, 2});
  EXPECT_THAT(vals(F::interpolate(line, F::InterpolateFuncOptions()
                                            .size(std::vector<int64_t>{3})
                                            .mode(kLinear)
                                            .align_corners(true))),
              ::testing::ElementsAre(0, 0.5, 1));
  // Half-pixel centres (align_corners false): 2 -> 4 gives 0, 0.25, 0.75, 1.
  EXPECT_THAT(vals(F::interpolate(line, F::InterpolateFuncOptions()
                                            .size(std::vector<int64_t>{4})
                                            .mode(kLinear)
                                            .align_corners(false))),
              ::testing::ElementsAre(0, 0.25, 0.75, 1));
  Tensor b = F::interpolate(x, F::InterpolateFuncOptions()
                                   .size(std::vector<int64_t>{3, 3})
                                   .mode(kBilinear)
                                   .align_corners(true));
  EXPECT_THAT(vals(b), ::testing::ElementsAre(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4));
  // kArea is adaptive average pooling.
  Tensor big = checks::rnd64({1, 2, 6, 6}, 3);
  EXPECT_TRUE(equal(F::interpolate(big, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 2}).mode(kArea)),
                    adaptive_avg_pool2d(big, {3, 2})));
  // nn::Upsample runs F::interpolate.
  nn::Upsample up(nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(kBilinear));
  EXPECT_TRUE(equal(up->forward(x), upsample_bilinear2d(x, {4, 4}, false, 2.0, 2.0)));
  std::ostringstream os;
  up->pretty_print(os);
  EXPECT_THAT(os.str(), ::testing::HasSubstr("mode=bilinear"));
}

TEST(Interpolate, ScaleFactorIsPassedOnUnlessRecomputed) {
  // 5 * 1.3 = 6.5 -> 6 outputs. With the scale, source index = floor(i / 1.3); recomputed, it is
  // floor(i * 5 / 6): output 5 reads input 3 with the scale and 4 without.
  Tensor x = d64({0, 1, 2, 3, 4}, {1, 1, 5});
  auto o = F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.3});
  EXPECT_THAT(vals(F::interpolate(x, o)), ::testing::ElementsAre(0, 0, 1, 2, 3, 3));
  EXPECT_THAT(vals(F::interpolate(x, o.recompute_scale_factor(true))),
              ::testing::ElementsAre(0, 0, 1, 2, 3, 4));
}

TEST(Interpolate, ErrorsSayWhatIsSupported) {
  Tensor x = zeros({1, 1, 4, 4});
  auto sz = F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8});
  EXPECT_THROW(F::interpolate(x, F::InterpolateFuncOptions()), ValueError);  // neither
  EXPECT_THROW(F::interpolate(x, F::InterpolateFuncOptions(sz).scale_factor(std::vector<double>{2, 2})),
               ValueError);                                                       // both
  EXPECT_THROW(F::interpolate(x, F::InterpolateFuncOptions(sz).align_corners(true)), ValueError);
  EXPECT_THROW(F::interpolate(x, F::InterpolateFuncOptions(sz).mode(kBicubic)), ValueError);
  EXPECT_THROW(F::interpolate(x, F::InterpolateFuncOptions(sz).mode(kLinear)), ShapeError);
  EXPECT_THROW(F::interpolate(x, F::InterpolateFuncOptions(sz).antialias(true)), ValueError);
  EXPECT_THROW(F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8})), ShapeError);
  EXPECT_THROW(F::interpolate(zeros({1, 1, 2, 2, 2}), F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4, 4})),
               ShapeError);
  try {
    F::interpolate(x, F::InterpolateFuncOptions(sz).mode(kTrilinear));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("trilinear"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("kBilinear"));
  }
}

TEST(GroupNorm, ModuleNormalizesGroupsAndLearnsPerChannelAffine) {
  nn::GroupNorm gn(nn::GroupNormOptions(2, 4).eps(1e-5));
  EXPECT_EQ(gn->named_parameters().size(), 2u);
  Tensor x = checks::rnd64({3, 4, 5}, 4).detach();
  Tensor y = gn->forward(x.to(kFloat32)).to(kFloat64);
  // Each (sample, group) of 2 channels x 5 has mean 0 and (biased) variance ~1.
  Tensor g = y.reshape({3, 2, 10});
  EXPECT_LT(g.mean({2}).abs().max().item<double>(), 1e-6);
  EXPECT_NEAR(g.var({2}, /*unbiased=*/false).mean().item<double>(), 1.0, 1e-3);
  // One group is layer_norm over [C, *]; C groups is instance norm.
  EXPECT_TRUE(allclose(group_norm(x, 1), layer_norm(x, {4, 5}), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(F::group_norm(x, F::GroupNormFuncOptions(4)),
                       (x - x.mean({2}, true)) / (x.var({2}, false, true) + 1e-5).sqrt(), 1e-12,
                       1e-12));
  EXPECT_THROW(nn::GroupNorm(3, 4), ValueError);
  EXPECT_THROW(group_norm(x, 3), ValueError);
  EXPECT_THROW(group_norm(x, 2, ones({3}, TensorOptions().dtype(kFloat64))), ShapeError);
  EXPECT_THROW(group_norm(zeros({4}), 2), ShapeError);
  std::ostringstream os;
  gn->pretty_print(os);
  EXPECT_EQ(os.str(), "GroupNorm(2, 4, eps=1e-05, affine=true)");
  EXPECT_TRUE(gradgrad_ok(
      [](const TensorList& in) { return group_norm(in[0], 2, in[1], in[2]); },
      {checks::rnd64({2, 4, 3}, 5), checks::rnd64({4}, 6), checks::rnd64({4}, 7)}, "group_norm"));
}

TEST(EnumTags, TopLevelTagsWorkForInitAndInterpolate) {
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kLinear), 1.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(nn::init::kLinear), 1.0);
  Tensor w = empty({64, 32});
  nn::init::kaiming_normal_(w, 0, kFanOut, kReLU);
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / 64), 0.03);
  const InterpolateMode m = kLinear;
  EXPECT_EQ(m, InterpolateMode::Linear);
  EXPECT_STREQ(to_string(kNearestExact), "nearest-exact");
  {
    using namespace nn::init;  // both paths name the same entities: not ambiguous
    EXPECT_DOUBLE_EQ(calculate_gain(kTanh), 5.0 / 3.0);
    EXPECT_DOUBLE_EQ(calculate_gain(kLinear), 1.0);
  }
}

}  // namespace
}  // namespace gradlab
