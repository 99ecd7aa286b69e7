#pragma once
// doctor: the data, model and training checks in that order, as one report. A stage that fails
// stops the run (a model check says little about mislabelled data, a training check little about
// a model whose layers never see the loss), and the report says where it stopped. With
// keep_going every stage runs, and what a later stage finds is worded as a possible consequence
// of the first failure (Report::defer_to).
//
//   auto report = diagnose::doctor(net, nn::CrossEntropyLoss(), opt,
//                                  {.inputs = train.data(), .targets = train.targets()},
//                                  {.num_classes = 10});
//   std::cout << report;                 // text; report.json() for tools
//   report.html("doctor.html");          // one page: the findings and their charts
//   if (report.has_failure()) return 1;

#include <cstdint>

#include "gradlab/core/shape.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/diagnose/data_checks.hpp"
#include "gradlab/diagnose/finding.hpp"
#include "gradlab/diagnose/model.hpp"
#include "gradlab/diagnose/model_checks.hpp"
#include "gradlab/diagnose/training_checks.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::diagnose {

/// The training loader doctor reads, never moves (its checks read a replica at the same epoch and
/// position): a pointer (`&loader`, null for none) or a loader itself, const or a temporary
/// (`.loader = data::DataLoader(set, options)`: a temporary lives until doctor returns when the
/// DoctorData is built in the call; do not keep such a DoctorData beyond it).
class LoaderRef {
 public:
  LoaderRef(const data::DataLoader* loader = nullptr) : loader_(loader) {}  // NOLINT: .loader = &loader
  LoaderRef(const data::DataLoader& loader) : loader_(&loader) {}           // NOLINT: .loader = loader
  explicit operator bool() const { return loader_ != nullptr; }
  const data::DataLoader& operator*() const { return *loader_; }
  const data::DataLoader* operator->() const { return loader_; }
  const data::DataLoader* get() const { return loader_; }

 private:
  const data::DataLoader* loader_;
};

/// What doctor looks at: the training split (as the model takes it), optionally a held-out
/// split (its inputs for leakage, its targets for their label range) and the training loader
/// (for shuffling and its speed). Named fields, in this order, for designated initializers:
///   {.inputs = x, .targets = y, .holdout_inputs = xt, .holdout_targets = yt, .loader = &loader}
struct DoctorData {
  Tensor inputs{};
  Tensor targets{};
  Tensor holdout_inputs{};
  Tensor holdout_targets{};
  LoaderRef loader{};
};

/// Options of doctor.
struct DoctorOptions {
  /// Classes of a class-index loss; 0: the model's output width (dim 1).
  int64_t num_classes = 0;
  /// Reference statistics of the raw inputs (check_input_stats); undefined mean: skipped.
  InputStats input_stats{};
  /// The model and training stages use batches of this many rows of a seeded permutation.
  int64_t batch_size = 64;
  uint64_t seed = 0;
  /// Expected output shape per sample (e.g. {10}); empty: [batch, num_classes] for class-index
  /// losses, the targets' shape otherwise.
  Shape expected_output{};
  ActivationOptions activations{};
  OverfitOptions overfit{};
  /// The LR range test gives the hint of an LR failure; it costs ~60 steps.
  bool lr_range_test = true;
  LRRangeOptions lr_range{};
  GradientStatsOptions gradients{};
  NonFiniteOptions nonfinite{};
  /// Vanishing / exploding gradients across depth (model stage).
  LayerGradientOptions layer_gradients{};
  /// The loader as the bottleneck (training stage, when DoctorData::loader is given).
  LoaderSpeedOptions loader_speed{};
  /// Run every stage even after a failure (default: stop at the first failed stage).
  bool keep_going = false;
};

/// Runs the stages data -> model -> training, stopping after the first that fails. The model
/// and optimizer are left as they were (every training check restores them). A gradlab::Error
/// thrown by the user's model, loss or optimizer inside a check becomes a failed finding of that
/// stage ("the check could not run: ..."); bad arguments to doctor itself throw. report.charts
/// keeps the curves of the checks that ran (activation histograms, the LR sweep, gradient norms)
/// for report.html().
Report doctor(const Model& model, const Loss& loss, optim::Optimizer& optimizer, const DoctorData& data,
              const DoctorOptions& options = {});

}  // namespace gradlab::diagnose
