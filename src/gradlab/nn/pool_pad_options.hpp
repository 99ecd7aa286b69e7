#pragma once
// Options of the 1-D pools, adaptive max pooling, pixel shuffle, the reflection / replication / constant pad modules and
// instance norm (LibTorch's torch/nn/options/{pooling,pixelshuffle,padding,instancenorm}.h). As in
// LibTorch, each F::XxxFuncOptions is the module's XxxOptions, except InstanceNormFuncOptions.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "gradlab/core/tensor.hpp"
#include "gradlab/nn/arg.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab::nn {

/// Options of nn::MaxPool1d and F::max_pool1d: F::max_pool1d(x, F::MaxPool1dFuncOptions(3).stride(2)).
struct MaxPool1dOptions {
  MaxPool1dOptions(int64_t kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  GRADLAB_ARG(int64_t, kernel_size);
  /// Defaults to kernel_size.
  GRADLAB_ARG(int64_t, stride);
  GRADLAB_ARG(int64_t, padding) = 0;
  GRADLAB_ARG(int64_t, dilation) = 1;
  /// true is refused (ValueError): gradlab's max pool has no last, partial window.
  GRADLAB_ARG(bool, ceil_mode) = false;
};

/// Options of nn::AvgPool1d and F::avg_pool1d.
struct AvgPool1dOptions {
  AvgPool1dOptions(int64_t kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  GRADLAB_ARG(int64_t, kernel_size);
  /// Defaults to kernel_size.
  GRADLAB_ARG(int64_t, stride);
  /// Zeros on each side, at most kernel_size / 2.
  GRADLAB_ARG(int64_t, padding) = 0;
  GRADLAB_ARG(bool, ceil_mode) = false;
  GRADLAB_ARG(bool, count_include_pad) = true;
  /// Ignored, as LibTorch's F::avg_pool1d ignores it (torch::avg_pool1d has no divisor).
  GRADLAB_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

/// Options of nn::AdaptiveMaxPool2d and F::adaptive_max_pool2d: the output's (oh, ow).
struct AdaptiveMaxPool2dOptions {
  AdaptiveMaxPool2dOptions(IntPair output_size) : output_size_(output_size) {}  // NOLINT
  GRADLAB_ARG(IntPair, output_size);
};
/// Options of nn::AdaptiveMaxPool1d and F::adaptive_max_pool1d: the output's length.
struct AdaptiveMaxPool1dOptions {
  AdaptiveMaxPool1dOptions(int64_t output_size) : output_size_(output_size) {}  // NOLINT
  GRADLAB_ARG(int64_t, output_size);
};

/// Options of nn::PixelShuffle and F::pixel_shuffle.
struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  GRADLAB_ARG(int64_t, upscale_factor);
};
/// Options of nn::PixelUnshuffle and F::pixel_unshuffle.
struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}  // NOLINT
  GRADLAB_ARG(int64_t, downscale_factor);
};

/// Options of nn::ReflectionPad1d / 2d: ReflectionPad2dOptions({left, right, top, bottom}), or one
/// number for all 2 D amounts (LibTorch's ExpandingArray<2 D>).
template <int D>
struct ReflectionPadOptions {
  ReflectionPadOptions(int64_t p) : padding_(2 * D, p) {}                            // NOLINT
  ReflectionPadOptions(std::initializer_list<int64_t> l) : padding_(l) {}            // NOLINT
  ReflectionPadOptions(std::vector<int64_t> l) : padding_(std::move(l)) {}           // NOLINT
  GRADLAB_ARG(std::vector<int64_t>, padding);
};
using ReflectionPad1dOptions = ReflectionPadOptions<1>;
using ReflectionPad2dOptions = ReflectionPadOptions<2>;
/// Options of nn::ReplicationPad1d / 2d.
template <int D>
struct ReplicationPadOptions {
  ReplicationPadOptions(int64_t p) : padding_(2 * D, p) {}                           // NOLINT
  ReplicationPadOptions(std::initializer_list<int64_t> l) : padding_(l) {}           // NOLINT
  ReplicationPadOptions(std::vector<int64_t> l) : padding_(std::move(l)) {}          // NOLINT
  GRADLAB_ARG(std::vector<int64_t>, padding);
};
using ReplicationPad1dOptions = ReplicationPadOptions<1>;
using ReplicationPad2dOptions = ReplicationPadOptions<2>;
/// Options of nn::ConstantPad1d / 2d: ConstantPad2dOptions({1, 1, 2, 0}, 0.5).
template <int D>
struct ConstantPadOptions {
  ConstantPadOptions(int64_t p, double value) : padding_(2 * D, p), value_(value) {}
  ConstantPadOptions(std::initializer_list<int64_t> l, double value) : padding_(l), value_(value) {}
  ConstantPadOptions(std::vector<int64_t> l, double value) : padding_(std::move(l)), value_(value) {}
  GRADLAB_ARG(std::vector<int64_t>, padding);
  GRADLAB_ARG(double, value);
};
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;

/// Options of nn::InstanceNorm1d / 2d (LibTorch's defaults: no affine, no running stats).
struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  GRADLAB_ARG(int64_t, num_features);
  GRADLAB_ARG(double, eps) = 1e-5;
  /// Unused: only read with track_running_stats, which gradlab refuses.
  GRADLAB_ARG(double, momentum) = 0.1;
  /// Learn a weight (ones) and a bias (zeros) per channel.
  GRADLAB_ARG(bool, affine) = false;
  /// true is refused (ValueError): gradlab keeps no running stats for instance norm.
  GRADLAB_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;

namespace functional {
using MaxPool1dFuncOptions = MaxPool1dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;
/// F::instance_norm(x, F::InstanceNormFuncOptions().weight(w).bias(b).eps(1e-5)). Running stats
/// (running_mean / running_var, or use_input_stats(false)) are refused (ValueError).
struct InstanceNormFuncOptions {
  GRADLAB_ARG(Tensor, running_mean) = Tensor();
  GRADLAB_ARG(Tensor, running_var) = Tensor();
  GRADLAB_ARG(Tensor, weight) = Tensor();
  GRADLAB_ARG(Tensor, bias) = Tensor();
  GRADLAB_ARG(bool, use_input_stats) = true;
  GRADLAB_ARG(double, momentum) = 0.1;
  GRADLAB_ARG(double, eps) = 1e-5;
};
}  // namespace functional

}  // namespace gradlab::nn
