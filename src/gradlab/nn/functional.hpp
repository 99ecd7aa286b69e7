#pragma once
// nn::functional, where a LibTorch user looks for it (torch/nn/functional.h): losses
// (cross_entropy, nll_loss, mse_loss, ...), activations, linear, conv2d, conv_transpose2d,
// max_pool2d, dropout (also 2d / 3d), batch / layer norm, with their option structs
// (CrossEntropyFuncOptions, ...); avg / adaptive pooling, interpolate and group_norm with the
// options of nn/resample_options.hpp.
//
//   namespace F = gradlab::nn::functional;
//   Tensor loss = F::cross_entropy(logits, target,
//                                  F::CrossEntropyFuncOptions().label_smoothing(0.1));
//
// Each function forwards to the op of LibTorch's top-level name (ops/ops.hpp, ops/nn_ops.hpp:
// cross_entropy -> gradlab::cross_entropy_loss, mse_loss -> gradlab::mse_loss with the int64
// reduction), as LibTorch's functional layer does; the op table tests those ops.

#include <cstdint>
#include <optional>
#include <vector>

#include "gradlab/core/generator.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/nn/activation_options.hpp"
#include "gradlab/nn/pool_options.hpp"
#include "gradlab/nn/pool_pad_options.hpp"
#include "gradlab/nn/resample_options.hpp"
#include "gradlab/ops/nn_ops.hpp"
#include "gradlab/ops/ops.hpp"
#include "gradlab/ops/reduction.hpp"

namespace gradlab::nn::functional {

/// Options of cross_entropy (LibTorch's CrossEntropyFuncOptions).
struct CrossEntropyFuncOptions {
  Tensor weight_;
  Reduction reduction_ = kMean;
  int64_t ignore_index_ = -100;
  double label_smoothing_ = 0.0;
  /// One weight per class [C]: loss_i = -w[t_i] logp[i, t_i]; the mean divides by Σ w[t_i].
  CrossEntropyFuncOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  CrossEntropyFuncOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  CrossEntropyFuncOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  CrossEntropyFuncOptions& label_smoothing(double s) { label_smoothing_ = s; return *this; }
};
/// Options of nll_loss (LibTorch's NLLLossFuncOptions).
struct NLLLossFuncOptions {
  Tensor weight_;
  Reduction reduction_ = kMean;
  int64_t ignore_index_ = -100;
  /// One weight per class [C], as CrossEntropyFuncOptions::weight.
  NLLLossFuncOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  NLLLossFuncOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  NLLLossFuncOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
};
/// Options of binary_cross_entropy (LibTorch's BinaryCrossEntropyFuncOptions).
struct BinaryCrossEntropyFuncOptions {
  Tensor weight_;
  Reduction reduction_ = kMean;
  /// Multiplies each element's loss; broadcast to the input's shape.
  BinaryCrossEntropyFuncOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  BinaryCrossEntropyFuncOptions& reduction(Reduction r) { reduction_ = r; return *this; }
};
/// Options of binary_cross_entropy_with_logits (LibTorch's BinaryCrossEntropyWithLogitsFuncOptions).
struct BinaryCrossEntropyWithLogitsFuncOptions {
  Tensor weight_, pos_weight_;
  Reduction reduction_ = kMean;
  /// Multiplies each element's loss; broadcast to the input's shape.
  BinaryCrossEntropyWithLogitsFuncOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  /// Weight of the positive term, e.g. one per class along the last dim: (1 - y) x +
  /// (1 + (p - 1) y) softplus(-x). p = #negatives / #positives balances a rare class.
  BinaryCrossEntropyWithLogitsFuncOptions& pos_weight(const Tensor& p) { pos_weight_ = p; return *this; }
  BinaryCrossEntropyWithLogitsFuncOptions& reduction(Reduction r) { reduction_ = r; return *this; }
};
/// Options of softplus (LibTorch's SoftplusFuncOptions).
struct SoftplusFuncOptions {
  double beta_ = 1.0;
  double threshold_ = 20.0;
  SoftplusFuncOptions& beta(double b) { beta_ = b; return *this; }
  SoftplusFuncOptions& threshold(double t) { threshold_ = t; return *this; }
};

/// Options of dropout2d / dropout3d (LibTorch's DropoutFuncOptions, of which Dropout2dFuncOptions
/// and Dropout3dFuncOptions are aliases) and of dropout's options form.
struct DropoutFuncOptions {
  double p_ = 0.5;
  bool training_ = true;
  bool inplace_ = false;
  Generator* generator_ = nullptr;
  DropoutFuncOptions& p(double v) { p_ = v; return *this; }
  DropoutFuncOptions& training(bool t) { training_ = t; return *this; }
  /// true is refused (gradlab has no in-place dropout): use the returned tensor.
  DropoutFuncOptions& inplace(bool i) { inplace_ = i; return *this; }
  /// Random stream of the mask (the default generator when null); not owned. gradlab only.
  DropoutFuncOptions& generator(Generator* g) { generator_ = g; return *this; }
};
using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;

// ---- losses ------------------------------------------------------------------------------------
/// Logits [N, C] (or [C]) and class indices [N] (int64) -> loss; label smoothing mixes the
/// one-hot target with the uniform distribution; targets equal to ignore_index are skipped.
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyFuncOptions& options = {}, Site site = {});
/// Log-probabilities [N, C] and class indices [N] -> -mean(logp[i, target[i]]) (weighted by
/// options.weight when given).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target,
                const NLLLossFuncOptions& options = {}, Site site = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean,
                Site site = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean,
               Site site = {});
