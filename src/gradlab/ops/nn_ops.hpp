#pragma once
// Neural-network ops the nn layers are built from, as LibTorch's top-level functions (torch::conv2d,
// ...; nn::functional, in nn/functional.hpp, forwards to them):
// linear, unfold / fold (im2col and its adjoint), conv2d, conv_transpose2d, max_pool2d, dropout,
// feature_dropout, batch_norm, layer_norm. unfold, fold and max_pool2d are primitives; everything else is composed.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>

#include "gradlab/core/generator.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab {

/// A (height, width) pair that a single number expands to, like LibTorch's ExpandingArray<2>:
/// `3` means {3, 3}; `{3, 2}` means height 3, width 2.
struct IntPair {
  IntPair(int64_t v) : h(v), w(v) {}  // NOLINT: 3 reads as {3, 3}, as in LibTorch
  IntPair(int64_t a, int64_t b) : h(a), w(b) {}
  IntPair(std::initializer_list<int64_t> l);
  int64_t h, w;
  bool operator==(const IntPair& o) const { return h == o.h && w == o.w; }
  bool operator!=(const IntPair& o) const { return !(*this == o); }
  /// "[3, 3]" for messages and printouts.
  std::string str() const;
};

/// y = x @ weightᵀ + bias: x [..., in], weight [out, in], bias [out] (optional) -> [..., out].
/// One graph node (AddmmBackward0, or MmBackward0 without bias) and one GEMM.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, Site site = {});

/// grad where y > threshold, else 0: ReLU's backward (y = relu(x), threshold 0) as one kernel
/// (torch.threshold_backward). Differentiable in grad (a mask), not in y.
Tensor threshold_backward(const Tensor& grad, const Tensor& y, double threshold = 0.0,
                          Site site = {});

/// Sliding blocks of x [N, C, H, W] (or [C, H, W]) -> [N, C*kh*kw, L], L = oh*ow
/// (torch.nn.functional.unfold; zero padding).
Tensor unfold(const Tensor& input, IntPair kernel_size, IntPair dilation = 1, IntPair padding = 0,
              IntPair stride = 1, Site site = {});
/// Adds blocks [N, C*kh*kw, L] back into [N, C, H, W] with H, W = output_size (the adjoint of
/// unfold; torch.nn.functional.fold).
Tensor fold(const Tensor& input, IntPair output_size, IntPair kernel_size, IntPair dilation = 1,
            IntPair padding = 0, IntPair stride = 1, Site site = {});

/// 2-D convolution (cross-correlation, as in PyTorch): input [N, C, H, W] (or [C, H, W]),
/// weight [O, C, kh, kw], bias [O] -> [N, O, oh, ow]. Computed as weight @ unfold(input).
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntPair stride = 1, IntPair padding = 0, IntPair dilation = 1, Site site = {});

/// Transposed 2-D convolution (the adjoint of conv2d; torch::conv_transpose2d): input
/// [N, C_in, H, W] (or [C_in, H, W]), weight [C_in, C_out / groups, kh, kw], bias [C_out] ->
/// [N, C_out, oh, ow], oh = (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1.
/// Computed as fold(weightᵀ @ input) per group; output_padding must be smaller than stride or
/// dilation.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntPair stride = 1, IntPair padding = 0, IntPair output_padding = 0,
                        int64_t groups = 1, IntPair dilation = 1, Site site = {});

/// Max over each window: [N, C, H, W] -> [N, C, oh, ow]; stride defaults to the kernel size;
/// padding is -inf. The gradient goes to the first maximum of each window, as in PyTorch.
Tensor max_pool2d(const Tensor& input, IntPair kernel_size,
                  std::optional<IntPair> stride = std::nullopt, IntPair padding = 0,
                  IntPair dilation = 1, Site site = {});
/// Same, plus the int64 index of each max within its H*W plane.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntPair kernel_size,
                                                   std::optional<IntPair> stride = std::nullopt,
                                                   IntPair padding = 0, IntPair dilation = 1,
                                                   Site site = {});

/// Training: zeroes each element with probability p and scales the rest by 1/(1-p);
/// not training (or p = 0): returns input unchanged. The mask comes from `generator`
/// (the default generator when null).
Tensor dropout(const Tensor& input, double p = 0.5, bool train = true,
               Generator* generator = nullptr, Site site = {});

/// Channel-wise dropout (torch::feature_dropout, what Dropout2d / Dropout3d run): input
/// [N, C, *]; training zeroes whole channels x[n, c] with probability p and scales the rest by
/// 1/(1-p); not training (or p = 0): returns input unchanged. The mask comes from `generator`.
Tensor feature_dropout(const Tensor& input, double p = 0.5, bool train = true,
                       Generator* generator = nullptr, Site site = {});

/// Batch normalization over every dim but 1 (channels): input [N, C] or [N, C, L] or [N, C, H, W].
/// training: normalizes with the batch mean and biased variance and, when running stats are
/// given, updates them in place: running = (1 - momentum) * running + momentum * batch stat, with
/// the unbiased variance (as PyTorch). Not training: normalizes with the running stats.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5, Site site = {});

/// Layer normalization over the last dims (normalized_shape): biased variance, then
/// weight * x̂ + bias when given.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, Site site = {});

/// cross_entropy_loss on logits [N, C] as one fused node (what cross_entropy_loss runs for 2-D
/// logits); same arguments, results and errors as the composite cross_entropy_loss_reference.
Tensor cross_entropy_loss_fused(const Tensor& input, const Tensor& target, int64_t reduction = 1,
                                int64_t ignore_index = -100, double label_smoothing = 0.0,
                                Site site = {});

}  // namespace gradlab
