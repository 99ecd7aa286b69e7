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

namespace detail {
/// The hyperparameters Adam and AdamW share (only weight_decay's default differs), once: what
/// state_dict() saves and load_state_dict() reads.
template <class Options>
class AdamOptionsBase : public OptionsWithHyperparameters<Options> {
 public:
  explicit AdamOptionsBase(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}
  template <class Self, class F>
  static void visit_hyperparameters(Self& o, F&& f) {
    f("lr", o.lr_);
    f("betas", o.betas_);  // saved as beta1, beta2
    f("eps", o.eps_);
    f("weight_decay", o.weight_decay_);
    f("amsgrad", o.amsgrad_);
    f("maximize", o.maximize_);
  }

  GRADLAB_SHARED_ARG(Options, double, lr);
  GRADLAB_SHARED_ARG(Options, Betas, betas) = std::make_tuple(0.9, 0.999);
  GRADLAB_SHARED_ARG(Options, double, eps) = 1e-8;
  GRADLAB_SHARED_ARG(Options, double, weight_decay);
  GRADLAB_SHARED_ARG(Options, bool, amsgrad) = false;
  GRADLAB_SHARED_ARG(Options, bool, maximize) = false;
};
}  // namespace detail

/// Options of optim::Adam.
class AdamOptions : public detail::AdamOptionsBase<AdamOptions> {
 public:
  static constexpr const char* kOptimizer = "Adam";
  AdamOptions(double lr = 1e-3) : AdamOptionsBase(lr, 0.0) {}  // NOLINT
};

/// Options of optim::AdamW (weight_decay defaults to 1e-2).
class AdamWOptions : public detail::AdamOptionsBase<AdamWOptions> {
 public:
  static constexpr const char* kOptimizer = "AdamW";
  AdamWOptions(double lr = 1e-3) : AdamOptionsBase(lr, 1e-2) {}  // NOLINT
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
