#pragma once
// nn::Dropout: zeroes elements with probability p in training mode; the identity in eval mode.
// nn::Dropout2d / Dropout3d: the same for whole channels (feature maps) of images / volumes.

#include "gradlab/core/generator.hpp"
#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// Options of nn::Dropout.
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: nn::Dropout(0.2)
  /// Probability of zeroing an element.
  GRADLAB_ARG(double, p);
  /// Random stream of the masks (the default generator when null); not owned.
  GRADLAB_ARG(Generator*, generator) = nullptr;
};

/// Training: y = x * mask / (1 - p), mask ~ Bernoulli(1 - p) drawn anew each call.
/// Eval: y = x. (Expected value is the same in both modes.)
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  explicit DropoutImpl(double p) : DropoutImpl(DropoutOptions(p)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  DropoutOptions options;
};
GRADLAB_MODULE(Dropout);

/// Options of nn::Dropout2d and nn::Dropout3d (aliases of DropoutOptions, as in LibTorch).
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;

/// Training: zeroes each channel x[n, c] of [N, C, H, W] (or [C, H, W]) with probability p and
/// scales the others by 1/(1-p) (F::dropout2d). Eval: y = x.
class Dropout2dImpl : public Module {
 public:
  explicit Dropout2dImpl(const Dropout2dOptions& options = {});
  explicit Dropout2dImpl(double p) : Dropout2dImpl(Dropout2dOptions(p)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  Dropout2dOptions options;
};
GRADLAB_MODULE(Dropout2d);

/// The same for volumes [N, C, D, H, W] (or [C, D, H, W]) (F::dropout3d).
class Dropout3dImpl : public Module {
 public:
  explicit Dropout3dImpl(const Dropout3dOptions& options = {});
  explicit Dropout3dImpl(double p) : Dropout3dImpl(Dropout3dOptions(p)) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  Dropout3dOptions options;
};
GRADLAB_MODULE(Dropout3d);

}  // namespace gradlab::nn
