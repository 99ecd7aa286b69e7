#pragma once
// optim::Adam and optim::AdamW, with PyTorch's updates (torch/optim/adam.py, adamw.py,
// single-tensor path). With t the step count (from 1):
//   Adam:  g += weight_decay * p                 AdamW:  p *= 1 - lr * weight_decay
//   m = β1 m + (1 - β1) g;   v = β2 v + (1 - β2) g²   (v_max = max(v_max, v) with amsgrad)
//   p -= lr / (1 - β1^t) * m / (√v / √(1 - β2^t) + eps)

#include <tuple>

#include "gradlab/nn/arg.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::optim {

/// (β1, β2) of Adam and AdamW.
using Betas = std::tuple<double, double>;

/// Options of optim::Adam.
class AdamOptions : public OptimizerOptions {
 public:
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamOptions>(*this);
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  void set_hyperparameter(const std::string& name, double value) override;

  GRADLAB_ARG(double, lr);
  GRADLAB_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  GRADLAB_ARG(double, eps) = 1e-8;
  GRADLAB_ARG(double, weight_decay) = 0.0;
  GRADLAB_ARG(bool, amsgrad) = false;
  GRADLAB_ARG(bool, maximize) = false;
};

/// Options of optim::AdamW (weight_decay defaults to 1e-2).
class AdamWOptions : public OptimizerOptions {
 public:
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamWOptions>(*this);
  }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  void set_hyperparameter(const std::string& name, double value) override;

  GRADLAB_ARG(double, lr);
  GRADLAB_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  GRADLAB_ARG(double, eps) = 1e-8;
  GRADLAB_ARG(double, weight_decay) = 1e-2;
  GRADLAB_ARG(bool, amsgrad) = false;
  GRADLAB_ARG(bool, maximize) = false;
};

/// Adam (Kingma & Ba); state: step (0-d float64), exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad).
class Adam : public Optimizer {
 public:
  Adam(const std::vector<Tensor>& params, const AdamOptions& defaults = {});
  Adam(std::vector<OptimizerParamGroup> groups, const AdamOptions& defaults = {});
  std::string name() const override { return "Adam"; }

 protected:
  void step_group(OptimizerParamGroup& group) override;
};

/// Adam with decoupled weight decay (Loshchilov & Hutter); same state as Adam.
class AdamW : public Optimizer {
 public:
  AdamW(const std::vector<Tensor>& params, const AdamWOptions& defaults = {});
  AdamW(std::vector<OptimizerParamGroup> groups, const AdamWOptions& defaults = {});
  std::string name() const override { return "AdamW"; }

 protected:
  void step_group(OptimizerParamGroup& group) override;
};

}  // namespace gradlab::optim
