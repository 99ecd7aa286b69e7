#pragma once
// optim::LBFGS, PyTorch's algorithm (torch/optim/lbfgs.py): a limited-memory BFGS over all
// parameters as one flat vector x, driven by a closure that recomputes the loss and gradients.
// Per step, up to max_iter iterations of
//   d = -H g        (two-loop recursion over the last history_size pairs s = x' - x, y = g' - g,
//                    kept when yᵀs > 1e-10; H₀ = yᵀs / yᵀy)
//   x += t d        (t = lr, or min(1, 1 / |g|₁) lr on the very first iteration; with
//                    line_search_fn = "strong_wolfe", t from a line search meeting the strong
//                    Wolfe conditions c1 = 1e-4, c2 = 0.9, by cubic interpolation)
// stopping when max|g| <= tolerance_grad, gᵀd > -tolerance_change, max|t d| <= tolerance_change,
// |Δloss| < tolerance_change, or after max_eval closure calls.
//
//   optim::LBFGS opt(model->parameters(), optim::LBFGSOptions(1).line_search_fn("strong_wolfe"));
//   opt.step([&] { opt.zero_grad(); Tensor l = loss_fn(); l.backward(); return l; });

#include <optional>
#include <string>

#include "gradlab/nn/arg.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::optim {

/// Options of optim::LBFGS.
class LBFGSOptions : public OptionsWithHyperparameters<LBFGSOptions> {
 public:
  static constexpr const char* kOptimizer = "LBFGS";
  LBFGSOptions(double lr = 1) : lr_(lr) {}  // NOLINT
  /// The hyperparameters, once: what state_dict() saves and load_state_dict() reads.
  /// line_search_fn is not a number: the optimizer loading a state keeps its own.
  template <class Self, class F>
  static void visit_hyperparameters(Self& o, F&& f) {
    f("lr", o.lr_);
    f("max_iter", o.max_iter_);
    f("max_eval", o.max_eval_);
    f("tolerance_grad", o.tolerance_grad_);
    f("tolerance_change", o.tolerance_change_);
    f("history_size", o.history_size_);
  }

  GRADLAB_ARG(double, lr);
  /// Iterations per step().
  GRADLAB_ARG(int64_t, max_iter) = 20;
  /// Closure calls per step(); default max_iter * 5 / 4.
  GRADLAB_ARG(std::optional<int64_t>, max_eval) = std::nullopt;
  GRADLAB_ARG(double, tolerance_grad) = 1e-7;
  GRADLAB_ARG(double, tolerance_change) = 1e-9;
  /// How many (s, y) pairs the inverse-Hessian estimate keeps.
  GRADLAB_ARG(int64_t, history_size) = 100;
  /// nullopt (a fixed step lr) or "strong_wolfe".
  GRADLAB_ARG(std::optional<std::string>, line_search_fn) = std::nullopt;
};

/// L-BFGS; one parameter group, and step() needs a closure. State (on the first parameter, so
/// state_dict() carries it): func_evals, n_iter, d, t, H_diag, prev_flat_grad, prev_loss,
/// old_dirs, old_stps, ro (the history as [k, n] and [k] tensors).
class LBFGS : public Optimizer {
 public:
  LBFGS(const std::vector<Tensor>& params, const LBFGSOptions& defaults = {});
  LBFGS(std::vector<OptimizerParamGroup> groups, const LBFGSOptions& defaults = {});
  std::string name() const override { return "LBFGS"; }
  /// Up to max_iter iterations, each calling the closure once (more with the line search);
  /// returns the loss of the first call.
  Tensor step(const LossClosure& closure = nullptr) override;

 protected:
  /// Not used: step() works on all parameters at once.
  void step_group(OptimizerParamGroup& group) override;
  /// Scalars 0-d, d and prev_flat_grad [n] (n: all parameters' elements), the history any.
  std::optional<Shape> state_shape(const std::string& name, const Tensor& param) const override;
};

}  // namespace gradlab::optim
