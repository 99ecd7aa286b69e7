#pragma once
// A per-step training record (loss, gradient norm, learning rate) and a History of them that
// lessons print and write as CSV (for plotting curves).

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

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
  /// "epoch,step,loss,grad_norm,lr" then one line per record (full precision).
  std::string to_csv() const;
  /// Writes to_csv() to `path` (IOError when it cannot be written).
  void write_csv(const std::string& path) const;

 private:
  std::vector<StepRecord> records_;
};

}  // namespace gradlab::train
