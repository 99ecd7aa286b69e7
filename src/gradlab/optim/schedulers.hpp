#pragma once
// Learning-rate schedulers, as torch.optim.lr_scheduler (same recursive formulas, so the same
// sequence of learning rates). Each sets the lr of every param group of its optimizer.
// Construction counts as step 0 (LinearLR already scales the lr then); call step() once per
// epoch (or per iteration), after optimizer.step().
//
// state_dict() keys (0-d float64 unless noted): last_epoch, step_count, base_lrs.<g>,
// last_lr.<g>, and each scheduler's own settings (step_size, gamma, milestones as int64 [k], ...).
//
// NOTE: to resume, build the optimizer and the scheduler, THEN load the optimizer's state and the
// scheduler's (as in PyTorch). Constructing a scheduler sets the lr of step 0 (LinearLR scales
// it); loading the optimizer's state afterwards restores the saved lr.

#include <string>
#include <utility>
#include <vector>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::optim {

/// Base of the epoch-indexed schedulers.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances one epoch and writes the new lr into every param group.
  void step();
  /// The lr of each group after the last step (or construction).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  virtual std::string name() const = 0;

  StateDict state_dict() const;
  /// Restores the scheduler's counters and settings (not the optimizer's lr: that is in the
  /// optimizer's own state_dict).
  void load_state_dict(const StateDict& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  /// The lrs for last_epoch_ from the current group lrs (PyTorch's chainable get_lr).
  virtual std::vector<double> get_lr() = 0;
  /// Settings saved beside the counters (name, value).
  virtual std::vector<std::pair<std::string, double>> settings() const { return {}; }
  virtual void load_settings(const StateDict& /*state*/) {}
  /// Non-number settings (MultiStepLR's milestones).
  virtual void save_extra(StateDict& /*state*/) const {}
  /// Derived constructors call this last: step 0 (PyTorch's _initial_step).
  void initial_step();
  std::vector<double> group_lrs() const;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
};

/// lr = lr * gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  std::string name() const override { return "StepLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::vector<std::pair<std::string, double>> settings() const override;
  void load_settings(const StateDict& state) override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// lr = lr * gamma at each milestone epoch (a milestone listed twice multiplies twice).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  std::string name() const override { return "MultiStepLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::vector<std::pair<std::string, double>> settings() const override;
  void load_settings(const StateDict& state) override;
  void save_extra(StateDict& state) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

/// lr = lr * gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  std::string name() const override { return "ExponentialLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::vector<std::pair<std::string, double>> settings() const override;
  void load_settings(const StateDict& state) override;

 private:
  double gamma_;
};

/// lr follows eta_min + (base_lr - eta_min) (1 + cos(π t / T_max)) / 2 (PyTorch's recursive form).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);
  std::string name() const override { return "CosineAnnealingLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::vector<std::pair<std::string, double>> settings() const override;
  void load_settings(const StateDict& state) override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// Warmup: the lr factor goes linearly from start_factor to end_factor over total_iters steps.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3.0, double end_factor = 1.0,
           int64_t total_iters = 5);
  std::string name() const override { return "LinearLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::vector<std::pair<std::string, double>> settings() const override;
  void load_settings(const StateDict& state) override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/// Options of ReduceLROnPlateau (PyTorch's defaults).
struct ReduceLROnPlateauOptions {
  enum class Mode { Min, Max };
  enum class ThresholdMode { Rel, Abs };
  Mode mode = Mode::Min;
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  ThresholdMode threshold_mode = ThresholdMode::Rel;
  int64_t cooldown = 0;
  double min_lr = 0.0;
  double eps = 1e-8;
};

/// Multiplies the lr by `factor` when a metric has not improved for `patience` epochs.
class ReduceLROnPlateau {
 public:
  using Options = ReduceLROnPlateauOptions;
  explicit ReduceLROnPlateau(Optimizer& optimizer, Options options = {});
  /// One epoch with validation metric `metric`.
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  double best() const { return best_; }
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  bool is_better(double a) const;
  Optimizer& optimizer_;
  Options options_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace gradlab::optim
