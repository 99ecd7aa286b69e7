#pragma once
// nn::AvgPool2d, nn::AdaptiveAvgPool1d / 2d, nn::Upsample and nn::GroupNorm (defined in
// nn/layers.cpp; options in nn/resample_options.hpp; the ops in ops/resample.cpp and
// ops/nn_ops.cpp).

#include "gradlab/nn/module.hpp"
#include "gradlab/nn/pool_pad_options.hpp"
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

// ---- 1-D pools, pixel shuffle, edge pads, instance norm (nn/pool_pad.cpp) -----------------------

/// Max over each window along L of [N, C, L] (or [C, L]): max_pool1d.
class MaxPool1dImpl : public Module {
 public:
  explicit MaxPool1dImpl(const MaxPool1dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  /// The output and the int64 index along L of each max.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  MaxPool1dOptions options;
};
GRADLAB_MODULE(MaxPool1d);

/// Mean over each window along L of [N, C, L] (or [C, L]): avg_pool1d.
class AvgPool1dImpl : public Module {
 public:
  explicit AvgPool1dImpl(const AvgPool1dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  AvgPool1dOptions options;
};
GRADLAB_MODULE(AvgPool1d);

/// Max over the adaptive windows that give an output of options.output_size: adaptive_max_pool2d.
class AdaptiveMaxPool2dImpl : public Module {
 public:
  explicit AdaptiveMaxPool2dImpl(const AdaptiveMaxPool2dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  /// The output and the int64 index of each max within its H*W plane.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  AdaptiveMaxPool2dOptions options;
};
GRADLAB_MODULE(AdaptiveMaxPool2d);

/// The same along L of [N, C, L] (or [C, L]): adaptive_max_pool1d.
class AdaptiveMaxPool1dImpl : public Module {
 public:
  explicit AdaptiveMaxPool1dImpl(const AdaptiveMaxPool1dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  AdaptiveMaxPool1dOptions options;
};
GRADLAB_MODULE(AdaptiveMaxPool1d);

/// [*, C r², H, W] -> [*, C, H r, W r]: pixel_shuffle.
class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  PixelShuffleOptions options;
};
GRADLAB_MODULE(PixelShuffle);

/// [*, C, H r, W r] -> [*, C r², H, W]: pixel_unshuffle.
class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  PixelUnshuffleOptions options;
};
GRADLAB_MODULE(PixelUnshuffle);

#define GRADLAB_PAD_MODULE(Name, Opts)                                \
  class Name##Impl : public Module {                                  \
   public:                                                            \
    explicit Name##Impl(const Opts& options) : options(options) {}    \
    Tensor forward(const Tensor& input);                              \
    void pretty_print(std::ostream& os) const override;               \
    Opts options;                                                     \
  };                                                                  \
  GRADLAB_MODULE(Name)
/// Mirror padding of the last dim (reflection_pad1d) / last two dims (reflection_pad2d).
GRADLAB_PAD_MODULE(ReflectionPad1d, ReflectionPad1dOptions);
GRADLAB_PAD_MODULE(ReflectionPad2d, ReflectionPad2dOptions);
/// Edge-value padding of the last dim / last two dims (replication_pad1d / 2d).
GRADLAB_PAD_MODULE(ReplicationPad1d, ReplicationPad1dOptions);
GRADLAB_PAD_MODULE(ReplicationPad2d, ReplicationPad2dOptions);
/// Constant padding of the last dim / last two dims (F::pad, kConstant).
GRADLAB_PAD_MODULE(ConstantPad1d, ConstantPad1dOptions);
GRADLAB_PAD_MODULE(ConstantPad2d, ConstantPad2dOptions);
#undef GRADLAB_PAD_MODULE

/// Normalizes each (sample, channel) of [N, C, L] (InstanceNorm1d; or [C, L]) or [N, C, H, W]
/// (InstanceNorm2d; or [C, H, W]) over its own positions; affine adds weight[c] x̂ + bias[c].
/// track_running_stats(true) is refused (ValueError).
class InstanceNorm1dImpl : public Module {
 public:
  explicit InstanceNorm1dImpl(const InstanceNorm1dOptions& options);
  Tensor forward(const Tensor& input);
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;
  InstanceNorm1dOptions options;
  Tensor weight, bias;
};
GRADLAB_MODULE(InstanceNorm1d);
class InstanceNorm2dImpl : public Module {
 public:
  explicit InstanceNorm2dImpl(const InstanceNorm2dOptions& options);
  Tensor forward(const Tensor& input);
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;
  InstanceNorm2dOptions options;
  Tensor weight, bias;
};
GRADLAB_MODULE(InstanceNorm2d);

}  // namespace gradlab::nn
