#pragma once
// optim::Adagrad, with PyTorch's update (torch/optim/adagrad.py, single-tensor path):
//   g += weight_decay * p;   clr = lr / (1 + (step - 1) * lr_decay)
//   sum += g²;   p -= clr * g / (√sum + eps)

#include "gradlab/nn/arg.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::optim {

/// Options of optim::Adagrad.
class AdagradOptions : public OptionsWithHyperparameters<AdagradOptions> {
 public:
  static constexpr const char* kOptimizer = "Adagrad";
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  /// The hyperparameters, once: what state_dict() saves and load_state_dict() reads.
  template <class Self, class F>
  static void visit_hyperparameters(Self& o, F&& f) {
    f("lr", o.lr_);
    f("lr_decay", o.lr_decay_);
    f("weight_decay", o.weight_decay_);
    f("initial_accumulator_value", o.initial_accumulator_value_);
    f("eps", o.eps_);
    f("maximize", o.maximize_);
  }

  GRADLAB_ARG(double, lr);
  /// The step size decays as lr / (1 + (step - 1) * lr_decay).
  GRADLAB_ARG(double, lr_decay) = 0.0;
  GRADLAB_ARG(double, weight_decay) = 0.0;
  /// The sum of squared gradients starts here.
  GRADLAB_ARG(double, initial_accumulator_value) = 0.0;
  GRADLAB_ARG(double, eps) = 1e-10;
  GRADLAB_ARG(bool, maximize) = false;
};

/// Adagrad (Duchi et al.): each coordinate's step shrinks with its summed squared gradients.
/// State: step, sum.
class Adagrad : public Optimizer {
 public:
  Adagrad(const std::vector<Tensor>& params, const AdagradOptions& defaults = {});
  Adagrad(std::vector<OptimizerParamGroup> groups, const AdagradOptions& defaults = {});
  std::string name() const override { return "Adagrad"; }

 protected:
  void step_group(OptimizerParamGroup& group) override;
};

}  // namespace gradlab::optim
