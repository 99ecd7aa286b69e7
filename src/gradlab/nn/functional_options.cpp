// nn::functional with LibTorch's option structs: the activations of nn/activation_options.hpp
// and Conv2dFuncOptions, MaxPool2dFuncOptions, BatchNormFuncOptions, ... (declarations:
// nn/functional.hpp). Each unpacks its options into the top-level op; what gradlab lacks (a
// ceil_mode max pool, a cumulative-average batch norm, ...) is a ValueError that says so.

#include <cmath>
#include <numbers>
#include <string>

#include "gradlab/nn/functional.hpp"
#include "gradlab/ops/internal/nn_ops.hpp"

namespace gradlab::nn::functional {

namespace {
int64_t as_int(Reduction r) { return static_cast<int64_t>(r); }  // at::Reduction's number
}  // namespace

// ---- activations -------------------------------------------------------------------------------
Tensor relu(const Tensor& input, const ReLUFuncOptions& o, Site site) {
  return o.inplace() ? gradlab::relu_(input, site) : gradlab::relu(input, site);
}
Tensor relu6(const Tensor& input, const ReLU6FuncOptions& o, Site site) {
  return o.inplace() ? gradlab::relu6_(input, site) : gradlab::relu6(input, site);
}
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& o, Site site) {
  return o.inplace() ? gradlab::leaky_relu_(input, o.negative_slope(), site)
                     : gradlab::leaky_relu(input, o.negative_slope(), site);
}
Tensor elu(const Tensor& input, const ELUFuncOptions& o, Site site) {
  return o.inplace() ? gradlab::elu_(input, o.alpha(), 1.0, 1.0, site)
                     : gradlab::elu(input, o.alpha(), 1.0, 1.0, site);
}
Tensor selu(const Tensor& input, const SELUFuncOptions& o, Site site) {
  return o.inplace() ? gradlab::selu_(input, site) : gradlab::selu(input, site);
}
Tensor celu(const Tensor& input, const CELUFuncOptions& o, Site site) {
  return o.inplace() ? gradlab::celu_(input, o.alpha(), site) : gradlab::celu(input, o.alpha(), site);
}
Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& o, Site site) {
  return o.inplace() ? gradlab::hardtanh_(input, o.min_val(), o.max_val(), site)
                     : gradlab::hardtanh(input, o.min_val(), o.max_val(), site);
}
Tensor threshold(const Tensor& input, const ThresholdFuncOptions& o, Site site) {
  return o.inplace() ? gradlab::threshold_(input, o.threshold(), o.value(), site)
                     : gradlab::threshold(input, o.threshold(), o.value(), site);
}
Tensor glu(const Tensor& input, const GLUFuncOptions& o, Site site) {
  return gradlab::glu(input, o.dim(), site);
}
// tanh form: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
Tensor gelu(const Tensor& input, const GELUFuncOptions& o, Site site) {
  if (o.approximate() == "none") return gradlab::gelu(input, site);
  GRADLAB_CHECK(o.approximate() == "tanh", ValueError, "gelu", "unknown approximation",
                "\"none\" or \"tanh\"", "\"" + o.approximate() + "\"");
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Tensor inner = mul(add(input, mul(pow(input, 3.0, site), 0.044715, site), site), k, site);
  return mul(mul(input, 0.5, site), add(gradlab::tanh(inner, site), 1.0, site), site);
}
Tensor logsigmoid(const Tensor& input, Site site) { return gradlab::log_sigmoid(input, site); }
Tensor softsign(const Tensor& input, Site site) {
  return div(input, add(abs(input, site), 1.0, site), site);
}
Tensor tanhshrink(const Tensor& input, Site site) { return sub(input, gradlab::tanh(input, site), site); }

namespace {
Tensor cast_if(const Tensor& x, const std::optional<ScalarType>& dtype, const Site& site) {
  return dtype ? x.to(*dtype, site) : x;
}
}  // namespace
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& o, Site site) {
  return gradlab::softmax(cast_if(input, o.dtype(), site), o.dim(), site);
}
Tensor softmin(const Tensor& input, const SoftminFuncOptions& o, Site site) {
  return gradlab::softmax(neg(cast_if(input, o.dtype(), site), site), o.dim(), site);
}
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& o, Site site) {
  return gradlab::log_softmax(cast_if(input, o.dtype(), site), o.dim(), site);
}

