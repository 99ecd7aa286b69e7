#pragma once
// The public ops, as free functions mirroring LibTorch (torch::add, torch::matmul, ...).
// Every op takes a defaulted `Site site = {}` last: it records the caller's line for diagnostics.
// Binary ops broadcast like PyTorch (through `expand`, whose backward is `sum_to`) and promote
// dtypes like PyTorch (float32 + float64 -> float64; a plain number does not widen a tensor).

#include <optional>
#include <tuple>
#include <type_traits>

#include "gradlab/core/factories.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/ops/reduction.hpp"

namespace gradlab {

// ---- elementwise ---------------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, Site site = {});
Tensor add(const Tensor& a, const Scalar& b, Site site = {});
Tensor sub(const Tensor& a, const Tensor& b, Site site = {});
Tensor sub(const Tensor& a, const Scalar& b, Site site = {});
/// torch::add(a, b, alpha) = a + alpha * b; torch::sub(a, b, alpha) = a - alpha * b.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha, Site site = {});
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha, Site site = {});
Tensor rsub(const Tensor& a, const Scalar& b, Site site = {});  ///< b - a
Tensor mul(const Tensor& a, const Tensor& b, Site site = {});
Tensor mul(const Tensor& a, const Scalar& b, Site site = {});
/// True division: integer inputs give float32, as in PyTorch.
Tensor div(const Tensor& a, const Tensor& b, Site site = {});
Tensor div(const Tensor& a, const Scalar& b, Site site = {});
Tensor rdiv(const Tensor& a, const Scalar& b, Site site = {});  ///< b / a
Tensor neg(const Tensor& x, Site site = {});
Tensor pow(const Tensor& x, const Scalar& exponent, Site site = {});
Tensor pow(const Tensor& x, const Tensor& exponent, Site site = {});
Tensor exp(const Tensor& x, Site site = {});
Tensor log(const Tensor& x, Site site = {});
Tensor sqrt(const Tensor& x, Site site = {});
Tensor abs(const Tensor& x, Site site = {});
Tensor sin(const Tensor& x, Site site = {});
Tensor cos(const Tensor& x, Site site = {});
Tensor tanh(const Tensor& x, Site site = {});
Tensor sigmoid(const Tensor& x, Site site = {});
Tensor erf(const Tensor& x, Site site = {});
Tensor relu(const Tensor& x, Site site = {});
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01, Site site = {});
/// exp(x) - 1, exact near 0 (torch::expm1).
Tensor expm1(const Tensor& x, Site site = {});
/// log(exp(a) + exp(b)) without overflow, broadcast (torch::logaddexp).
Tensor logaddexp(const Tensor& a, const Tensor& b, Site site = {});
/// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as torch::softplus).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0, Site site = {});
/// Exact GELU: x * Φ(x) = 0.5 x (1 + erf(x / √2)).
Tensor gelu(const Tensor& x, Site site = {});
/// Gelu's gradient in one pass: grad * (Φ(self) + self φ(self)), broadcast (torch's gelu_backward,
/// approximate "none"); differentiable in both.
Tensor gelu_backward(const Tensor& grad, const Tensor& self, Site site = {});
/// -1, 0 or 1 (no gradient flows through it).
Tensor sign(const Tensor& x);

// ---- more activations (LibTorch's top-level names), composed in ops/activation.cpp -------------
// Each is one expression of the primitives above, so its gradient comes from theirs (grad_fn
// names are the last primitive's, not LibTorch's EluBackward0, ...). The in-place forms (relu_,
// ...) run as every `name_` op (ops/inplace.cpp): x = f(x), returned, recorded as f's node;
// refused on a leaf that requires grad.

/// scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1)) (torch::elu).
Tensor elu(const Tensor& x, double alpha = 1.0, double scale = 1.0, double input_scale = 1.0, Site site = {});
/// elu with alpha = 1.6732632423543772, scale = 1.0507009873554805 (torch::selu).
Tensor selu(const Tensor& x, Site site = {});
/// max(0, x) + min(0, alpha (exp(x / alpha) - 1)) = elu(x, alpha, 1, 1 / alpha); alpha != 0.
Tensor celu(const Tensor& x, double alpha = 1.0, Site site = {});
/// x * sigmoid(x) (SiLU, "swish").
Tensor silu(const Tensor& x, Site site = {});
/// x * tanh(softplus(x)).
Tensor mish(const Tensor& x, Site site = {});
/// clamp(x, min_val, max_val); gradient 1 strictly inside, 0 outside.
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0, Site site = {});
/// min(max(x, 0), 6) = hardtanh(x, 0, 6).
Tensor relu6(const Tensor& x, Site site = {});
/// log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), no overflow for any x.
Tensor log_sigmoid(const Tensor& x, Site site = {});
/// x * relu6(x + 3) / 6.
Tensor hardswish(const Tensor& x, Site site = {});
/// relu6(x + 3) / 6.
Tensor hardsigmoid(const Tensor& x, Site site = {});
/// |x| > lambd ? x : 0 (torch::hardshrink).
Tensor hardshrink(const Tensor& x, double lambd = 0.5, Site site = {});
/// x > lambd ? x - lambd : x < -lambd ? x + lambd : 0 (torch::softshrink; lambd >= 0).
Tensor softshrink(const Tensor& x, double lambd = 0.5, Site site = {});
/// a * sigmoid(b), where a, b are the two halves of x along dim (its size must be even).
Tensor glu(const Tensor& x, int64_t dim = -1, Site site = {});
/// x > threshold ? x : value.
Tensor threshold(const Tensor& x, double threshold, double value, Site site = {});
/// x > 0 ? x : w * x; weight has 1 element or one per channel (dim 1 of x, which needs 2+ dims).
Tensor prelu(const Tensor& x, const Tensor& weight, Site site = {});
/// In-place forms: x = f(x), returned (torch::relu_, ...).
Tensor relu_(const Tensor& x, Site site = {});
Tensor leaky_relu_(const Tensor& x, double negative_slope = 0.01, Site site = {});
Tensor elu_(const Tensor& x, double alpha = 1.0, double scale = 1.0, double input_scale = 1.0, Site site = {});
Tensor selu_(const Tensor& x, Site site = {});
Tensor celu_(const Tensor& x, double alpha = 1.0, Site site = {});
Tensor hardtanh_(const Tensor& x, double min_val = -1.0, double max_val = 1.0, Site site = {});
Tensor relu6_(const Tensor& x, Site site = {});
Tensor threshold_(const Tensor& x, double threshold, double value, Site site = {});
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt, Site site = {});
Tensor maximum(const Tensor& a, const Tensor& b, Site site = {});
Tensor minimum(const Tensor& a, const Tensor& b, Site site = {});
/// torch::max(a, b) / torch::min(a, b): maximum / minimum.
Tensor max(const Tensor& a, const Tensor& b, Site site = {});
Tensor min(const Tensor& a, const Tensor& b, Site site = {});
/// cond ? a : b, broadcasting all three.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Site site = {});
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, Site site = {});
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, Site site = {});
/// x with `value` where mask is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value, Site site = {});

// ---- comparisons and logic (bool results, no gradient) --------------------------------------
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);
Tensor isfinite(const Tensor& x);
Tensor isnan(const Tensor& x);
/// True when both have the same shape and every |a - b| <= atol + rtol * |b| (NaN never close).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
/// Same shape and identical values (bit-for-bit for floats, except NaN == NaN is false).
bool equal(const Tensor& a, const Tensor& b);

