#pragma once
// One object fed once per training step that keeps every record of the run at once:
//   * the History (CSV with seed, config and commit in its header, plus a JSON sidecar),
//   * a TensorBoard event file (loss, grad_norm, lr; hparams and final metrics at close()),
//   * the terminal (a ProgressBar, and a line when the gradient-norm watch fires).
// It stops the run on a non-finite loss: step() saves the records, then throws
// NonFiniteLossError naming the step.
//
//   train::Monitor mon(train::RunInfo().seed(0).config({{"lr", 0.05}}),
//                      train::MonitorOptions().log_dir("runs/a").csv_path("runs/a.csv")
//                          .total_steps(n));
//   for (...) { ...; mon.step({epoch, step, loss, grad_norm, lr}); }
//   mon.close({{"test_accuracy", acc}});
//
// The grad-norm watch (lesson 07): the baseline is the largest |grad| of the first
// `watch_warmup` steps; the watch fires at the first later step whose |grad| exceeds
// `watch_factor` x baseline, or is not finite. It reports; with stop_on_watch it also throws
// GradNormWatchError.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gradlab/core/error.hpp"
#include "gradlab/train/history.hpp"
#include "gradlab/train/progress.hpp"
#include "gradlab/train/run_info.hpp"
#include "gradlab/train/summary_writer.hpp"

namespace gradlab::train {

/// Thrown by Monitor::step on a NaN or infinite loss (after the records are saved).
class NonFiniteLossError : public ValueError {
 public:
  using ValueError::ValueError;
};
/// Thrown by Monitor::step when the grad-norm watch fires and stop_on_watch is set.
class GradNormWatchError : public ValueError {
 public:
  using ValueError::ValueError;
};

/// MonitorOptions().log_dir("runs/a").csv_path("runs/a.csv").total_steps(460)
struct MonitorOptions {
  GRADLAB_ARG(std::string, log_dir);   ///< TensorBoard event files go here; empty: none
  GRADLAB_ARG(std::string, csv_path);  ///< History CSV (+ .json), written by close() and on a stop
  GRADLAB_ARG(int64_t, total_steps) = 0;  ///< for the progress bar's ETA
  GRADLAB_ARG(bool, progress) = true;     ///< show a ProgressBar
  GRADLAB_ARG(ProgressOptions, progress_options);
  GRADLAB_ARG(double, watch_factor) = 10.0;
  GRADLAB_ARG(int64_t, watch_warmup) = 3;
  GRADLAB_ARG(bool, stop_on_watch) = false;
};

/// See the top of this header.
class Monitor {
 public:
  explicit Monitor(RunInfo run, MonitorOptions options = {});
  Monitor(RunInfo run, MonitorOptions options, std::ostream& out);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  /// Records one step (History, event file, terminal) and runs the checks.
  void step(const StepRecord& r);
  /// An extra scalar for the event file (e.g. "loss/validation" once per epoch).
  void add_scalar(const std::string& tag, double value, int64_t step);
  /// Writes the CSV and JSON, the hparams (config + seed) with `final_metrics`, and closes the
  /// event file and the bar. Idempotent.
  void close(const std::map<std::string, double>& final_metrics = {});

  const History& history() const { return history_; }
  /// The event writer (nullptr without a log_dir).
  SummaryWriter* writer() { return writer_.get(); }
  /// The first step at which the grad-norm watch fired.
  std::optional<int64_t> watch_fired_at() const { return watch_fired_at_; }
  double watch_baseline() const { return baseline_; }

 private:
  void save();
  std::ostream& out_;
  MonitorOptions opt_;
  History history_;
  std::unique_ptr<SummaryWriter> writer_;
  std::unique_ptr<ProgressBar> bar_;
  double baseline_ = 0;
  int64_t seen_ = 0;
  std::optional<int64_t> watch_fired_at_;
  bool closed_ = false;
};

}  // namespace gradlab::train