/// Stable: max(x, 0) - x*y + log(1 + exp(-|x|)).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        Reduction reduction = kMean, Site site = {});
/// The same with weight / pos_weight (LibTorch's options form).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options,
                                        Site site = {});
/// Probabilities in [0, 1] and targets of the same shape -> -w (y log x + (1 - y) log(1 - x)),
/// each log clamped at -100 (torch::binary_cross_entropy).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {}, Site site = {});
/// 0.5 d² / beta where |d| < beta, else |d| - 0.5 beta (d = input - target).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean,
                      double beta = 1.0, Site site = {});

// ---- the same signature as the top-level op: the op itself ------------------------------------
using gradlab::adaptive_avg_pool1d;
using gradlab::adaptive_avg_pool2d;
using gradlab::avg_pool2d;
using gradlab::batch_norm;
using gradlab::conv1d;
using gradlab::conv2d;
using gradlab::conv_transpose2d;
using gradlab::dropout;
using gradlab::fold;
using gradlab::group_norm;
using gradlab::gelu;
using gradlab::layer_norm;
using gradlab::leaky_relu;
using gradlab::linear;
using gradlab::log_softmax;
using gradlab::max_pool2d;
using gradlab::relu;
using gradlab::sigmoid;
using gradlab::softmax;
using gradlab::tanh;
using gradlab::unfold;
using gradlab::silu;
using gradlab::mish;
using gradlab::prelu;

/// dropout with LibTorch's options form: F::dropout(x, F::DropoutFuncOptions().p(0.2)).
Tensor dropout(const Tensor& input, const DropoutFuncOptions& options, Site site = {});
/// Channel-wise dropout of [N, C, H, W] (or unbatched [C, H, W]): feature_dropout.
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& options = {}, Site site = {});
/// Channel-wise dropout of [N, C, D, H, W] (or unbatched [C, D, H, W]): feature_dropout.
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& options = {}, Site site = {});

/// avg_pool2d with LibTorch's options form: F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(2)).
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options, Site site = {});
/// adaptive_avg_pool2d with the options form: F::AdaptiveAvgPool2dFuncOptions({1, 1}).
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options,
                           Site site = {});
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options,
                           Site site = {});
/// group_norm with the options form: F::group_norm(x, F::GroupNormFuncOptions(2).eps(1e-6)).
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options, Site site = {});
/// Resizes [N, C, L] (kNearest, kLinear, kArea) or [N, C, H, W] (kNearest, kBilinear, kArea) to
/// options.size, or to floor(size * scale_factor) per spatial dim. Runs upsample_nearest1d / 2d,
/// upsample_linear1d, upsample_bilinear2d or adaptive_avg_pool1d / 2d (kArea), passing the
/// scale factors on unless recompute_scale_factor, as LibTorch.
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {},
                   Site site = {});

