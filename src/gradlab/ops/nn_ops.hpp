#pragma once
// Neural-network ops the nn layers are built from, as LibTorch's top-level functions (torch::conv2d,
// ...; nn::functional, in nn/functional.hpp, forwards to them):
// linear, unfold / fold (im2col and its adjoint), conv2d, conv_transpose2d, max_pool2d, dropout,
// feature_dropout, batch_norm, layer_norm, group_norm; and in ops/resample.cpp avg_pool2d,
// adaptive_avg_pool1d / 2d, upsample_nearest1d / 2d, upsample_linear1d, upsample_bilinear2d; in
// ops/rnn.cpp lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell.
// unfold, fold and max_pool2d are primitives; everything else is composed.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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

/// A pooling stride that defaults to the kernel size, as LibTorch's `IntArrayRef stride = {}`:
/// `{}` or std::nullopt (the kernel size), `2` ({2, 2}), or `{2, 1}`.
struct OptionalIntPair {
  OptionalIntPair() = default;
  OptionalIntPair(std::nullopt_t) {}                          // NOLINT
  OptionalIntPair(int64_t v) : value(IntPair(v)) {}           // NOLINT
  OptionalIntPair(int64_t h, int64_t w) : value(IntPair(h, w)) {}
  OptionalIntPair(IntPair v) : value(v) {}                    // NOLINT
  OptionalIntPair(std::optional<IntPair> v) : value(v) {}     // NOLINT
  std::optional<IntPair> value;
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

/// 2-D convolution (cross-correlation, as in PyTorch; torch::conv2d): input [N, C, H, W] (or
/// [C, H, W]), weight [O, C / groups, kh, kw], bias [O] -> [N, O, oh, ow]. groups splits the
/// channels into independent convolutions: output channel o sees input channels
/// [g Cg, (g + 1) Cg) of its group g = o / (O / groups) only (groups == C: depthwise). On the CPU
/// in float32 / float64 a fast path (oneDNN for float32 when the build found it, else im2col + one
/// GEMM per image and group), bfloat16 on AVX-512 BF16 through oneDNN, other half inputs widened
/// to float32 for the fast path; otherwise (CUDA included), or under set_conv_reference(true), the
/// readable reference weight_g @ unfold(input)_g, one batched matmul over the groups.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntPair stride = 1, IntPair padding = 0, IntPair dilation = 1, int64_t groups = 1,
              Site site = {});
/// 1-D convolution (torch::conv1d): input [N, C, L] (or [C, L]), weight [O, C / groups, k],
/// bias [O] -> [N, O, ol], ol = (L + 2 padding - dilation (k - 1) - 1) / stride + 1. Composed as
/// conv2d over [N, C, 1, L] with a 1 x k kernel (so its grad_fn is a squeeze's, not LibTorch's
/// ConvolutionBackward0).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1,
              Site site = {});

/// Transposed 2-D convolution (the adjoint of conv2d; torch::conv_transpose2d): input
/// [N, C_in, H, W] (or [C_in, H, W]), weight [C_in, C_out / groups, kh, kw], bias [C_out] ->
/// [N, C_out, oh, ow], oh = (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1.
/// Computed as fold(weightᵀ @ input) per group (the fast path on the CPU in float32 / float64 does
/// the same per image); output_padding must be smaller than stride or dilation.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntPair stride = 1, IntPair padding = 0, IntPair output_padding = 0,
                        int64_t groups = 1, IntPair dilation = 1, Site site = {});

/// Sends conv2d and conv_transpose2d to the readable reference (unfold + matmul + fold) instead of
/// the CPU fast path (oneDNN or im2col + GEMM). Starts on when the environment sets
/// GRADLAB_CONV_REFERENCE=1. Process-wide; the checks compare the paths through it. It also sends
/// max_pool2d's backward to scatter_add (the one-pass CPU kernel otherwise).
void set_conv_reference(bool on);
/// Whether conv2d / conv_transpose2d use the reference path (see set_conv_reference).
bool conv_reference();

/// Max over each window: [N, C, H, W] -> [N, C, oh, ow]; stride defaults to the kernel size;
/// padding is -inf. The gradient goes to the first maximum of each window, as in PyTorch.
Tensor max_pool2d(const Tensor& input, IntPair kernel_size, OptionalIntPair stride = {},
                  IntPair padding = 0,
                  IntPair dilation = 1, Site site = {});
/// Same, plus the int64 index of each max within its H*W plane.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntPair kernel_size,
                                                   OptionalIntPair stride = {},
                                                   IntPair padding = 0, IntPair dilation = 1,
                                                   Site site = {});

