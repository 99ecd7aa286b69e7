#pragma once
// Activation modules: ReLU, LeakyReLU, Softplus, GELU, Tanh, Sigmoid, Softmax, LogSoftmax.

#include <string>

#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// max(x, 0).
class ReLUImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(ReLU);

/// Options of nn::LeakyReLU.
struct LeakyReLUOptions {
  GRADLAB_ARG(double, negative_slope) = 0.01;
};
/// x > 0 ? x : negative_slope * x.
class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  LeakyReLUOptions options;
};
GRADLAB_MODULE(LeakyReLU);

/// Options of nn::Softplus.
struct SoftplusOptions {
  GRADLAB_ARG(double, beta) = 1.0;
  GRADLAB_ARG(double, threshold) = 20.0;
};
/// log(1 + exp(beta x)) / beta, linear where beta x > threshold.
class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  SoftplusOptions options;
};
GRADLAB_MODULE(Softplus);

/// Options of nn::GELU.
struct GELUOptions {
  /// "none" (exact, with erf) or "tanh" (the tanh approximation).
  GRADLAB_ARG(std::string, approximate) = "none";
};
/// x Φ(x) (exact) or 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  GELUOptions options;
};
GRADLAB_MODULE(GELU);

/// tanh(x).
class TanhImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(Tanh);

/// 1 / (1 + exp(-x)).
class SigmoidImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(Sigmoid);

/// Options of nn::Softmax and nn::LogSoftmax.
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT: nn::Softmax(1)
  GRADLAB_ARG(int64_t, dim);
};
/// exp(x) / Σ exp(x) along dim.
class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(const SoftmaxOptions& options) : options(options) {}
  explicit SoftmaxImpl(int64_t dim) : options(dim) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  SoftmaxOptions options;
};
GRADLAB_MODULE(Softmax);

/// log softmax along dim.
class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(const SoftmaxOptions& options) : options(options) {}
  explicit LogSoftmaxImpl(int64_t dim) : options(dim) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  SoftmaxOptions options;
};
GRADLAB_MODULE(LogSoftmax);

}  // namespace gradlab::nn
