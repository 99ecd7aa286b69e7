#pragma once
// How a loss reduces its per-element values: LibTorch's reduction argument. The enum lives here,
// below nn/, because the fused cross-entropy op struct (ops/internal/nn_ops.hpp) stores one; the
// losses that take it are declared in nn/functional.hpp (nn::functional::mse_loss, ...) and, with
// LibTorch's int64 form, in ops/ops.hpp (gradlab::mse_loss(input, target, 1), ...).

#include <cstdint>

namespace gradlab::nn::functional {

namespace reduction_detail {
/// The values are LibTorch's int64 at::Reduction: 0 none, 1 mean, 2 sum. An unscoped enum (in a
/// namespace of its own, so None / Mean / Sum do not leak) as LibTorch's at::Reduction::Reduction,
/// so `Reduction::Sum` and `kSum` also convert to the int64 `reduction` argument of the top-level
/// losses: gradlab::mse_loss(x, y, kSum).
enum Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
}  // namespace reduction_detail
using Reduction = reduction_detail::Reduction;
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
/// kl_div's extra reduction (LibTorch's torch::kBatchMean): the sum divided by the batch size
/// (dim 0), the true KL divergence per sample. Only nn::functional::kl_div and nn::KLDivLoss take it.
struct BatchMeanTag {};
inline constexpr BatchMeanTag kBatchMean{};

}  // namespace gradlab::nn::functional
