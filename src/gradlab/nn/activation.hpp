#pragma once
// Activation modules, as LibTorch's torch/nn/modules/activation.h: ReLU, ReLU6, LeakyReLU, ELU,
// SELU, CELU, Hardtanh, Threshold, GLU, PReLU, SiLU, Mish, Softsign, Tanhshrink, LogSigmoid,
// Softplus, GELU, Tanh, Sigmoid, Softmax, Softmin, LogSoftmax. Options: nn/activation_options.hpp.

#include <string>

#include "gradlab/nn/activation_options.hpp"
#include "gradlab/nn/arg.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// max(x, 0); inplace writes into the input.
class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  ReLUOptions options;
};
GRADLAB_MODULE(ReLU);

/// min(max(x, 0), 6).
class ReLU6Impl : public Module {
 public:
  explicit ReLU6Impl(const ReLU6Options& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  ReLU6Options options;
};
GRADLAB_MODULE(ReLU6);

/// x > 0 ? x : negative_slope * x.
class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  LeakyReLUOptions options;
};
GRADLAB_MODULE(LeakyReLU);

/// x > 0 ? x : alpha (exp(x) - 1).
class ELUImpl : public Module {
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  ELUOptions options;
};
GRADLAB_MODULE(ELU);

/// scale * elu(x, alpha) with SELU's fixed constants.
class SELUImpl : public Module {
 public:
  explicit SELUImpl(const SELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  SELUOptions options;
};
GRADLAB_MODULE(SELU);

/// x > 0 ? x : alpha (exp(x / alpha) - 1).
class CELUImpl : public Module {
 public:
  explicit CELUImpl(const CELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  CELUOptions options;
};
GRADLAB_MODULE(CELU);

/// clamp(x, min_val, max_val).
class HardtanhImpl : public Module {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  HardtanhOptions options;
};
GRADLAB_MODULE(Hardtanh);

/// x > threshold ? x : value.
class ThresholdImpl : public Module {
 public:
  ThresholdImpl(double threshold, double value) : options(threshold, value) {}
  explicit ThresholdImpl(const ThresholdOptions& options) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  ThresholdOptions options;
};
GRADLAB_MODULE(Threshold);

/// First half of dim * sigmoid(second half).
class GLUImpl : public Module {
 public:
  explicit GLUImpl(const GLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  GLUOptions options;
};
GRADLAB_MODULE(GLU);

/// x > 0 ? x : weight * x, with a learnable weight: one, or one per channel (dim 1 of the
/// input), each initialised to options.init (0.25).
class PReLUImpl : public Module {
 public:
  explicit PReLUImpl(const PReLUOptions& options = {});
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  PReLUOptions options;
  Tensor weight;
};
GRADLAB_MODULE(PReLU);

/// x * sigmoid(x).
class SiLUImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(SiLU);

/// x * tanh(softplus(x)).
class MishImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(Mish);

/// x / (1 + |x|).
class SoftsignImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(Softsign);

/// x - tanh(x).
class TanhshrinkImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(Tanhshrink);

/// log(sigmoid(x)).
class LogSigmoidImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
GRADLAB_MODULE(LogSigmoid);

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

/// softmax(-x) along dim.
class SoftminImpl : public Module {
 public:
  explicit SoftminImpl(const SoftminOptions& options) : options(options) {}
  explicit SoftminImpl(int64_t dim) : options(dim) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  SoftminOptions options;
};
GRADLAB_MODULE(Softmin);

/// |x| > lambda ? x : 0.
class HardshrinkImpl : public Module {
 public:
  explicit HardshrinkImpl(const HardshrinkOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  HardshrinkOptions options;
};
GRADLAB_MODULE(Hardshrink);

/// x - lambda above lambda, x + lambda below -lambda, else 0.
class SoftshrinkImpl : public Module {
 public:
  explicit SoftshrinkImpl(const SoftshrinkOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& os) const override;
  SoftshrinkOptions options;
};
GRADLAB_MODULE(Softshrink);

}  // namespace gradlab::nn
