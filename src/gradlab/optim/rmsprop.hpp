#pragma once
// optim::RMSprop, with PyTorch's update (torch/optim/rmsprop.py, single-tensor path):
//   g += weight_decay * p;   s = α s + (1 - α) g²
//   centered: a = α a + (1 - α) g;  d = √(s - a²) + eps      else d = √s + eps
//   momentum > 0: buf = momentum * buf + g / d;  p -= lr * buf      else p -= lr * g / d

#include "gradlab/nn/arg.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::optim {

/// Options of optim::RMSprop.
class RMSpropOptions : public OptimizerOptions {
 public:
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<RMSpropOptions>(*this);
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  void set_hyperparameter(const std::string& name, double value) override;

  GRADLAB_ARG(double, lr);
  GRADLAB_ARG(double, alpha) = 0.99;
  GRADLAB_ARG(double, eps) = 1e-8;
  GRADLAB_ARG(double, weight_decay) = 0.0;
  GRADLAB_ARG(double, momentum) = 0.0;
  GRADLAB_ARG(bool, centered) = false;
  GRADLAB_ARG(bool, maximize) = false;
};

/// RMSprop (Hinton); state: step, square_avg, momentum_buffer (momentum > 0), grad_avg (centered).
class RMSprop : public Optimizer {
 public:
  RMSprop(const std::vector<Tensor>& params, const RMSpropOptions& defaults = {});
  RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& defaults = {});
  std::string name() const override { return "RMSprop"; }

 protected:
  void step_group(OptimizerParamGroup& group) override;
};

}  // namespace gradlab::optim
