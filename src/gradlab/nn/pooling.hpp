#pragma once
// nn::AvgPool2d, nn::AdaptiveAvgPool1d / 2d, nn::Upsample and nn::GroupNorm (defined in
// nn/layers.cpp; options in nn/resample_options.hpp; the ops in ops/resample.cpp and
// ops/nn_ops.cpp).

#include "gradlab/nn/module.hpp"
#include "gradlab/nn/resample_options.hpp"

namespace gradlab::nn {

/// Mean over each window of [N, C, H, W] (or [C, H, W]): avg_pool2d.
class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(const AvgPool2dOptions& options) : options(options) {}
  explicit AvgPool2dImpl(int64_t kernel_size) : options(IntPair(kernel_size)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  AvgPool2dOptions options;
};
GRADLAB_MODULE(AvgPool2d);

/// Mean over the adaptive windows that give an output of options.output_size:
/// adaptive_avg_pool2d. AdaptiveAvgPool2d(1) is global average pooling.
class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options) : options(options) {}
  explicit AdaptiveAvgPool2dImpl(int64_t output_size) : options(IntPair(output_size)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  AdaptiveAvgPool2dOptions options;
};
GRADLAB_MODULE(AdaptiveAvgPool2d);

/// The same along L of [N, C, L] (or [C, L]): adaptive_avg_pool1d.
class AdaptiveAvgPool1dImpl : public Module {
 public:
  explicit AdaptiveAvgPool1dImpl(const AdaptiveAvgPool1dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  AdaptiveAvgPool1dOptions options;
};
GRADLAB_MODULE(AdaptiveAvgPool1d);

/// Resizes by F::interpolate with the module's size or scale_factor, mode and align_corners.
class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  UpsampleOptions options;
};
GRADLAB_MODULE(Upsample);

/// Normalizes each group of num_channels / num_groups channels of [N, C, *] per sample, then
/// weight[c] * x̂ + bias[c] (affine; weight = 1, bias = 0 at start). Same in train and eval.
class GroupNormImpl : public Module {
 public:
  explicit GroupNormImpl(const GroupNormOptions& options);
  GroupNormImpl(int64_t num_groups, int64_t num_channels)
      : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  Tensor forward(const Tensor& input);
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;
  GroupNormOptions options;
  Tensor weight, bias;
};
GRADLAB_MODULE(GroupNorm);

}  // namespace gradlab::nn
