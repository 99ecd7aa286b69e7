// LibTorch parity, pooling / padding / shuffling / instance norm batch (docs/libtorch_parity.md):
// max_pool2d_with_indices (F:: and MaxPool2d::forward_with_indices), the 1-D pools and their
// modules, adaptive max pooling, pixel_shuffle / pixel_unshuffle, F::pad's reflect / replicate / circular modes and the
// pad modules, instance norm, hardshrink / softshrink. Values against LibTorch: the compatibility
// corpus (checks/compat); the torch:: ops' gradients: the op table (testing/op_table/pool_pad.cpp,
// activation.cpp). These check the F::-only composites' float64 gradients, modules and errors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "nn/nn_helpers.hpp"

namespace gradlab {
namespace {

using checks::d64;
using checks::error_of;
using checks::grad_ok;
using checks::gradgrad_ok;
using checks::rnd64;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace F = nn::functional;

std::vector<double> vals(const Tensor& t) { return t.contiguous().to_vector<double>(); }
std::vector<int64_t> ivals(const Tensor& t) { return t.contiguous().to_vector<int64_t>(); }

// ---- max pooling with indices -------------------------------------------------------------------

TEST(PoolPadParity, MaxPool2dWithIndicesFunctionalAndModule) {
  Tensor x = d64({1, 5, 2, 0, 3, 4, 9, 8, 7, 6, 1, 2, 0, 3, 4, 5}, {1, 1, 4, 4});
  auto [y, idx] = F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2));
  EXPECT_THAT(vals(y), ElementsAre(5, 9, 7, 5));
  EXPECT_THAT(ivals(idx), ElementsAre(1, 6, 8, 15));  // flat index in the 4x4 plane
  auto [ym, im] = nn::MaxPool2d(nn::MaxPool2dOptions(2))->forward_with_indices(x);
  EXPECT_TRUE(allclose(ym, y));
  EXPECT_THAT(ivals(im), ElementsAre(1, 6, 8, 15));
  EXPECT_THAT(error_of<ValueError>([&] { F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2).ceil_mode(true)); }),
              HasSubstr("max_pool2d_with_indices: ceil_mode is not supported"));
}

// ---- 1-D pools ----------------------------------------------------------------------------------

TEST(PoolPadParity, MaxPool1dValuesIndicesAndModule) {
  Tensor x = d64({1, 4, 2, 8, 5, 3, 0, 6}, {1, 1, 8});
  EXPECT_THAT(vals(F::max_pool1d(x, F::MaxPool1dFuncOptions(2))), ElementsAre(4, 8, 5, 6));
  EXPECT_THAT(vals(F::max_pool1d(x, F::MaxPool1dFuncOptions(3).stride(2).padding(1))), ElementsAre(4, 8, 8, 6));
  EXPECT_THAT(vals(F::max_pool1d(x, F::MaxPool1dFuncOptions(2).stride(2).dilation(2))), ElementsAre(2, 5, 5));
  auto [y, idx] = nn::MaxPool1d(nn::MaxPool1dOptions(2).stride(3))->forward_with_indices(x.reshape({1, 8}));
  EXPECT_THAT(vals(y), ElementsAre(4, 8, 6));
  EXPECT_THAT(ivals(idx), ElementsAre(1, 3, 7));
  EXPECT_EQ(y.sizes(), Shape({1, 3}));  // unbatched [C, L] stays unbatched
  EXPECT_THAT(error_of<ShapeError>([] { F::max_pool1d(zeros({2, 2, 2, 8}), F::MaxPool1dFuncOptions(2)); }),
              HasSubstr("max_pool1d: expects a sequence batch; expected [N, C, L] or [C, L], got 4-D"));
  EXPECT_THAT(error_of<ValueError>([&] { F::max_pool1d(x, F::MaxPool1dFuncOptions(2).ceil_mode(true)); }),
              HasSubstr("max_pool1d: ceil_mode is not supported"));
  EXPECT_THAT(error_of<ValueError>([&] { F::max_pool1d(x, F::MaxPool1dFuncOptions(2).padding(2)); }),
              HasSubstr("pad should be at most half of the kernel size"));
  std::ostringstream os;
  nn::MaxPool1d(nn::MaxPool1dOptions(2))->pretty_print(os);
  EXPECT_EQ(os.str(), "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false)");
}

