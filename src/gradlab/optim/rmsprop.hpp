#pragma once
// optim::RMSprop, with PyTorch's update (torch/optim/rmsprop.py, single-tensor path):
//   g += weight_decay * p;   s = α s + (1 - α) g²
//   centered: a = α a + (1 - α) g;  d = √(s - a²) + eps      else d = √s + eps
//   momentum > 0: buf = momentum * buf + g / d;  p -= lr * buf      else p -= lr * g / d

#include "gradlab/nn/arg.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::optim {

/// Options of optim::RMSprop.
class RMSpropOptions : public OptionsWithHyperparameters<RMSpropOptions> {
 public:
  static constexpr const char* kOptimizer = "RMSprop";
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  /// The hyperparameters, once: what state_dict() saves and load_state_dict() reads.
  template <class Self, class F>
  static void visit_hyperparameters(Self& o, F&& f) {
    f("lr", o.lr_);
    f("alpha", o.alpha_);
    f("eps", o.eps_);
    f("weight_decay", o.weight_decay_);
    f("momentum", o.momentum_);
    f("centered", o.centered_);
    f("maximize", o.maximize_);
  }

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
