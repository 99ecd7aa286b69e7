#pragma once
// optim::SGD, with PyTorch's update (torch/optim/sgd.py, single-tensor path):
//   g = ∇ (negated when maximize);  g += weight_decay * p
//   momentum: buf = g at the first step, else buf = momentum * buf + (1 - dampening) * g
//             g = nesterov ? g + momentum * buf : buf
//   p -= lr * g

#include "gradlab/nn/arg.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::optim {

/// Options of optim::SGD (lr has no default, as in PyTorch).
class SGDOptions : public OptimizerOptions {
 public:
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: SGD(params, 0.1)
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<SGDOptions>(*this);
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  void set_hyperparameter(const std::string& name, double value) override;

  GRADLAB_ARG(double, lr);
  GRADLAB_ARG(double, momentum) = 0.0;
  GRADLAB_ARG(double, dampening) = 0.0;
  GRADLAB_ARG(double, weight_decay) = 0.0;
  GRADLAB_ARG(bool, nesterov) = false;
  GRADLAB_ARG(bool, maximize) = false;
};

/// Stochastic gradient descent with momentum; state: momentum_buffer (when momentum != 0).
class SGD : public Optimizer {
 public:
  SGD(const std::vector<Tensor>& params, const SGDOptions& defaults);
  SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults);
  std::string name() const override { return "SGD"; }

 protected:
  void step_group(OptimizerParamGroup& group) override;
};

}  // namespace gradlab::optim