// ---- layers ------------------------------------------------------------------------------------
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& o, Site site) {
  return gradlab::conv1d(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups(),
                         site);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& o, Site site) {
  return gradlab::conv2d(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups(),
                         site);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const ConvTranspose2dFuncOptions& o, Site site) {
  return gradlab::conv_transpose2d(input, weight, o.bias(), o.stride(), o.padding(), o.output_padding(),
                                   o.groups(), o.dilation(), site);
}
namespace {
// gradlab's max pool ops have no ceil_mode: the options' flag is refused here, for every F:: form.
void refuse_ceil_mode(const char* op, const MaxPool2dFuncOptions& o) {
  GRADLAB_CHECK(!o.ceil_mode(), ValueError, op, "ceil_mode is not supported by gradlab",
                "ceil_mode(false)", "ceil_mode(true)",
                "pad the input on the bottom / right (F::pad, or padding) so the last window fits");
}
}  // namespace

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& o, Site site) {
  refuse_ceil_mode("max_pool2d", o);
  return gradlab::max_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), site);
}
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o, Site site) {
  GRADLAB_CHECK(o.momentum().has_value(), ValueError, "batch_norm",
                "momentum nullopt (a cumulative moving average) is not supported", "a momentum in [0, 1]",
                "nullopt");
  return gradlab::batch_norm(input, running_mean, running_var, o.weight(), o.bias(), o.training(),
                             *o.momentum(), o.eps(), site);
}
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o, Site site) {
  return gradlab::layer_norm(input, Shape(o.normalized_shape()), o.weight(), o.bias(), o.eps(), site);
}
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& o, Site site) {
  return gradlab::unfold(input, o.kernel_size(), o.dilation(), o.padding(), o.stride(), site);
}
Tensor fold(const Tensor& input, const FoldFuncOptions& o, Site site) {
  return gradlab::fold(input, o.output_size(), o.kernel_size(), o.dilation(), o.padding(), o.stride(), site);
}
// padding_idx: that row is read through a detached copy of weight, so no gradient reaches it
Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& o,
                 Site site) {
  GRADLAB_CHECK(!o.max_norm().has_value(), ValueError, "embedding",
                "max_norm (renormalizing the looked-up rows in place) is not supported", "no max_norm",
                std::to_string(*o.max_norm()));
  GRADLAB_CHECK(!o.scale_grad_by_freq() && !o.sparse(), ValueError, "embedding",
                "scale_grad_by_freq and sparse gradients are not supported", "both false",
                std::string(o.scale_grad_by_freq() ? "scale_grad_by_freq(true)" : "sparse(true)"));
  if (!o.padding_idx()) return gradlab::embedding(weight, indices, site);
  GRADLAB_CHECK(weight.defined() && weight.dim() == 2, ShapeError, "embedding", "weight must be [V, D]",
                "a 2-D weight", weight.defined() ? shape_str(weight.sizes()) : std::string("undefined"));
  const int64_t V = weight.size(0);
  int64_t p = *o.padding_idx();
  GRADLAB_CHECK(p >= -V && p < V, ValueError, "embedding", "padding_idx must be within num_embeddings",
                "in [" + std::to_string(-V) + ", " + std::to_string(V) + ")", std::to_string(p));
  if (p < 0) p += V;
  Tensor rows = arange(V, TensorOptions().dtype(kInt64).device(weight.device())).eq(p).unsqueeze(1);
  Tensor w = where(rows, weight.detach(), weight, site);
  return gradlab::embedding(w, indices, site);
}

// ---- losses ------------------------------------------------------------------------------------
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o, Site site) {
  return gradlab::mse_loss(input, target, as_int(o.reduction()), site);
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o, Site site) {
  return gradlab::l1_loss(input, target, as_int(o.reduction()), site);
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o,
                      std::optional<double> beta, Site site) {
  return gradlab::smooth_l1_loss(input, target, as_int(o.reduction()), beta.value_or(o.beta()), site);
}

// ---- distances, padding, huber / kl_div -------------------------------------------------------------
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& o, Site site) {
  Tensor n = clamp(norm(input, Scalar(o.p()), o.dim(), /*keepdim=*/true, site), o.eps(), std::nullopt, site);
  return div(input, n, site);
}
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o,
                         Site site) {
  auto unit = [&](const Tensor& x) {
    return div(x, clamp(norm(x, Scalar(2.0), o.dim(), /*keepdim=*/true, site), o.eps(), std::nullopt, site), site);
  };
  return sum(mul(unit(x1), unit(x2), site), Dims{o.dim()}, /*keepdim=*/false, site);
}
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o,
                         Site site) {
  return norm(add(sub(x1, x2, site), o.eps(), site), Scalar(o.p()), -1, o.keepdim(), site);
}
namespace {
// kReflect / kReplicate / kCircular, as LibTorch 1.13's _pad_enum: 2 amounts pad the last dim of a
// 2-D or 3-D input, 4 the last two dims of a 3-D or 4-D input; no fill value.
Tensor edge_pad(const Tensor& input, const PadFuncOptions& o, const Site& site) {
  const std::vector<int64_t>& p = o.pad();
  const char* mode = o.mode() == kReflect ? "reflect" : o.mode() == kReplicate ? "replicate" : "circular";
  GRADLAB_CHECK(o.value() == 0.0, ValueError, "pad", std::string("padding mode \"") + mode + "\" doesn't take a value",
                "value 0", std::to_string(o.value()));
  const auto n = static_cast<int64_t>(p.size());
  const bool one = n == 2 && (input.dim() == 2 || input.dim() == 3);
  const bool two = n == 4 && (input.dim() == 3 || input.dim() == 4);
  GRADLAB_CHECK(one || two, ValueError, "pad",
                std::string("mode ") + mode + " pads the last 1 or 2 dims only (gradlab has no 3-D form)",
                "2 amounts for a 2-D / 3-D input, 4 for a 3-D / 4-D input",
                std::to_string(n) + " amounts for a " + std::to_string(input.dim()) + "-D input");
  if (o.mode() == kCircular) return ops_detail::circular_pad(input, p, n / 2, site);
  if (o.mode() == kReflect) return one ? reflection_pad1d(input, p, site) : reflection_pad2d(input, p, site);
  return one ? replication_pad1d(input, p, site) : replication_pad2d(input, p, site);
}
}  // namespace

