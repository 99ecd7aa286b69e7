#pragma once
// nn::Linear (y = x Wᵀ + b), nn::Identity, nn::Flatten.

#include <initializer_list>
#include <vector>

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

/// Options of nn::Unflatten: the dim to split and the sizes it becomes (one may be -1).
struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  GRADLAB_ARG(int64_t, dim);
  GRADLAB_ARG(std::vector<int64_t>, sizes);
};

/// Splits one dim into several: Unflatten(1, {2, 5}) turns [N, 10] into [N, 2, 5] (a view).
class UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : options(dim, std::move(sizes)) {}
  explicit UnflattenImpl(const UnflattenOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  UnflattenOptions options;
};
GRADLAB_MODULE(Unflatten);

/// Options of nn::ZeroPad2d: one amount for every side, or {left, right, top, bottom}.
struct ZeroPad2dOptions {
  ZeroPad2dOptions(int64_t padding) : padding_({padding, padding, padding, padding}) {}  // NOLINT
  ZeroPad2dOptions(std::vector<int64_t> padding) : padding_(std::move(padding)) {}        // NOLINT
  ZeroPad2dOptions(std::initializer_list<int64_t> padding) : padding_(padding) {}          // NOLINT
  GRADLAB_ARG(std::vector<int64_t>, padding);
};

/// Zeros around the last two dims (F::pad, constant 0); negative amounts crop.
class ZeroPad2dImpl : public Module {
 public:
  explicit ZeroPad2dImpl(const ZeroPad2dOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  ZeroPad2dOptions options;
};
GRADLAB_MODULE(ZeroPad2d);

}  // namespace gradlab::nn
