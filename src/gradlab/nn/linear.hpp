#pragma once
// nn::Linear (y = x Wᵀ + b), nn::Identity, nn::Flatten.

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// Options of nn::Linear.
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  GRADLAB_ARG(int64_t, in_features);
  GRADLAB_ARG(int64_t, out_features);
  /// Learn an additive bias.
  GRADLAB_ARG(bool, bias) = true;
};

/// y = x Wᵀ + b with W [out, in] ~ U(-1/√in, 1/√in) (Kaiming uniform, a = √5) and b likewise.
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  /// Re-draws weight and bias with PyTorch's default initialization.
  void reset_parameters();
  /// x [..., in_features] -> [..., out_features].
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;

  LinearOptions options;
  Tensor weight;
  Tensor bias;  ///< undefined when options.bias() is false
};
GRADLAB_MODULE(Linear);

/// Returns its input.
class IdentityImpl : public Module {
 public:
  Tensor forward(const Tensor& input) { return input; }
};
GRADLAB_MODULE(Identity);

/// Options of nn::Flatten.
struct FlattenOptions {
  GRADLAB_ARG(int64_t, start_dim) = 1;
  GRADLAB_ARG(int64_t, end_dim) = -1;
};

/// Flattens dims start_dim..end_dim (default: all but the batch dim): [N, 1, 8, 8] -> [N, 64].
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  FlattenOptions options;
};
GRADLAB_MODULE(Flatten);

}  // namespace gradlab::nn
