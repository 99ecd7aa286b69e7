#pragma once
// nn::Dropout: zeroes elements with probability p in training mode; the identity in eval mode.

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

}  // namespace gradlab::nn