TEST(PoolPadParity, AvgPool1dValuesAndModule) {
  Tensor x = d64({1, 2, 3, 4, 5, 6}, {1, 1, 6});
  EXPECT_THAT(vals(F::avg_pool1d(x, F::AvgPool1dFuncOptions(2))), ElementsAre(1.5, 3.5, 5.5));
  // padding 1, stride 2: windows [-1, 2), [1, 4), [3, 6); with the padding counted or not
  EXPECT_THAT(vals(F::avg_pool1d(x, F::AvgPool1dFuncOptions(3).stride(2).padding(1))),
              ElementsAre(1.0, 3.0, 5.0));
  EXPECT_THAT(vals(nn::AvgPool1d(nn::AvgPool1dOptions(3).stride(2).padding(1).count_include_pad(false))(x)),
              ElementsAre(1.5, 3.0, 5.0));
  EXPECT_THAT(vals(F::avg_pool1d(x, F::AvgPool1dFuncOptions(4).stride(4).ceil_mode(true))), ElementsAre(2.5, 5.5));
}

// ---- adaptive max pooling -----------------------------------------------------------------------

TEST(PoolPadParity, AdaptiveMaxPoolValuesIndicesAndGradient) {
  // 3 -> 2 windows: rows / cols [0, 2) and [1, 3); the 9 at (1, 2) is the max of two windows
  Tensor x = d64({1, 5, 2, 3, 4, 9, 7, 6, 0}, {1, 1, 3, 3}, true);
  auto [y, idx] = adaptive_max_pool2d(x, {2, 2});
  EXPECT_THAT(vals(y), ElementsAre(5, 9, 7, 9));
  EXPECT_THAT(ivals(idx), ElementsAre(1, 5, 6, 5));
  y.sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(0, 1, 0, 0, 0, 2, 1, 0, 0));
  auto [ym, im] = nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({2, 2}))->forward_with_indices(x.detach());
  EXPECT_TRUE(allclose(ym, y));
  EXPECT_THAT(ivals(im), ElementsAre(1, 5, 6, 5));
  EXPECT_THAT(vals(F::adaptive_max_pool2d(x.detach(), F::AdaptiveMaxPool2dFuncOptions(1))), ElementsAre(9));
  // 5 -> 3 windows [0, 2), [1, 4), [3, 5); unbatched [C, L]
  Tensor s = d64({3, 1, 4, 0, 5}, {1, 5});
  auto [v1, i1] = nn::AdaptiveMaxPool1d(nn::AdaptiveMaxPool1dOptions(3))->forward_with_indices(s);
  EXPECT_THAT(vals(v1), ElementsAre(3, 4, 5));
  EXPECT_THAT(ivals(i1), ElementsAre(0, 2, 4));
  EXPECT_EQ(v1.sizes(), Shape({1, 3}));
  EXPECT_THAT(error_of<ShapeError>([] { adaptive_max_pool2d(zeros({1, 1, 1, 3, 3}), 2); }),
              HasSubstr("adaptive_max_pool2d: expects a batched or an unbatched input; expected 3-D or 4-D, got 5-D"));
  EXPECT_THAT(error_of<ValueError>([] { adaptive_max_pool1d(zeros({1, 3}), 0); }),
              HasSubstr("output_size must be positive"));
}

// ---- pixel shuffle ------------------------------------------------------------------------------

TEST(PoolPadParity, PixelShuffleLayoutRoundTripAndErrors) {
  Tensor x = arange(8, TensorOptions().dtype(kFloat64)).reshape({1, 4, 1, 2});
  // channel c r² + i r + j lands at (h r + i, w r + j)
  EXPECT_THAT(vals(F::pixel_shuffle(x, F::PixelShuffleFuncOptions(2))), ElementsAre(0, 2, 1, 3, 4, 6, 5, 7));
  Tensor z = rnd64({2, 3, 2, 4, 6}, 3);
  EXPECT_TRUE(allclose(nn::PixelShuffle(2)(nn::PixelUnshuffle(2)(z)), z));
  EXPECT_EQ(nn::PixelUnshuffle(nn::PixelUnshuffleOptions(2))(z).sizes(), Shape({2, 3, 8, 2, 3}));
  EXPECT_THAT(error_of<ShapeError>([] { pixel_shuffle(zeros({1, 3, 2, 2}), 2); }),
              HasSubstr("pixel_shuffle: the channel dim (input.size(-3)) must be divisible by upscale_factor^2; "
                        "expected a multiple of 4, got input.size(-3) = 3"));
  EXPECT_THAT(error_of<ShapeError>([] { pixel_unshuffle(zeros({1, 1, 3, 2}), 2); }),
              HasSubstr("must be divisible by downscale_factor"));
  EXPECT_THAT(error_of<ShapeError>([] { pixel_shuffle(zeros({4, 2}), 2); }), HasSubstr("at least 3 dimensions"));
  EXPECT_THAT(error_of<ValueError>([] { pixel_shuffle(zeros({1, 4, 2, 2}), 0); }), HasSubstr("positive"));
}