// pad = {left, right} of the last dim, then of the one before, ...; a negative amount crops
Tensor pad(const Tensor& input, const PadFuncOptions& o, Site site) {
  const std::vector<int64_t>& p = o.pad();
  GRADLAB_CHECK(input.defined(), ValueError, "pad", "input is undefined", "a tensor", "Tensor()");
  if (o.mode() != kConstant) return edge_pad(input, o, site);  // reflect / replicate / circular
  GRADLAB_CHECK(p.size() % 2 == 0 && static_cast<int64_t>(p.size()) / 2 <= input.dim(), ShapeError, "pad",
                "the padding must be pairs (left, right) for at most every dim",
                "an even length <= " + std::to_string(2 * input.dim()), std::to_string(p.size()) + " values");
  Tensor out = input;
  for (size_t i = 0; i < p.size() / 2; ++i) {
    const int64_t dim = input.dim() - 1 - static_cast<int64_t>(i);
    const int64_t left = p[2 * i], right = p[2 * i + 1];
    const int64_t size = out.size(dim);
    GRADLAB_CHECK(size + std::min<int64_t>(left, 0) + std::min<int64_t>(right, 0) >= 0, ShapeError, "pad",
                  "cropping more than the dim holds", "at most " + std::to_string(size) + " removed along dim " + std::to_string(dim),
                  std::to_string(-std::min<int64_t>(left, 0) - std::min<int64_t>(right, 0)));
    if (left < 0 || right < 0) {
      const int64_t start = std::max<int64_t>(-left, 0);
      out = narrow(out, dim, start, size - start - std::max<int64_t>(-right, 0), site);
    }
    TensorList parts;
    auto block = [&](int64_t n) {
      Shape s = out.sizes();
      s[static_cast<size_t>(dim)] = n;
      return full(s, o.value(), out.options());
    };
    if (left > 0) parts.push_back(block(left));
    parts.push_back(out);
    if (right > 0) parts.push_back(block(right));
    if (parts.size() > 1) out = cat(parts, dim, site);
  }
  return out;
}
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o, Site site) {
  return gradlab::huber_loss(input, target, as_int(o.reduction()), o.delta(), site);
}
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o, Site site) {
  if (!o.batch_mean_) return gradlab::kl_div(input, target, as_int(o.reduction_), o.log_target(), site);
  Tensor total = gradlab::kl_div(input, target, as_int(kSum), o.log_target(), site);
  return input.dim() == 0 ? total : div(total, static_cast<double>(input.size(0)), site);
}

// ---- 1-D pools, max_pool2d_with_indices, pixel shuffle, instance norm, shrinks (pool-pad batch) --
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& o,
                                                   Site site) {
  refuse_ceil_mode("max_pool2d_with_indices", o);
  return gradlab::max_pool2d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), site);
}
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& o, Site site) {
  return gradlab::max_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode(), site);
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& o,
                                                   Site site) {
  return gradlab::max_pool1d_with_indices(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                                          o.ceil_mode(), site);
}
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& o, Site site) {
  return gradlab::avg_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                             o.count_include_pad(), site);
}
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o, Site site) {
  return std::get<0>(gradlab::adaptive_max_pool2d(input, o.output_size(), site));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o,
                                                            Site site) {
  return gradlab::adaptive_max_pool2d(input, o.output_size(), site);
}
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o, Site site) {
  return std::get<0>(gradlab::adaptive_max_pool1d(input, o.output_size(), site));
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o,
                                                            Site site) {
  return gradlab::adaptive_max_pool1d(input, o.output_size(), site);
}
Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& o, Site site) {
  return gradlab::pixel_shuffle(input, o.upscale_factor(), site);
}
Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& o, Site site) {
  return gradlab::pixel_unshuffle(input, o.downscale_factor(), site);
}
// running stats refused by the op
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& o, Site site) {
  return gradlab::instance_norm(input, o.weight(), o.bias(), o.running_mean(), o.running_var(), o.use_input_stats(),
                                o.momentum(), o.eps(), false, site);
}
Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& o, Site site) {
  return gradlab::hardshrink(input, o.lambda(), site);
}
Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& o, Site site) {
  return gradlab::softshrink(input, o.lambda(), site);
}

}  // namespace gradlab::nn::functional
