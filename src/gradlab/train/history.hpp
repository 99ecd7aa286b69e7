#pragma once
// A per-step training record (loss, gradient norm, learning rate) and a History of them that
// lessons print and write as CSV (for plotting curves: tools/plot_curves.py).
//
// With run info set (seed, config, git commit), the CSV starts with comment lines and a JSON
// sidecar is written beside it (run.csv -> run.json):
//   # seed: 0
//   # git_commit: 1a2b3c4d5e6f
//   # config: {"batch_size":64,"lr":0.05}
//   epoch,step,loss,grad_norm,lr
//   0,0,2.3025850929940459,1.1320000000000001,0.050000000000000003
// (pandas: read_csv(path, comment="#")). Without run info the file is the header and rows only.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "gradlab/train/run_info.hpp"

namespace gradlab::train {

/// What one optimizer step looked like.
struct StepRecord {
  int64_t epoch = 0;
  int64_t step = 0;  ///< global step (0-based)
  double loss = 0.0;
  double grad_norm = 0.0;  ///< total 2-norm of the gradients before clipping
  double lr = 0.0;
};

/// "epoch 3  step 120  loss 0.2314  grad_norm 1.052  lr 0.05"
std::ostream& operator<<(std::ostream& os, const StepRecord& r);

/// The records of a run, in order.
class History {
 public:
  void add(const StepRecord& r) { records_.push_back(r); }
  const std::vector<StepRecord>& records() const { return records_; }
  size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  const StepRecord& back() const;
  /// Mean loss over the steps of one epoch (NaN when the epoch has none).
  double mean_loss(int64_t epoch) const;
  /// Largest gradient norm seen (over all steps, or one epoch).
  double max_grad_norm() const;
  double max_grad_norm(int64_t epoch) const;
  /// Seed, config and commit of the run, written into the CSV header and the JSON sidecar.
  void set_run_info(RunInfo info) { run_info_ = std::move(info); }
  const std::optional<RunInfo>& run_info() const { return run_info_; }
  /// The "# ..." run-info lines (when set), "epoch,step,loss,grad_norm,lr", then one line per
  /// record (17 significant digits: every double reads back exactly).
  std::string to_csv() const;
  /// {"seed": 0, "git_commit": "...", "config": {...}, "steps": N, "csv": "run.csv"}
  /// (seed null when unknown).
  std::string to_json(const std::string& csv_name = "") const;
  /// Writes to_csv() to `path` and, with run info set, to_json() to `path` with extension
  /// .json. Each is written crash-safely (io::write_file_atomic: a crash never leaves a
  /// half-written file in place of the previous one). IOError when it cannot be written.
  void write_csv(const std::string& path) const;

 private:
  std::vector<StepRecord> records_;
  std::optional<RunInfo> run_info_;
};

}  // namespace gradlab::train
