#pragma once
// The curves behind some findings, kept for Report::html's charts: the LR range test's sweep,
// a histogram of each layer's output, and each parameter's gradient norm per step. doctor fills
// them from the checks it runs anyway (nothing is run twice); a report built by hand has none.

#include <cstdint>
#include <string>
#include <vector>

namespace gradlab::diagnose {

/// Fixed-width bins over [lo, hi]: counts[i] holds the values in [lo + i w, lo + (i + 1) w),
/// w = (hi - lo) / counts.size(); the last bin also holds hi. NaN / Inf are counted apart.
struct Histogram {
  double lo = 0, hi = 0;
  std::vector<int64_t> counts;
  int64_t nonfinite = 0;
  /// Finite values counted (the sum of counts).
  int64_t total() const;
};

/// `bins` bins between the smallest and the largest finite value; when they are equal (v), the
/// range is [v - 0.5, v + 0.5] and every value lands in the middle bin. No finite value: lo = hi
/// = 0, all counts 0.
Histogram make_histogram(const std::vector<double>& values, int bins = 24);

/// What Report::html draws (empty parts are not drawn).
struct ReportCharts {
  /// lr_range_test: one point per step run (smoothed loss), its reading and the optimizer's LR.
  struct LRCurve {
    std::vector<double> lrs, losses;
    double best_lr = 0;
    double diverged_lr = 0;  ///< 0 when the sweep did not diverge
    double optimizer_lr = 0;
  };
  /// One layer's output on the model stage's batch (activation_stats, forward order).
  struct Layer {
    std::string name, type;     ///< "1", "ReLU"
    std::vector<int64_t> shape;  ///< the output's shape, e.g. [64, 128]
    Histogram histogram;
  };
  /// One parameter's ||grad|| per step (gradient_stats).
  struct Series {
    std::string name;
    std::vector<double> values;
  };

  LRCurve lr_range;
  std::vector<Layer> activations;
  std::vector<Series> grad_norms;
};

}  // namespace gradlab::diagnose
