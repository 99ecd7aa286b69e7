#pragma once
// Training checks: a few optimizer steps with the user's own optimizer (its kind, LR and other
// hyperparameters). Each returns a Finding of stage Training and, unless asked not to, restores
// the model's parameters and buffers and the optimizer's state and hyperparameters afterwards
// (TrainingSnapshot), so a check leaves the run it inspects as it was.
//
//   auto f = diagnose::overfit_one_batch(model, loss, opt, xb, yb);
//   // [fail] training/overfit_one_batch: loss 2.331 -> nan in 8 of 200 steps on one batch of 64,
//   //        accuracy 9.38% (SGD, lr 10): rising loss (not finite)
//   //        hint: the LR is too large (10): lower it 10x ...

#include <cstdint>
#include <string>
#include <vector>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/diagnose/finding.hpp"
#include "gradlab/diagnose/model.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::diagnose {

/// Deep copies of a model's state_dict and an optimizer's state_dict, to put both back.
class TrainingSnapshot {
 public:
  TrainingSnapshot(const nn::Module& model, const optim::Optimizer& optimizer);
  /// Copies the saved values back (same tensors, so the optimizer keeps pointing at them).
  void restore(nn::Module& model, optim::Optimizer& optimizer) const;

 private:
  StateDict model_, optimizer_;
};

/// Options of overfit_one_batch.
struct OverfitOptions {
  int64_t steps = 200;
  /// While the loss is still falling after `steps` (undecided: a small but working LR), run on in
  /// chunks of `steps` up to this many steps before judging.
  int64_t max_steps = 1000;
  /// Passes when the loss falls below this...
  double loss_threshold = 0.05;
  /// ...or (class-index losses) when every sample of the batch is classified right.
  bool accept_full_accuracy = true;
  /// Put the model and the optimizer back afterwards.
  bool restore = true;
};

/// Trains on one batch only. A healthy model and optimizer memorize it; when they do not, the
/// finding names the symptom and its likely causes:
///   flat loss (fell < 5%)          -> zero gradient, LR too small, parameters missing from the optimizer;
///   rising loss or NaN/Inf         -> LR too large;
///   still falling at the end       -> LR too small (or too few steps), judged after running on up to
///                                     max_steps while it keeps falling;
///   plateau above the threshold    -> capacity (too small a model) or label noise.
/// metrics "initial_loss", "final_loss", "min_loss", "accuracy", "steps_run", "lr".
Finding overfit_one_batch(const Model& model, const Loss& loss, optim::Optimizer& optimizer,
                          const Tensor& inputs, const Tensor& targets, const OverfitOptions& options = {});

/// Options of lr_range_test.
struct LRRangeOptions {
  double lr_min = 1e-5, lr_max = 10.0;
  /// Log-spaced LRs, one optimizer step each (Smith's range test: weights carry over).
  int64_t steps = 60;
  int64_t batch_size = 64;
  /// The sweep stops once the (smoothed) loss exceeds this multiple of the best loss seen.
  double divergence_factor = 4.0;
  uint64_t seed = 0;
  bool restore = true;
};

/// The curve and its reading.
struct LRRangeResult {
  std::vector<double> lrs, losses;  ///< one per step run (smoothed losses)
  double best_lr = 0;               ///< LR at the lowest smoothed loss
  double diverged_lr = 0;           ///< first LR whose loss blew up (0 when none did)
  /// Suggested range: [best_lr / 100, best_lr / 10] (a safe distance below the minimum).
  double suggested_min = 0, suggested_max = 0;
  /// fail when the optimizer's LR is at or above the divergence point; warn when it is above
  /// best_lr, or more than 10x below suggested_min; ok otherwise.
  Finding finding;
};

/// Sweeps the LR from lr_min to lr_max (log-spaced) over batches of inputs/targets.
LRRangeResult lr_range_test(const Model& model, const Loss& loss, optim::Optimizer& optimizer,
                            const Tensor& inputs, const Tensor& targets, const LRRangeOptions& options = {});

/// Per-parameter numbers over a few steps.
struct ParameterStepStats {
  std::string name;
  std::vector<double> grad_norm;     ///< ||grad|| per step
  std::vector<double> update_ratio;  ///< ||Δw|| / ||w|| per step (about 1e-3 is healthy)
  /// Every element equal before the first step (a bias at 0, a norm weight at 1): its
  /// update/weight ratio means nothing then, and the ratio rules skip it.
  bool constant_start = false;
};

/// Options of gradient_stats.
struct GradientStatsOptions {
  int64_t steps = 5;
  int64_t batch_size = 64;
  /// Median update/weight ratio of a parameter above max_ratio, or the median over the judged
  /// parameters below min_ratio (the LR is shared: a too small one shows on most of them, while a
  /// lone tiny ratio can be by design, e.g. a bias followed by BatchNorm): warn; above
  /// fail_ratio, or a non-finite gradient: fail. NOTE: at init the last layer's small weights
  /// give ratios near 0.1 on healthy runs (SGD, lr 0.1: the digits MLP 0.05, a CNN with
  /// BatchNorm 0.12), so max_ratio sits well above that.
  double min_ratio = 1e-6, max_ratio = 0.3, fail_ratio = 1.0;
  uint64_t seed = 0;
  bool restore = true;
};

struct GradientStatsResult {
  std::vector<ParameterStepStats> parameters;
  /// metrics "max_update_ratio", "min_update_ratio", "grad_norm_<name>" (median per name).
  Finding finding;
};

/// Gradient norm per parameter and update/weight ratio per step, with the user's optimizer.
GradientStatsResult gradient_stats(const Model& model, const Loss& loss, optim::Optimizer& optimizer,
                                   const Tensor& inputs, const Tensor& targets,
                                   const GradientStatsOptions& options = {});

/// Options of watch_nonfinite.
struct NonFiniteOptions {
  int64_t steps = 20;
  int64_t batch_size = 64;
  uint64_t seed = 0;
  bool restore = true;
};

/// Trains `steps` steps under anomaly mode and stops at the first NaN/Inf: in the inputs of a
/// batch (born in the data), in a forward op or a backward node (anomaly mode names the op, the
/// call site and the operand statistics, forward or backward), in the loss or in the updated
/// parameters. fail at the first one; metrics "step" (-1 when none), "phase" (0 data, 1 forward,
/// 2 backward, 3 update).
Finding watch_nonfinite(const Model& model, const Loss& loss, optim::Optimizer& optimizer,
                        const Tensor& inputs, const Tensor& targets, const NonFiniteOptions& options = {});

/// Options of check_loader_speed.
struct LoaderSpeedOptions {
  /// Timed batches, after one warm-up batch (its wait includes starting the workers).
  int64_t batches = 8;
  /// Median wait for a batch / median training step above this: warn.
  double max_wait_ratio = 0.5;
  bool restore = true;
};

/// The data loader as the bottleneck: reads batches from a replica of `loader` (the loader
/// itself does not move; a const loader works) and trains on each with the user's optimizer,
/// timing the wait for the next batch and the step (forward, backward, optimizer step) apart.
/// warn when the median wait exceeds max_wait_ratio times the median step (the model idles,
/// waiting for data), with a num_workers hint; never fail (speed, not correctness). Medians over
/// several batches and a wide margin keep the verdict stable on a loaded machine. metrics
/// "wait_ms", "step_ms", "wait_ratio", "batches", "num_workers".
Finding check_loader_speed(const Model& model, const Loss& loss, optim::Optimizer& optimizer,
                           const data::DataLoader& loader, const LoaderSpeedOptions& options = {});

}  // namespace gradlab::diagnose
