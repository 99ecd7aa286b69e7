#pragma once
// nn::Conv1d, nn::Conv2d, nn::ConvTranspose2d and nn::MaxPool2d (enough for a small CNN on 8x8
// digits, a depthwise-separable block and a DCGAN generator).

#include <optional>
#include <vector>

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"
#include "gradlab/nn/pool_options.hpp"
#include "gradlab/ops/nn_ops.hpp"

namespace gradlab::nn {

/// Options of nn::Conv2d.
struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, IntPair kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRADLAB_ARG(int64_t, in_channels);
  GRADLAB_ARG(int64_t, out_channels);
  GRADLAB_ARG(IntPair, kernel_size);
  GRADLAB_ARG(IntPair, stride) = 1;
  GRADLAB_ARG(IntPair, padding) = 0;
  GRADLAB_ARG(IntPair, dilation) = 1;
  /// Channels split into `groups` independent convolutions (in_channels == groups: depthwise).
  GRADLAB_ARG(int64_t, groups) = 1;
  GRADLAB_ARG(bool, bias) = true;
};

/// [N, C_in, H, W] -> [N, C_out, oh, ow]; weight [C_out, C_in / groups, kh, kw] and bias as
/// nn::Linear's default init with fan_in = C_in / groups * kh * kw (LibTorch's).
class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, IntPair kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;

  Conv2dOptions options;
  Tensor weight, bias;
};
GRADLAB_MODULE(Conv2d);

/// Options of nn::Conv1d (LibTorch's Conv1dOptions; its ExpandingArray<1> sizes are one int here:
/// `3` and `{3}` both work).
struct Conv1dOptions {
  Conv1dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRADLAB_ARG(int64_t, in_channels);
  GRADLAB_ARG(int64_t, out_channels);
  GRADLAB_ARG(int64_t, kernel_size);
  GRADLAB_ARG(int64_t, stride) = 1;
  GRADLAB_ARG(int64_t, padding) = 0;
  GRADLAB_ARG(int64_t, dilation) = 1;
  GRADLAB_ARG(int64_t, groups) = 1;
  GRADLAB_ARG(bool, bias) = true;
};

/// [N, C_in, L] (or [C_in, L]) -> [N, C_out, ol] through conv1d; weight [C_out, C_in / groups, k]
/// and bias as Conv2d's init with fan_in = C_in / groups * k.
class Conv1dImpl : public Module {
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv1dImpl(const Conv1dOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;

  Conv1dOptions options;
  Tensor weight, bias;
};
GRADLAB_MODULE(Conv1d);

/// Options of nn::ConvTranspose2d.
struct ConvTranspose2dOptions {
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, IntPair kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  GRADLAB_ARG(int64_t, in_channels);
  GRADLAB_ARG(int64_t, out_channels);
  GRADLAB_ARG(IntPair, kernel_size);
  GRADLAB_ARG(IntPair, stride) = 1;
  GRADLAB_ARG(IntPair, padding) = 0;
  /// Added to one side of the output: picks one of the stride's possible output sizes.
  GRADLAB_ARG(IntPair, output_padding) = 0;
  GRADLAB_ARG(int64_t, groups) = 1;
  GRADLAB_ARG(bool, bias) = true;
  GRADLAB_ARG(IntPair, dilation) = 1;
};

/// [N, C_in, H, W] -> [N, C_out, oh, ow] with oh = (H - 1) * stride - 2 * padding +
/// dilation * (kh - 1) + output_padding + 1 (conv_transpose2d); weight
/// [C_in, C_out / groups, kh, kw] and bias as LibTorch's default init (Conv2d's scheme, with
/// fan_in = weight.size(1) * kh * kw).
class ConvTranspose2dImpl : public Module {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, IntPair kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);
  void reset_parameters();
  /// output_size ({oh, ow}, or the whole [N, C, oh, ow]) replaces options.output_padding with
  /// the padding that gives it, as in LibTorch.
  Tensor forward(const Tensor& input,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  void pretty_print(std::ostream& os) const override;

  ConvTranspose2dOptions options;
  Tensor weight, bias;
};
GRADLAB_MODULE(ConvTranspose2d);

/// Max over each window.
class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : options(options) {}
  explicit MaxPool2dImpl(int64_t kernel_size) : options(IntPair(kernel_size)) {}
  Tensor forward(const Tensor& input);
  /// The output and the int64 index of each max within its H*W plane (F::max_pool2d_with_indices).
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  MaxPool2dOptions options;
};
GRADLAB_MODULE(MaxPool2d);

}  // namespace gradlab::nn
