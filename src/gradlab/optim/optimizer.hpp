#pragma once
// Optimizer base, as torch::optim::Optimizer: parameter groups (each with its own options,
// e.g. its own lr), zero_grad(set_to_none), step(), and per-parameter state (momentum buffers,
// Adam moments, step counts) that state_dict() exposes for checkpoints:
//   state.<i>.<name>         i = position of the parameter over all groups, in order
//   param_groups.<g>.<hyper> 0-d float64 (lr, momentum, beta1, beta2, eps, weight_decay, ...)
//   param_groups.<g>.params  int64 [n]: the positions of the group's parameters

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::optim {

/// The hyperparameters of one parameter group. Each optimizer has its own subclass.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  /// (name, value) of every hyperparameter, booleans as 0/1 (what state_dict() saves).
  virtual std::vector<std::pair<std::string, double>> hyperparameters() const = 0;
  /// Sets one hyperparameter by name (what load_state_dict() reads); unknown names are an error.
  virtual void set_hyperparameter(const std::string& name, double value) = 0;
};

namespace detail {
using Hyperparameters = std::vector<std::pair<std::string, double>>;
// One hyperparameter as state_dict() saves it: a number as itself, a bool as 0/1, the (β1, β2)
// pair as two entries beta1 and beta2.
void put_hyperparameter(Hyperparameters& out, const char* name, double v);
void put_hyperparameter(Hyperparameters& out, const char* name, bool v);
void put_hyperparameter(Hyperparameters& out, const char* name, int64_t v);
/// An optional count is saved only when set.
void put_hyperparameter(Hyperparameters& out, const char* name, const std::optional<int64_t>& v);
void put_hyperparameter(Hyperparameters& out, const char* name, const std::tuple<double, double>& v);
// Sets `field` when `key` names it (beta1 / beta2 for the pair); false when it does not.
bool set_hyperparameter(double& field, const char* name, const std::string& key, double v);
bool set_hyperparameter(bool& field, const char* name, const std::string& key, double v);
bool set_hyperparameter(int64_t& field, const char* name, const std::string& key, double v);
bool set_hyperparameter(std::optional<int64_t>& field, const char* name, const std::string& key,
                        double v);
bool set_hyperparameter(std::tuple<double, double>& field, const char* name, const std::string& key,
                        double v);
[[noreturn]] void unknown_hyperparameter(const char* optimizer, const std::string& key,
                                         const Hyperparameters& known);
}  // namespace detail

/// OptimizerOptions whose hyperparameters are listed once, in
/// `Derived::visit_hyperparameters(options, f)` (f(name, field) per hyperparameter, lr first):
/// state_dict(), load_state_dict() and the error for an unknown name all read that list.
template <class Derived>
class OptionsWithHyperparameters : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(self());
  }
  double get_lr() const override { return self().lr(); }
  void set_lr(double lr) override { self().lr(lr); }
  std::vector<std::pair<std::string, double>> hyperparameters() const override {
    detail::Hyperparameters out;
    Derived::visit_hyperparameters(
        self(), [&out](const char* name, const auto& field) { detail::put_hyperparameter(out, name, field); });
    return out;
  }
  void set_hyperparameter(const std::string& key, double value) override {
    bool found = false;
    Derived::visit_hyperparameters(self(), [&](const char* name, auto& field) {
      found = found || detail::set_hyperparameter(field, name, key, value);
    });
    if (!found) detail::unknown_hyperparameter(Derived::kOptimizer, key, hyperparameters());
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  Derived& self() { return static_cast<Derived&>(*this); }
};

/// A list of parameters that share options.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

/// Per-parameter state: name -> tensor, in insertion order ("momentum_buffer", "step", ...).
using ParamState = StateDict;

/// Base of SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS.
class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;

  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  /// One update of every parameter that has a gradient (parameters without one are skipped).
  /// With a closure, it is called first (grad mode on) and its loss returned. (LBFGS overrides
  /// it: it calls the closure many times.)
  virtual Tensor step(const LossClosure& closure = nullptr);
  /// Clears the gradients of every parameter: to none (default, as PyTorch 2) or to zeros.
  void zero_grad(bool set_to_none = true);
  /// Adds a group; options not given are the optimizer's defaults.
  void add_param_group(const OptimizerParamGroup& group);

  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  /// Every parameter of every group, in order (the positions state_dict() uses).
  std::vector<Tensor> parameters() const;
  /// The state of one parameter (empty until a step creates it).
  ParamState& state(const Tensor& param);
  bool has_state(const Tensor& param) const;
  /// "SGD", "Adam", ...
  virtual std::string name() const = 0;

  /// The state and hyperparameters (see the top of this file); tensors are handles to the live
  /// state.
  StateDict state_dict() const;
  /// Restores state and hyperparameters saved by state_dict() from an optimizer over the same
  /// parameter layout (same number of groups and of parameters per group); state is copied.
  void load_state_dict(const StateDict& state);

 protected:
  Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults);
  /// Updates the parameters of one group (called under NoGradGuard for each group).
  virtual void step_group(OptimizerParamGroup& group) = 0;
  /// The shape load_state_dict() demands of state `name` of `param` (nullopt: any): the
  /// parameter's own shape, but any for "step".
  virtual std::optional<Shape> state_shape(const std::string& name, const Tensor& param) const;

  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> param_groups_;
  std::unordered_map<const void*, ParamState> state_;
};

}  // namespace gradlab::optim