/// Mean over each window (torch::avg_pool2d): [N, C, H, W] (or [C, H, W]) -> [N, C, oh, ow],
/// oh = floor((H + 2 padding - kernel) / stride) + 1 (ceil with ceil_mode, while the last window
/// starts inside the input or left padding); stride defaults to the kernel size; padding (zeros)
/// at most kernel / 2. Divides by the window's size with its padding (count_include_pad), by its
/// input elements only, or by divisor_override.
Tensor avg_pool2d(const Tensor& input, IntPair kernel_size, OptionalIntPair stride = {},
                  IntPair padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt, Site site = {});
/// Mean over adaptive windows (torch::adaptive_avg_pool2d): output row i of oh averages input
/// rows [floor(i H / oh), ceil((i + 1) H / oh)), and likewise along W: [N, C, H, W] (or
/// [C, H, W]) -> [N, C, oh, ow].
Tensor adaptive_avg_pool2d(const Tensor& input, IntPair output_size, Site site = {});
/// The same along L: [N, C, L] (or [C, L]) -> [N, C, output_size].
Tensor adaptive_avg_pool1d(const Tensor& input, int64_t output_size, Site site = {});

/// Nearest-neighbour resize (torch::upsample_nearest2d, what interpolate's kNearest runs):
/// [N, C, H, W] (or [C, H, W]) -> [N, C, oh, ow], y[i] = x[min(floor(i * scale), H - 1)] per dim,
/// scale = 1 / scales_h when given, else H / oh. output_size {oh, ow}, or empty to take
/// floor(H * scales_h), floor(W * scales_w).
Tensor upsample_nearest2d(const Tensor& input, std::vector<int64_t> output_size,
                          std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt, Site site = {});
/// The same along L of [N, C, L] (or [C, L]).
Tensor upsample_nearest1d(const Tensor& input, std::vector<int64_t> output_size,
                          std::optional<double> scales = std::nullopt, Site site = {});
/// Bilinear resize (torch::upsample_bilinear2d): per dim, source position r = i (H - 1) / (oh - 1)
/// with align_corners, else max((i + 0.5) scale - 0.5, 0); y = (1 - λ) x[floor r] + λ x[floor r + 1]
/// (clamped at the edge), λ = r - floor r. Sizes as upsample_nearest2d.
Tensor upsample_bilinear2d(const Tensor& input, std::vector<int64_t> output_size,
                           bool align_corners, std::optional<double> scales_h = std::nullopt,
                           std::optional<double> scales_w = std::nullopt, Site site = {});
/// The same along L of [N, C, L] (or [C, L]) (torch::upsample_linear1d).
Tensor upsample_linear1d(const Tensor& input, std::vector<int64_t> output_size,
                         bool align_corners, std::optional<double> scales = std::nullopt,
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

/// Group normalization (torch::group_norm): x [N, C, *] split into num_groups groups of
/// C / num_groups channels; each (sample, group) normalized with its mean and biased variance,
/// then weight[c] * x̂ + bias[c] per channel when given.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, Site site = {});

/// One LSTM step (torch::lstm_cell): i, f, g, o = chunk(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh, 4);
/// c' = σ(f) c + σ(i) tanh(g); h' = σ(o) tanh(c'). input [N, I] (or [I]), hx = {h, c} each
/// [N, H], w_ih [4 H, I], w_hh [4 H, H], biases [4 H] (optional) -> (h', c').
std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, const TensorList& hx, const Tensor& w_ih,
                                     const Tensor& w_hh, const Tensor& b_ih = {},
                                     const Tensor& b_hh = {}, Site site = {});
/// One GRU step (torch::gru_cell): r, z, n_x = chunk(x W_ihᵀ + b_ih, 3), r_h, z_h, n_h =
/// chunk(h W_hhᵀ + b_hh, 3); r = σ(r_x + r_h), z = σ(z_x + z_h), n = tanh(n_x + r n_h);
/// h' = (1 - z) n + z h. Weights [3 H, I] and [3 H, H].
Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih = {}, const Tensor& b_hh = {}, Site site = {});
/// h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (torch::rnn_tanh_cell). Weights [H, I], [H, H].
Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = {}, const Tensor& b_hh = {}, Site site = {});
/// h' = relu(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (torch::rnn_relu_cell).
Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = {}, const Tensor& b_hh = {}, Site site = {});