// ---- padding ------------------------------------------------------------------------------------

TEST(PoolPadParity, EdgePadModesValues) {
  Tensor x = d64({1, 2, 3}, {1, 1, 3});
  EXPECT_THAT(vals(F::pad(x, F::PadFuncOptions({2, 1}).mode(kReflect))), ElementsAre(3, 2, 1, 2, 3, 2));
  EXPECT_THAT(vals(F::pad(x, F::PadFuncOptions({2, 1}).mode(kReplicate))), ElementsAre(1, 1, 1, 2, 3, 3));
  EXPECT_THAT(vals(F::pad(x, F::PadFuncOptions({2, 1}).mode(kCircular))), ElementsAre(2, 3, 1, 2, 3, 1));
  Tensor im = d64({1, 2, 3, 4}, {1, 2, 2});
  EXPECT_THAT(vals(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 0, 0, 1}))(im)), ElementsAre(2, 1, 2, 4, 3, 4, 2, 1, 2));
  EXPECT_THAT(vals(nn::ReplicationPad2d(nn::ReplicationPad2dOptions({0, 1, 1, 0}))(im)),
              ElementsAre(1, 2, 2, 1, 2, 2, 3, 4, 4));
  EXPECT_THAT(vals(nn::ConstantPad2d(nn::ConstantPad2dOptions({1, 0, 0, 0}, 0.5))(im)), ElementsAre(0.5, 1, 2, 0.5, 3, 4));
  EXPECT_THAT(vals(nn::ConstantPad1d(nn::ConstantPad1dOptions(1, -1.0))(x)), ElementsAre(-1, 1, 2, 3, -1));
  EXPECT_THAT(vals(nn::ReflectionPad1d(1)(x)), ElementsAre(2, 1, 2, 3, 2));
  EXPECT_THAT(vals(nn::ReplicationPad1d(nn::ReplicationPad1dOptions({0, 2}))(x)), ElementsAre(1, 2, 3, 3, 3));
}

TEST(PoolPadParity, EdgePadErrors) {
  Tensor x = zeros({1, 1, 3});
  EXPECT_THAT(error_of<ValueError>([&] { reflection_pad1d(x, {3, 0}); }),
              HasSubstr("reflection_pad1d: padding size should be less than the corresponding input dimension; "
                        "expected padding < 3 at dimension 2, got padding (3, 0) of input [1, 1, 3]"));
  EXPECT_THAT(error_of<ValueError>([&] { F::pad(x, F::PadFuncOptions({1, 1}).mode(kReflect).value(1)); }),
              HasSubstr("doesn't take a value"));
  EXPECT_THAT(error_of<ValueError>([&] { F::pad(x, F::PadFuncOptions({1, 1, 1, 1, 1, 1}).mode(kReplicate)); }),
              HasSubstr("pads the last 1 or 2 dims only"));
  EXPECT_THAT(error_of<ValueError>([&] { F::pad(x, F::PadFuncOptions({4, 0}).mode(kCircular)); }),
              HasSubstr("wrapping around more than once"));
  EXPECT_THAT(error_of<ShapeError>([] { replication_pad2d(zeros({3}), {1, 1, 1, 1}); }),
              HasSubstr("expected 3-D or 4-D (batch mode), got 1-D [3]"));
}

// The backward of a reflect pad adds the gradients of a source read twice (index_select's
// index_add): x[1] of [1, 2, 3] padded by {1, 1} is read at outputs 0 and 2.
TEST(PoolPadParity, EdgePadGradientsAccumulate) {
  Tensor x = d64({1, 2, 3}, {1, 3}, true);
  F::pad(x, F::PadFuncOptions({1, 1}).mode(kReflect)).sum().backward();
  EXPECT_THAT(vals(x.grad()), ElementsAre(1, 3, 1));
  Tensor a = rnd64({2, 3, 4}, 5);
  for (PadMode m : {kReflect, kReplicate, kCircular}) {
    EXPECT_TRUE(grad_ok([m](const TensorList& in) { return F::pad(in[0], F::PadFuncOptions({2, 1, 1, 2}).mode(m)); },
                        {a}, "pad 2-D"));
    EXPECT_TRUE(gradgrad_ok([m](const TensorList& in) { return F::pad(in[0], F::PadFuncOptions({1, 2}).mode(m)); },
                            {a}, "pad 1-D"));
  }
}

