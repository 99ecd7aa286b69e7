#pragma once
// Data checks: what is wrong with the tensors before any model sees them. Each takes the
// inputs [N, ...] and/or the targets [N] (class indices, int64) of a split and returns one
// Finding of stage Data.
//
//   auto f = diagnose::check_label_range(train.targets(), 10);
//   if (f.failed()) std::cout << f << "\n";   // [fail] data/label_range: 144 of 1437 labels are
//                                            // outside [0, 10), the first: label 10 at index 23 ...

#include <cstdint>
#include <vector>

#include "gradlab/core/shape.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/diagnose/finding.hpp"

namespace gradlab::diagnose {

/// NaN or Inf in the inputs or targets (fail), naming the first one: "inputs[17, 3] = nan".
/// Targets may be undefined (unlabelled data).
Finding check_finite(const Tensor& inputs, const Tensor& targets = {});

/// Class indices outside [0, num_classes) (fail, with the first index and value and the range
/// seen, e.g. "labels span [1, 10]", and a "shifted by one" hint when they span [1, C]).
/// Non-integer targets are a fail too.
Finding check_label_range(const Tensor& targets, int64_t num_classes);

/// The label histogram and the imbalance ratio max count / min count (metrics "count_<c>",
/// "imbalance_ratio", "missing_classes"). warn when a class never appears or the ratio exceeds
/// `max_ratio`; never fail (imbalance can be real).
Finding check_label_balance(const Tensor& targets, int64_t num_classes, double max_ratio = 10.0);

/// Features (elements of one sample, flattened) with zero variance over the split. A few are
/// information, not a warning (ok, listed in the evidence: e.g. the always-blank corners of the
/// digits); warn when more than `warn_fraction` of the features are constant (0: warn on any);
/// fail when every feature is constant (the inputs cannot tell the samples apart).
Finding check_constant_features(const Tensor& inputs, double warn_fraction = 0.25);

/// Reference statistics of correctly prepared inputs, as the user normalizes with them.
struct InputStats {
  /// Mean and std of the *raw* inputs (before normalization), per channel ([C]) or per position
  /// (one sample's shape, e.g. a mean image): what the pipeline subtracts and divides by.
  Tensor mean{}, std{};
  /// The inputs this check sees are normalized: (raw - mean) / std, so they should have mean ≈ 0,
  /// std ≈ 1. Set false when the model takes raw inputs (then they should match mean and std).
  bool normalized = true;
  /// The channel dim of a sample (0 for [C, H, W]); per-channel statistics broadcast along it.
  int64_t channel_dim = 0;
  /// Shape of one sample as an image, e.g. {1, 8, 8} for flattened [N, 64] digits: needed to
  /// test the "transposed image" hypothesis on flattened inputs. Empty: the inputs' own shape.
  Shape sample_shape{};
};

/// Per-channel mean and std of the inputs (metrics "mean_<c>", "std_<c>").
/// Without reference statistics: warn when the inputs look unnormalized (a channel with
/// |mean| > 1 or std outside [0.2, 5]). With them: the observed per-position means and stds are
/// compared with what each hypothesis predicts — prepared as expected, normalization missing, image
/// transposed (H and W swapped), channels reversed (RGB ↔ BGR), and their combinations — and the
/// best fit other than "as expected" is a fail naming it.
Finding check_input_stats(const Tensor& inputs, const InputStats& expected = {});

/// Rows of `b` that also appear, bit for bit, in `a` (e.g. test images in the training set):
/// fail when more than `max_fraction` of b's rows leak, warn for fewer; metrics "duplicates",
/// "fraction"; evidence names the first pair (b row j == a row i).
Finding check_split_leakage(const Tensor& a, const Tensor& b, double max_fraction = 0.01);

/// Rows of the inputs that repeat an earlier row bit for bit (hashed: O(N) expected); metrics
/// "duplicates" (rows that repeat an earlier one), "fraction", "conflicting" (those whose target
/// differs from the row they repeat). A few duplicates are information (ok, naming the first
/// pair); warn when more than `warn_fraction` of the rows repeat. Conflicting duplicates (the same
/// input with two labels) are worse: warn for a few, fail above `warn_fraction`. Targets may be
/// undefined (then no conflicts are looked for).
Finding check_duplicates(const Tensor& inputs, const Tensor& targets = {}, double warn_fraction = 0.01);

/// Reads up to `max_batches` batches of one pass of `loader` (through a replica at the same
/// epoch and position: the loader itself does not move, so a const loader works) and compares the labels per batch with what a shuffled loader gives: fail when
/// batches hold far fewer distinct labels than shuffling would (sorted by label, shuffle
/// forgotten). The label frequencies come from the batches read (the uniform ones over
/// num_classes when those batches miss some classes). metrics "distinct_per_batch",
/// "expected_distinct_per_batch".
Finding check_loader_order(const data::DataLoader& loader, int64_t num_classes, size_t max_batches = 16);

/// Every data check that applies: finite, label range and balance (when num_classes > 0),
/// constant features (`constant_warn_fraction` as check_constant_features' warn_fraction),
/// duplicates, input statistics; leakage when `holdout_inputs` is defined.
std::vector<Finding> check_data(const Tensor& inputs, const Tensor& targets, int64_t num_classes,
                                const InputStats& expected = {}, const Tensor& holdout_inputs = {},
                                double constant_warn_fraction = 0.25);

}  // namespace gradlab::diagnose