namespace rnn_detail {
/// The recurrent cells.
enum class Cell { RnnTanh, RnnRelu, Lstm, Gru };
/// How many gate blocks of H rows the cell's weights have: 1, 4 (LSTM) or 3 (GRU).
int64_t gates_of(Cell cell);
/// One step from the input's gates gx = x W_ihᵀ + b_ih [N, G H] and the state h (and c for LSTM)
/// [N, H]: (h', c'; c' undefined but for LSTM). The one place the cell formulas are written: the
/// cell ops above and nn::RNN / LSTM / GRU (which compute gx for all steps at once) run it.
std::pair<Tensor, Tensor> step_from_gates(Cell cell, const Tensor& gx, const Tensor& h,
                                          const Tensor& c, const Tensor& w_hh, const Tensor& b_hh,
                                          const Site& site = {});
}  // namespace rnn_detail

/// cross_entropy_loss on logits [N, C] as one fused node (what cross_entropy_loss runs for 2-D
/// logits); same arguments, results and errors as the composite cross_entropy_loss_reference.
Tensor cross_entropy_loss_fused(const Tensor& input, const Tensor& target, int64_t reduction = 1,
                                int64_t ignore_index = -100, double label_smoothing = 0.0,
                                Site site = {});

// ---- 1-D pooling, pixel shuffle, reflection / replication padding (ops/pool_pad.cpp) ---------
// Composites: the 1-D pools are the 2-D ones on [N, C, 1, L]; adaptive max pooling is max(dim)
// over window taps, one dim at a time; instance_norm is group_norm with C groups; pixel_shuffle is
// reshape + permute;
// the pads are index_select with int64 source indices (its backward accumulates repeated taps).

/// Max over each window along L (torch::max_pool1d): [N, C, L] (or [C, L]) -> [N, C, oL],
/// oL = floor((L + 2 padding - dilation (k - 1) - 1) / stride) + 1; stride defaults to the kernel
/// size; padding is -inf, at most kernel / 2. ceil_mode true is refused (ValueError).
Tensor max_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false, Site site = {});
/// Same, plus the int64 index along L of each max.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, int64_t kernel_size,
                                                   std::optional<int64_t> stride = std::nullopt,
                                                   int64_t padding = 0, int64_t dilation = 1,
                                                   bool ceil_mode = false, Site site = {});
/// Mean over each window along L (torch::avg_pool1d): [N, C, L] (or [C, L]) -> [N, C, oL];
/// padding (zeros) at most kernel / 2, counted in the divisor with count_include_pad.
Tensor avg_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  Site site = {});

/// Max over adaptive windows (torch::adaptive_max_pool2d): output row i of oh takes input rows
/// [floor(i H / oh), ceil((i + 1) H / oh)), and likewise along W: [N, C, H, W] (or [C, H, W]) ->
/// (values [N, C, oh, ow], int64 index of each max within its H*W plane).
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntPair output_size, Site site = {});
/// The same along L of [N, C, L] (or [C, L]) (torch::adaptive_max_pool1d): (values, index along L).
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, int64_t output_size, Site site = {});

/// Instance normalization (torch::instance_norm): each (sample, channel) of x [N, C, *] normalized
/// over * with its mean and biased variance, then weight[c] x̂ + bias[c] when given (group_norm
/// with C groups). Running statistics are refused (ValueError): running_mean / running_var must be
/// undefined and use_input_stats true; momentum and cudnn_enabled are then unused.
Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool use_input_stats, double momentum, double eps,
                     bool cudnn_enabled, Site site = {});

/// [*, C r², H, W] -> [*, C, H r, W r] (torch::pixel_shuffle): y[c, h r + i, w r + j] =
/// x[c r² + i r + j, h, w].
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor, Site site = {});
/// The inverse (torch::pixel_unshuffle): [*, C, H r, W r] -> [*, C r², H, W].
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor, Site site = {});

/// Pads the last dim of [N, C, L] (or [C, L]) by padding {left, right} with its mirror image
/// without the edge (torch::reflection_pad1d): x[-i] = x[i]; each amount < L (negative crops).
Tensor reflection_pad1d(const Tensor& input, const std::vector<int64_t>& padding, Site site = {});
/// The same on the last two dims of [N, C, H, W] (or [C, H, W]), padding {left, right, top, bottom}.
Tensor reflection_pad2d(const Tensor& input, const std::vector<int64_t>& padding, Site site = {});
/// Pads the last dim by repeating its edge values (torch::replication_pad1d): x[-i] = x[0].
Tensor replication_pad1d(const Tensor& input, const std::vector<int64_t>& padding, Site site = {});
/// The same on the last two dims of [N, C, H, W] (or [C, H, W]) (torch::replication_pad2d).
Tensor replication_pad2d(const Tensor& input, const std::vector<int64_t>& padding, Site site = {});

}  // namespace gradlab
