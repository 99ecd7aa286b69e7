#pragma once
// Loss modules, as torch::nn::CrossEntropyLoss & co. Each forwards to the function of the same
// name in nn::functional (nn/functional.hpp) with its options.

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"
#include "gradlab/nn/functional.hpp"

namespace gradlab {
/// Loss reductions at namespace level, as torch::kMean.
using nn::functional::kMean;
using nn::functional::kNone;
using nn::functional::kSum;
using nn::functional::kBatchMean;
using nn::functional::Reduction;
}  // namespace gradlab

namespace gradlab::nn {

/// Options of nn::CrossEntropyLoss.
struct CrossEntropyLossOptions {
  /// One weight per class [C] (registered as the buffer "weight"): loss_i = -w[t_i] logp[i, t_i],
  /// and the mean divides by Σ w[t_i].
  GRADLAB_ARG(Tensor, weight) = {};
  GRADLAB_ARG(Reduction, reduction) = kMean;
  /// Targets equal to this index contribute nothing (and are not counted by the mean).
  GRADLAB_ARG(int64_t, ignore_index) = -100;
  /// Mixes the one-hot target with the uniform distribution: (1 - ε) one_hot + ε / C.
  GRADLAB_ARG(double, label_smoothing) = 0.0;
};

/// Logits [N, C] and class indices [N] -> -log softmax(x)[target], reduced.
class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  CrossEntropyLossOptions options;
  /// options.weight, registered as the buffer "weight" when defined (as in LibTorch).
  Tensor weight;
};
GRADLAB_MODULE(CrossEntropyLoss);

/// Options of nn::NLLLoss.
struct NLLLossOptions {
  /// One weight per class [C], as CrossEntropyLossOptions::weight.
  GRADLAB_ARG(Tensor, weight) = {};
  GRADLAB_ARG(Reduction, reduction) = kMean;
  GRADLAB_ARG(int64_t, ignore_index) = -100;
};

/// Log-probabilities [N, C] and class indices [N] -> -logp[target], reduced.
class NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  NLLLossOptions options;
  /// options.weight, registered as the buffer "weight" when defined.
  Tensor weight;
};
GRADLAB_MODULE(NLLLoss);

/// Options of the elementwise losses (MSELoss, L1Loss).
struct ReductionOptions {
  ReductionOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT: nn::MSELoss(kSum)
  GRADLAB_ARG(Reduction, reduction);
};
using MSELossOptions = ReductionOptions;
using L1LossOptions = ReductionOptions;

/// Options of nn::BCEWithLogitsLoss.
struct BCEWithLogitsLossOptions {
  BCEWithLogitsLossOptions(Reduction r = kMean) : reduction_(r) {}  // NOLINT: BCEWithLogitsLoss(kSum)
  /// Multiplies each element's loss (broadcast to the input's shape); buffer "weight".
  GRADLAB_ARG(Tensor, weight) = {};
  GRADLAB_ARG(Reduction, reduction);
  /// Weight of the positive term (e.g. one per class, broadcast along the last dim); buffer
  /// "pos_weight".
  GRADLAB_ARG(Tensor, pos_weight) = {};
};

/// (input - target)², reduced. Shapes must match exactly (no silent broadcasting).
class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  MSELossOptions options;
};
GRADLAB_MODULE(MSELoss);

/// |input - target|, reduced.
class L1LossImpl : public Module {
 public:
  explicit L1LossImpl(const L1LossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  L1LossOptions options;
};
GRADLAB_MODULE(L1Loss);

/// Options of nn::SmoothL1Loss, nn::HuberLoss and nn::KLDivLoss: their functional options, as in
/// LibTorch (SmoothL1LossOptions(torch::kSum).beta(0.5), KLDivLossOptions(torch::kBatchMean)).
using SmoothL1LossOptions = functional::SmoothL1LossFuncOptions;
using HuberLossOptions = functional::HuberLossFuncOptions;
using KLDivLossOptions = functional::KLDivFuncOptions;

/// 0.5 d² / beta where |d| < beta, else |d| - 0.5 beta (d = input - target), reduced.
class SmoothL1LossImpl : public Module {
 public:
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  SmoothL1LossOptions options;
};
GRADLAB_MODULE(SmoothL1Loss);

/// 0.5 d² where |d| < delta, else delta (|d| - 0.5 delta), reduced.
class HuberLossImpl : public Module {
 public:
  explicit HuberLossImpl(const HuberLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  HuberLossOptions options;
};
GRADLAB_MODULE(HuberLoss);

/// KL divergence of log-probabilities input from target (probabilities, or log ones with
/// log_target), reduced (kBatchMean: the sum over the batch size).
class KLDivLossImpl : public Module {
 public:
  explicit KLDivLossImpl(const KLDivLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  KLDivLossOptions options;
};
GRADLAB_MODULE(KLDivLoss);

/// Binary cross-entropy on logits (stable: (1 - y) x + (1 + (p - 1) y) softplus(-x), times the
/// weight), reduced.
class BCEWithLogitsLossImpl : public Module {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  BCEWithLogitsLossOptions options;
  /// options.weight and options.pos_weight, registered as buffers when defined.
  Tensor weight, pos_weight;
};
GRADLAB_MODULE(BCEWithLogitsLoss);

/// Options of nn::BCELoss.
struct BCELossOptions {
  /// Multiplies each element's loss (broadcast to the input's shape); undefined: 1.
  GRADLAB_ARG(Tensor, weight) = {};
  GRADLAB_ARG(Reduction, reduction) = kMean;
};

/// Binary cross-entropy on probabilities (after a sigmoid): -w (y log x + (1 - y) log(1 - x)),
/// reduced. BCEWithLogitsLoss on the logits is the stabler choice.
class BCELossImpl : public Module {
 public:
  explicit BCELossImpl(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& os) const override;
  BCELossOptions options;
  /// options.weight, registered as the buffer "weight" when defined (as in LibTorch).
  Tensor weight;
};
GRADLAB_MODULE(BCELoss);

}  // namespace gradlab::nn