// ---- activations with LibTorch's option structs (nn/activation_options.hpp) --------------------
// inplace(true) writes the result into the input and returns it (torch::relu_, ...).
Tensor relu(const Tensor& input, const ReLUFuncOptions& options, Site site = {});
Tensor relu6(const Tensor& input, const ReLU6FuncOptions& options = {}, Site site = {});
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options, Site site = {});
Tensor elu(const Tensor& input, const ELUFuncOptions& options = {}, Site site = {});
Tensor selu(const Tensor& input, const SELUFuncOptions& options = {}, Site site = {});
Tensor celu(const Tensor& input, const CELUFuncOptions& options = {}, Site site = {});
Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& options = {}, Site site = {});
Tensor threshold(const Tensor& input, const ThresholdFuncOptions& options, Site site = {});
Tensor glu(const Tensor& input, const GLUFuncOptions& options = {}, Site site = {});
/// approximate "none": the exact gelu; "tanh": 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
Tensor gelu(const Tensor& input, const GELUFuncOptions& options, Site site = {});
/// log(sigmoid(x)) (torch::log_sigmoid).
Tensor logsigmoid(const Tensor& input, Site site = {});
/// x / (1 + |x|).
Tensor softsign(const Tensor& input, Site site = {});
/// x - tanh(x).
Tensor tanhshrink(const Tensor& input, Site site = {});
/// softmax(input.to(dtype), dim) (the dtype when given).
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options, Site site = {});
/// softmax(-input, dim).
Tensor softmin(const Tensor& input, const SoftminFuncOptions& options, Site site = {});
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options, Site site = {});

// ---- the layers' functions with LibTorch's option structs --------------------------------------
/// F::conv1d(x, w, F::Conv1dFuncOptions().bias(b).stride(2).padding(1).groups(2)).
struct Conv1dFuncOptions {
  GRADLAB_ARG(Tensor, bias) = Tensor();
  GRADLAB_ARG(int64_t, stride) = 1;
  GRADLAB_ARG(int64_t, padding) = 0;
  GRADLAB_ARG(int64_t, dilation) = 1;
  /// Input channels and filters split into `groups` independent convolutions (weight
  /// [O, C / groups, k]).
  GRADLAB_ARG(int64_t, groups) = 1;
};
/// gradlab::conv1d with the options' bias, stride, padding, dilation and groups.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {},
              Site site = {});
/// F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding(1).groups(2)).
struct Conv2dFuncOptions {
  GRADLAB_ARG(Tensor, bias) = Tensor();
  GRADLAB_ARG(IntPair, stride) = 1;
  GRADLAB_ARG(IntPair, padding) = 0;
  GRADLAB_ARG(IntPair, dilation) = 1;
  /// Input channels and filters split into `groups` independent convolutions (weight
  /// [O, C / groups, kh, kw]).
  GRADLAB_ARG(int64_t, groups) = 1;
};
/// gradlab::conv2d with the options' bias, stride, padding, dilation and groups.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {},
              Site site = {});
