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
class SGDOptions : public OptionsWithHyperparameters<SGDOptions> {
 public:
  static constexpr const char* kOptimizer = "SGD";
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: SGD(params, 0.1)
  /// The hyperparameters, once: what state_dict() saves and load_state_dict() reads.
  template <class Self, class F>
  static void visit_hyperparameters(Self& o, F&& f) {
    f("lr", o.lr_);
    f("momentum", o.momentum_);
    f("dampening", o.dampening_);
    f("weight_decay", o.weight_decay_);
    f("nesterov", o.nesterov_);
    f("maximize", o.maximize_);
  }

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