// ---- instance norm ------------------------------------------------------------------------------

TEST(PoolPadParity, InstanceNormMatchesPerChannelStatistics) {
  Tensor x = rnd64({2, 3, 4, 5}, 7);
  Tensor m = x.mean(std::vector<int64_t>{2, 3}, true);
  Tensor v = x.var(std::vector<int64_t>{2, 3}, false, true);
  Tensor want = (x - m) / (v + 1e-5).sqrt();
  EXPECT_TRUE(allclose(F::instance_norm(x), want, 1e-10, 1e-12));
  Tensor w = rnd64({3}, 8), b = rnd64({3}, 9);
  EXPECT_TRUE(allclose(F::instance_norm(x, F::InstanceNormFuncOptions().weight(w).bias(b)),
                       want * w.reshape({1, 3, 1, 1}) + b.reshape({1, 3, 1, 1}), 1e-10, 1e-12));
  EXPECT_TRUE(grad_ok(
      [](const TensorList& in) {
        return F::instance_norm(in[0], F::InstanceNormFuncOptions().weight(in[1]).bias(in[2]).eps(1e-3));
      },
      {rnd64({2, 3, 4}, 10), w, b}, "instance_norm"));
  EXPECT_TRUE(gradgrad_ok([](const TensorList& in) { return F::instance_norm(in[0]); }, {rnd64({2, 2, 3}, 11)},
                          "instance_norm"));
}

TEST(PoolPadParity, InstanceNormModulesDefaultsAndRefusals) {
  nn::InstanceNorm2d plain(nn::InstanceNorm2dOptions(3));
  EXPECT_TRUE(plain->parameters().empty());  // LibTorch's default: affine false
  nn::InstanceNorm1d affine(nn::InstanceNorm1dOptions(3).affine(true));
  EXPECT_EQ(affine->parameters().size(), 2u);
  EXPECT_THAT(vals(affine->weight), ElementsAre(1, 1, 1));
  Tensor x = rnd64({3, 6}, 12);  // unbatched [C, L]
  EXPECT_TRUE(allclose(affine(x), F::instance_norm(x.unsqueeze(0)).squeeze(0)));
  EXPECT_THAT(error_of<ValueError>([] { nn::InstanceNorm2d(nn::InstanceNorm2dOptions(3).track_running_stats(true)); }),
              HasSubstr("InstanceNorm2d: track_running_stats is not supported"));
  EXPECT_THAT(error_of<ValueError>([] {
                F::instance_norm(zeros({1, 2, 3}), F::InstanceNormFuncOptions().running_mean(zeros({2})));
              }),
              HasSubstr("instance_norm: running statistics are not supported"));
  EXPECT_THAT(error_of<ValueError>([] {
                instance_norm(zeros({1, 2, 3}), {}, {}, {}, {}, false, 0.1, 1e-5, false);
              }),
              HasSubstr("got use_input_stats false"));
  EXPECT_TRUE(allclose(instance_norm(rnd64({2, 3, 4}, 13), {}, {}, {}, {}, true, 0.1, 1e-5, false),
                       F::instance_norm(rnd64({2, 3, 4}, 13))));
  EXPECT_THAT(error_of<ShapeError>([] { nn::InstanceNorm2d(3)(zeros({3, 4})); }),
              HasSubstr("expected 3-D or 4-D input, got 2-D input"));
  EXPECT_THAT(error_of<ShapeError>([] { nn::InstanceNorm1d(3)(zeros({1, 2, 4})); }), HasSubstr("num_features"));
}

// ---- shrinks ------------------------------------------------------------------------------------

TEST(PoolPadParity, ShrinkModulesAndOptions) {
  Tensor x = d64({-1, -0.4, 0, 0.2, 0.7}, {5});
  EXPECT_THAT(vals(F::hardshrink(x)), ElementsAre(-1, 0, 0, 0, 0.7));
  EXPECT_THAT(vals(nn::Hardshrink(nn::HardshrinkOptions().lambda(0.3))(x)), ElementsAre(-1, -0.4, 0, 0, 0.7));
  std::vector<double> s = vals(nn::Softshrink(0.5)(x));
  EXPECT_THAT(s, ElementsAre(-0.5, 0, 0, 0, ::testing::DoubleNear(0.2, 1e-15)));
  EXPECT_THAT(error_of<ValueError>([&] { F::softshrink(x, F::SoftshrinkFuncOptions(-1)); }),
              HasSubstr("softshrink: lambda must be greater or equal to 0"));
}

}  // namespace
}  // namespace gradlab
