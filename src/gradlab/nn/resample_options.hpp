#pragma once
// Options of the pooling, resampling and group-norm layers and of their functional forms
// (LibTorch's torch/nn/options/{pooling,upsampling,normalization}.h): AvgPool2dOptions,
// AdaptiveAvgPool1d / 2dOptions, UpsampleOptions, InterpolateFuncOptions, GroupNormOptions,
// GroupNormFuncOptions. F::avg_pool2d and F::adaptive_avg_pool2d take the module options (their
// FuncOptions are aliases, as in LibTorch).

#include <cstdint>
#include <optional>
#include <vector>

#include "gradlab/core/tensor.hpp"
#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/enum.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab::nn {

/// Options of nn::AvgPool2d and F::avg_pool2d.
struct AvgPool2dOptions {
  AvgPool2dOptions(IntPair kernel_size)  // NOLINT: nn::AvgPool2d(2)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  GRADLAB_ARG(IntPair, kernel_size);
  /// Defaults to kernel_size.
  GRADLAB_ARG(IntPair, stride);
  /// Zeros on each side, at most kernel_size / 2.
  GRADLAB_ARG(IntPair, padding) = 0;
  /// Round the output size up (a last, partial window), not down.
  GRADLAB_ARG(bool, ceil_mode) = false;
  /// Count the padding in each window's divisor.
  GRADLAB_ARG(bool, count_include_pad) = true;
  /// Divide every window by this instead.
  GRADLAB_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

/// Options of nn::AdaptiveAvgPool2d and F::adaptive_avg_pool2d: the output's (oh, ow).
struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(IntPair output_size) : output_size_(output_size) {}  // NOLINT
  GRADLAB_ARG(IntPair, output_size);
};
/// Options of nn::AdaptiveAvgPool1d and F::adaptive_avg_pool1d: the output's length.
struct AdaptiveAvgPool1dOptions {
  AdaptiveAvgPool1dOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRADLAB_ARG(int64_t, output_size);
};

/// Options of F::interpolate (also reachable as F::InterpolateFuncOptions).
struct InterpolateFuncOptions {
  /// The output's spatial size (one entry per spatial dim); or give scale_factor.
  GRADLAB_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  /// Output size = floor(input size * factor), one factor per spatial dim.
  GRADLAB_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  /// kNearest, kLinear (3-D input), kBilinear (4-D), kArea; kBicubic, kTrilinear and
  /// kNearestExact are refused.
  GRADLAB_ARG(InterpolateMode, mode) = kNearest;
  /// Linear modes only: map the corner pixels' centres onto each other (default false).
  GRADLAB_ARG(std::optional<bool>, align_corners) = std::nullopt;
  /// true: compute the output size from scale_factor, then resample by that size alone.
  GRADLAB_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  /// true is refused (gradlab has no anti-aliased resize).
  GRADLAB_ARG(bool, antialias) = false;
};

/// Options of nn::Upsample.
struct UpsampleOptions {
  GRADLAB_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  GRADLAB_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  GRADLAB_ARG(InterpolateMode, mode) = kNearest;
  GRADLAB_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

/// Options of nn::GroupNorm.
struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  GRADLAB_ARG(int64_t, num_groups);
  GRADLAB_ARG(int64_t, num_channels);
  GRADLAB_ARG(double, eps) = 1e-5;
  /// Learn a weight and a bias per channel.
  GRADLAB_ARG(bool, affine) = true;
};

namespace functional {
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using nn::InterpolateFuncOptions;

/// Options of F::group_norm.
struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  GRADLAB_ARG(int64_t, num_groups);
  GRADLAB_ARG(Tensor, weight) = {};
  GRADLAB_ARG(Tensor, bias) = {};
  GRADLAB_ARG(double, eps) = 1e-5;
};
}  // namespace functional

}  // namespace gradlab::nn