// ---- reductions ----------------------------------------------------------------------------
Tensor sum(const Tensor& x, Site site = {});
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false, Site site = {});
Tensor mean(const Tensor& x, Site site = {});
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false, Site site = {});
/// One dim, as LibTorch's x.sum(1) (negative dims count from the end).
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false, Site site = {});
/// Sum of all elements computed in `dtype` (LibTorch's x.sum(kFloat64)).
Tensor sum(const Tensor& x, ScalarType dtype, Site site = {});
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false, Site site = {});
/// Largest element (ties share the gradient equally, as in PyTorch).
Tensor max(const Tensor& x, Site site = {});
/// (values, indices) along one dim.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false, Site site = {});
Tensor min(const Tensor& x, Site site = {});
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false, Site site = {});
/// Max over several dims (ties share the gradient).
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false, Site site = {});
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false, Site site = {});
/// Index of the largest element (flattened when dim is not given); int64.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// Variance with Bessel's correction by default (correction = 1); empty dims = all.
Tensor var(const Tensor& x, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false, Site site = {});
Tensor std(const Tensor& x, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false, Site site = {});
/// LibTorch's var(unbiased) / var(dim, unbiased, keepdim): unbiased = correction 1, else 0.
/// NOTE: templates, so that a braced dim list (var(x, {1}), var(x, {0}, correction)) still picks
/// the Dims overload: a plain `bool` overload would take {1} as unbiased = true, and a plain
/// int64 one would make var(x, {0}, 1) ambiguous. The bool one keeps var(x, false) from
/// reading as "dim 0".
template <class B, std::enable_if_t<std::is_same<B, bool>::value, int> = 0>
Tensor var(const Tensor& x, B unbiased, Site site = {}) {
  return var(x, Dims{}, unbiased ? 1 : 0, false, site);
}
template <class B, std::enable_if_t<std::is_same<B, bool>::value, int> = 0>
Tensor std(const Tensor& x, B unbiased, Site site = {}) {
  return std(x, Dims{}, unbiased ? 1 : 0, false, site);
}
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
Tensor var(const Tensor& x, I dim, bool unbiased = true, bool keepdim = false, Site site = {}) {
  return var(x, Dims{static_cast<int64_t>(dim)}, unbiased ? 1 : 0, keepdim, site);
}
template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
Tensor std(const Tensor& x, I dim, bool unbiased = true, bool keepdim = false, Site site = {}) {
  return std(x, Dims{static_cast<int64_t>(dim)}, unbiased ? 1 : 0, keepdim, site);
}
/// log Σ exp(x), computed stably (max subtracted first).
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false, Site site = {});
Tensor logsumexp(const Tensor& x, int64_t dim, bool keepdim = false, Site site = {});
/// Running sum along dim: y_i = x_0 + ... + x_i (integers and bool in int64 unless dtype says).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt, Site site = {});
/// p-norm over all elements (p = 2 by default).
Tensor norm(const Tensor& x, double p = 2.0, Site site = {});
/// p-norm over `dims` (LibTorch's x.norm(2, 1)).
Tensor norm(const Tensor& x, const Scalar& p, const Dims& dims, bool keepdim = false, Site site = {});
Tensor norm(const Tensor& x, const Scalar& p, int64_t dim, bool keepdim = false, Site site = {});
/// True where every / some element is nonzero (bool; over all elements, or along one dim).
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- linear algebra ------------------------------------------------------------------------
/// torch.matmul: 1-D dot, 2-D matrix product, batched with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b, Site site = {});
/// 2-D only.
Tensor mm(const Tensor& a, const Tensor& b, Site site = {});
/// 3-D only, equal batch sizes.
Tensor bmm(const Tensor& a, const Tensor& b, Site site = {});

// ---- shapes (views share storage) -----------------------------------------------------------
Tensor reshape(const Tensor& x, const Shape& shape, Site site = {});
/// Like reshape but never copies: an error when the strides do not allow a view.
Tensor view(const Tensor& x, const Shape& shape, Site site = {});
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1, Site site = {});
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1, Site site = {});
Tensor permute(const Tensor& x, const Dims& dims, Site site = {});
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1, Site site = {});
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Site site = {});
Tensor select(const Tensor& x, int64_t dim, int64_t index, Site site = {});
Tensor expand(const Tensor& x, const Shape& shape, Site site = {});
Tensor squeeze(const Tensor& x, std::optional<int64_t> dim = std::nullopt, Site site = {});
Tensor unsqueeze(const Tensor& x, int64_t dim, Site site = {});
/// Sums x down to `shape` (the inverse of broadcasting to x's shape).
Tensor sum_to(const Tensor& x, const Shape& shape, Site site = {});
Tensor cat(const TensorList& tensors, int64_t dim = 0, Site site = {});
Tensor stack(const TensorList& tensors, int64_t dim = 0, Site site = {});
/// x tiled `repeats` times per dim (Tensor::repeat); repeats.size() >= x.dim(), extra leading
/// counts add dims: repeat([2, 3], {2, 1, 1}) has shape [2, 2, 3].
Tensor repeat(const Tensor& x, const Shape& repeats, Site site = {});
/// `chunks` views along dim of ceil(n / chunks) each (the last smaller; fewer when n is small).
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim = 0, Site site = {});
/// Views of `split_size` along dim (the last may be smaller).
TensorList split(const Tensor& x, int64_t split_size, int64_t dim = 0, Site site = {});
Tensor clone(const Tensor& x, Site site = {});
Tensor contiguous(const Tensor& x, Site site = {});