/// F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().stride(2).output_padding(1)).
struct ConvTranspose2dFuncOptions {
  GRADLAB_ARG(Tensor, bias) = Tensor();
  GRADLAB_ARG(IntPair, stride) = 1;
  GRADLAB_ARG(IntPair, padding) = 0;
  GRADLAB_ARG(IntPair, output_padding) = 0;
  GRADLAB_ARG(int64_t, groups) = 1;
  GRADLAB_ARG(IntPair, dilation) = 1;
};
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const ConvTranspose2dFuncOptions& options, Site site = {});
/// F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2)); stride defaults to the kernel size;
/// ceil_mode(true) is refused (ValueError): gradlab's max_pool2d has no last, partial window.
using MaxPool2dFuncOptions = MaxPool2dOptions;
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options, Site site = {});
/// F::batch_norm(x, running_mean, running_var, F::BatchNormFuncOptions().weight(w).training(true)).
struct BatchNormFuncOptions {
  GRADLAB_ARG(Tensor, weight) = Tensor();
  GRADLAB_ARG(Tensor, bias) = Tensor();
  GRADLAB_ARG(bool, training) = false;
  /// running = (1 - momentum) running + momentum batch (nullopt, the cumulative average, is refused).
  GRADLAB_ARG(std::optional<double>, momentum) = 0.1;
  GRADLAB_ARG(double, eps) = 1e-5;
};
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options, Site site = {});
/// F::layer_norm(x, F::LayerNormFuncOptions({4}).weight(w).bias(b).eps(1e-6)).
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape)  // NOLINT
      : normalized_shape_(std::move(normalized_shape)) {}
  GRADLAB_ARG(std::vector<int64_t>, normalized_shape);
  GRADLAB_ARG(Tensor, weight) = Tensor();
  GRADLAB_ARG(Tensor, bias) = Tensor();
  GRADLAB_ARG(double, eps) = 1e-5;
};
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options, Site site = {});
/// F::unfold(x, F::UnfoldFuncOptions({2, 2}).stride(2)).
struct UnfoldFuncOptions {
  UnfoldFuncOptions(IntPair kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  GRADLAB_ARG(IntPair, kernel_size);
  GRADLAB_ARG(IntPair, dilation) = 1;
  GRADLAB_ARG(IntPair, padding) = 0;
  GRADLAB_ARG(IntPair, stride) = 1;
};
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options, Site site = {});
/// F::fold(x, F::FoldFuncOptions({4, 4}, {2, 2}).stride(2)).
struct FoldFuncOptions {
  FoldFuncOptions(IntPair output_size, IntPair kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  GRADLAB_ARG(IntPair, output_size);
  GRADLAB_ARG(IntPair, kernel_size);
  GRADLAB_ARG(IntPair, dilation) = 1;
  GRADLAB_ARG(IntPair, padding) = 0;
  GRADLAB_ARG(IntPair, stride) = 1;
};
Tensor fold(const Tensor& input, const FoldFuncOptions& options, Site site = {});
/// F::embedding(indices, weight, F::EmbeddingFuncOptions().padding_idx(0)): the padding row is
/// looked up but gets no gradient. max_norm, scale_grad_by_freq and sparse are refused.
struct EmbeddingFuncOptions {
  GRADLAB_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  GRADLAB_ARG(std::optional<double>, max_norm) = std::nullopt;
  GRADLAB_ARG(double, norm_type) = 2.0;
  GRADLAB_ARG(bool, scale_grad_by_freq) = false;
  GRADLAB_ARG(bool, sparse) = false;
};
Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& options,
                 Site site = {});

// ---- losses with LibTorch's option structs ------------------------------------------------------
/// F::MSELossFuncOptions(torch::kSum) or F::MSELossFuncOptions().reduction(torch::kSum).
struct MSELossFuncOptions {
  MSELossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRADLAB_ARG(Reduction, reduction);
};
struct L1LossFuncOptions {
  L1LossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRADLAB_ARG(Reduction, reduction);
};
struct SmoothL1LossFuncOptions {
  SmoothL1LossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRADLAB_ARG(Reduction, reduction);
  GRADLAB_ARG(double, beta) = 1.0;
};
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options,
                Site site = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options,
               Site site = {});
/// beta is options.beta(), or the argument when one is passed (LibTorch 1.13's signature, where
/// the argument alone counts: it ignores options.beta(); later LibTorch reads options.beta()).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const SmoothL1LossFuncOptions& options, std::optional<double> beta = std::nullopt,
                      Site site = {});

// ---- distances, padding, one-hot, huber / kl_div (LibTorch's option structs) -------------------
/// F::normalize(x, F::NormalizeFuncOptions().p(2).dim(1).eps(1e-12)): x / max(‖x‖_p along dim, eps).
struct NormalizeFuncOptions {
  GRADLAB_ARG(double, p) = 2.0;
  GRADLAB_ARG(int64_t, dim) = 1;
  GRADLAB_ARG(double, eps) = 1e-12;
};
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options = {}, Site site = {});
/// F::cosine_similarity(a, b, F::CosineSimilarityFuncOptions().dim(1).eps(1e-8)):
/// Σ (a / max(‖a‖, eps)) (b / max(‖b‖, eps)) along dim (a and b broadcast).
struct CosineSimilarityFuncOptions {
  GRADLAB_ARG(int64_t, dim) = 1;
  GRADLAB_ARG(double, eps) = 1e-8;
};
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2,
                         const CosineSimilarityFuncOptions& options = {}, Site site = {});
/// F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().p(2).eps(1e-6)): ‖a - b + eps‖_p
/// along the last dim.
struct PairwiseDistanceFuncOptions {
  GRADLAB_ARG(double, p) = 2.0;
  GRADLAB_ARG(double, eps) = 1e-6;
  GRADLAB_ARG(bool, keepdim) = false;
};
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2,
                         const PairwiseDistanceFuncOptions& options = {}, Site site = {});
/// F::pad(x, F::PadFuncOptions({left, right, top, bottom, ...}).value(v)): pairs from the last dim
/// backwards; a negative amount crops (kConstant). kReflect / kReplicate / kCircular pad the last
/// 1 or 2 dims of a 2-3-D or 3-4-D input (2 or 4 amounts), as LibTorch's reflection_pad1d / 2d,
/// replication_pad1d / 2d and circular pad.
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  GRADLAB_ARG(std::vector<int64_t>, pad);
  GRADLAB_ARG(PadMode, mode) = kConstant;
  GRADLAB_ARG(double, value) = 0.0;
};
Tensor pad(const Tensor& input, const PadFuncOptions& options, Site site = {});
using gradlab::one_hot;
/// F::huber_loss(x, y, F::HuberLossFuncOptions().reduction(torch::kSum).delta(0.5)).
struct HuberLossFuncOptions {
  HuberLossFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  GRADLAB_ARG(Reduction, reduction);
  GRADLAB_ARG(double, delta) = 1.0;
};
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {},
                  Site site = {});
/// F::kl_div(logq, p, F::KLDivFuncOptions(torch::kBatchMean).log_target(false)); the reduction is
/// kNone, kMean (over every element), kSum or kBatchMean (the sum / the batch size).
struct KLDivFuncOptions {
  KLDivFuncOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  KLDivFuncOptions(BatchMeanTag) : batch_mean_(true) {}                     // NOLINT
  KLDivFuncOptions& reduction(Reduction r) {
    reduction_ = r;
    batch_mean_ = false;
    return *this;
  }
  KLDivFuncOptions& reduction(BatchMeanTag) {
    batch_mean_ = true;
    return *this;
  }
  Reduction reduction_ = kMean;
  bool batch_mean_ = false;
  GRADLAB_ARG(bool, log_target) = false;
};
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {},
              Site site = {});

// ---- a signature of their own ------------------------------------------------------------------
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& options = {}, Site site = {});
/// Rows of weight [V, D] picked by int64 indices (LibTorch's argument order: indices first).
Tensor embedding(const Tensor& indices, const Tensor& weight, Site site = {});

// ---- 1-D pools, max_pool2d_with_indices, pixel shuffle, instance norm (nn/pool_pad_options.hpp) --
/// max_pool2d plus the int64 index of each max within its H*W plane (LibTorch's F:: form).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options,
                                                   Site site = {});
using gradlab::max_pool2d_with_indices;
/// F::max_pool1d(x, F::MaxPool1dFuncOptions(3).stride(2)): [N, C, L] (or [C, L]); ceil_mode(true)
/// is refused (ValueError).
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options, Site site = {});
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options,
                                                   Site site = {});
/// F::avg_pool1d(x, F::AvgPool1dFuncOptions(3).stride(2).padding(1)) (divisor_override ignored, as
/// in LibTorch).
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options, Site site = {});
/// F::adaptive_max_pool2d(x, F::AdaptiveMaxPool2dFuncOptions({1, 1})): the values;
/// F::adaptive_max_pool2d_with_indices: (values, int64 index within each H*W plane).
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options, Site site = {});
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options,
                                                            Site site = {});
/// The same along L of [N, C, L] (or [C, L]).
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options, Site site = {});
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options,
                                                            Site site = {});
using gradlab::max_pool1d;
using gradlab::max_pool1d_with_indices;
using gradlab::avg_pool1d;
/// F::pixel_shuffle(x, F::PixelShuffleFuncOptions(2)): [*, C r², H, W] -> [*, C, H r, W r].
Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options, Site site = {});
/// F::pixel_unshuffle(x, F::PixelUnshuffleFuncOptions(2)): [*, C, H r, W r] -> [*, C r², H, W].
Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options, Site site = {});
/// F::instance_norm(x [N, C, *], F::InstanceNormFuncOptions()): each (sample, channel) normalized
/// over its own * with the biased variance, then weight[c] x̂ + bias[c] when given (group_norm with
/// C groups). Running stats (running_mean / running_var given, or use_input_stats(false)) are
/// refused (ValueError).
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options = {}, Site site = {});
/// |x| > lambda ? x : 0: F::hardshrink(x, F::HardshrinkFuncOptions().lambda(0.3)).
Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options = {}, Site site = {});
/// x -+ lambda outside [-lambda, lambda], else 0: F::softshrink(x, F::SoftshrinkFuncOptions(0.3)).
Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options = {}, Site site = {});

}  // namespace gradlab::nn::functional