// ---- indexing ------------------------------------------------------------------------------
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Site site = {});
/// out[i][j] = x[i][index[i][j]] (dim 1); index has x's rank.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Site site = {});
/// out = self; out[i][index[i][j]] += src[i][j] (dim 1).
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Site site = {});
/// out = self; out[index[i]] += src[i] along dim.
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Site site = {});
/// Rows of `weight` [V, D] picked by int64 `indices` of any shape -> indices.shape + [D].
Tensor embedding(const Tensor& weight, const Tensor& indices, Site site = {});

// ---- softmax family ------------------------------------------------------------------------
Tensor softmax(const Tensor& x, int64_t dim, Site site = {});
Tensor log_softmax(const Tensor& x, int64_t dim, Site site = {});


// ---- losses as LibTorch's top-level functions (torch::mse_loss, ...) ---------------------------
// `reduction` is LibTorch's int64 at::Reduction: 0 none, 1 mean (default), 2 sum (kMean / kSum
// convert to it). binary_cross_entropy takes a `weight`; the others' class `weight` /
// `pos_weight` tensors are not supported: passing a defined one throws.
// nn::functional (nn/functional.hpp) has the same losses with option structs.

/// Logits [N, C] (or [C] with a 0-d target) and class indices [N] (int64) -> loss (as
/// torch::cross_entropy_loss); label smoothing mixes the one-hot target with the uniform
/// distribution; targets equal to ignore_index are skipped. [N, C] logits run as one fused node.
Tensor cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                          int64_t reduction = 1, int64_t ignore_index = -100,
                          double label_smoothing = 0.0, Site site = {});
/// The composite cross_entropy_loss (log_softmax, then nll with smoothing and masks), [N, C]
/// logits only: the oracle of the fused node (nn_ops.hpp: cross_entropy_loss_fused). gradlab only.
Tensor cross_entropy_loss_reference(const Tensor& input, const Tensor& target,
                                    int64_t reduction = 1, int64_t ignore_index = -100,
                                    double label_smoothing = 0.0, Site site = {});
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                int64_t reduction = 1, int64_t ignore_index = -100, Site site = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, int64_t reduction = 1, Site site = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, int64_t reduction = 1, Site site = {});
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {}, const Tensor& pos_weight = {},
                                        int64_t reduction = 1, Site site = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, int64_t reduction = 1,
                      double beta = 1.0, Site site = {});
/// -weight * (target * log(self) + (1 - target) * log(1 - self)), each log clamped at -100 (as
/// torch::binary_cross_entropy); self holds probabilities in [0, 1] (a value outside throws);
/// target has self's shape; weight (optional) broadcasts to it. Mean divides by the element count.
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight = {},
                            int64_t reduction = 1, Site site = {});
/// 0.5 d² where |d| < delta, else delta (|d| - 0.5 delta), d = input - target (torch::huber_loss;
/// delta * smooth_l1_loss with beta = delta); delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, int64_t reduction = 1, double delta = 1.0,
                  Site site = {});
/// KL divergence with input = log q: target (log target - input), 0 where target is 0; with
/// log_target, target holds log p: exp(target) (target - input) (torch::kl_div). The mean is over
/// every element; nn::functional's kBatchMean divides the sum by the batch size instead.
Tensor kl_div(const Tensor& input, const Tensor& target, int64_t reduction = 1, bool log_target = false,
              Site site = {});
/// int64 class indices [...] -> int64 [..., num_classes] with a 1 at each index (torch::one_hot);
/// num_classes -1 takes max + 1. No gradient (an integer result).
Tensor one_hot(const Tensor& self, int64_t num_classes = -1);

}  // namespace gradlab
