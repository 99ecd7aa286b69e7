// doctor: data -> model -> training, stopping at the first stage that fails.

#include "gradlab/diagnose/doctor.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/diagnose/internal.hpp"

namespace gradlab::diagnose {

namespace {

// Runs one group of checks; an exception from the user's model, loss or optimizer (a shape that
// does not fit, a label the loss rejects) becomes a failed finding of that stage instead of
// ending the report.
template <class F>
std::vector<Finding> guarded(Stage stage, const char* check, F&& run) {
  try {
    return run();
  } catch (const Error& e) {
    return {detail::make(stage, check, Verdict::Fail, std::string("the check could not run: ") + e.what(),
                         "fix this error first: the " + to_string(stage) + " stage cannot be judged past it")};
  }
}

}  // namespace

Report doctor(const Model& model, const Loss& loss, optim::Optimizer& optimizer, const DoctorData& data,
              const DoctorOptions& options) {
  const char* op = "diagnose::doctor";
  GRADLAB_CHECK(data.inputs.defined() && data.inputs.dim() >= 1 && data.inputs.size(0) >= 2, ShapeError, op,
                "needs a training split of two rows or more", "inputs [N, ...] with N >= 2",
                data.inputs.defined() ? shape_str(data.inputs.sizes()) : std::string("undefined"));
  GRADLAB_CHECK(data.targets.defined() && data.targets.size(0) == data.inputs.size(0), ShapeError, op,
                "needs one target per input row", std::to_string(data.inputs.size(0)) + " targets",
                data.targets.defined() ? shape_str(data.targets.sizes()) : std::string("undefined"));
  GRADLAB_CHECK(!data.holdout_targets.defined() ||
                    (data.holdout_inputs.defined() && data.holdout_targets.dim() >= 1 &&
                     data.holdout_targets.size(0) == data.holdout_inputs.size(0)),
                ShapeError, op, "needs one held-out target per held-out input row",
                data.holdout_inputs.defined() ? std::to_string(data.holdout_inputs.size(0)) + " held-out targets"
                                              : std::string("holdout_inputs with the targets"),
                shape_str(data.holdout_targets.sizes()));
  Report report;
  const std::vector<int64_t> perm = detail::permutation(data.inputs.size(0), options.seed);
  const int64_t bs = std::min<int64_t>(options.batch_size, data.inputs.size(0));
  const Tensor xb = detail::rows(data.inputs, perm, 0, bs), yb = detail::rows(data.targets, perm, 0, bs);

  int64_t classes = options.num_classes;
  if (classes <= 0 && loss.takes_class_indices()) {
    NoGradGuard no_grad;
    try {
      const Tensor out = model(xb.narrow(0, 0, std::min<int64_t>(2, bs)));
      classes = out.dim() >= 2 ? out.size(1) : 0;
    } catch (const Error&) {
      classes = 0;  // the model stage reports the error; the data stage skips the label checks
    }
  }
  // With keep_going, the first failure of an earlier stage: the later stages' findings that are
  // not ok may be its consequences (NaN inputs make the LR range test "diverge", a softmax before
  // cross-entropy makes one batch "hard to overfit"), so their hint names it instead of blaming the
  // LR or the capacity.
  std::optional<Finding> cause;
  size_t stage_begin = 0;  // index of the current stage's first finding
  auto finish_stage = [&](Stage s) {
    if (std::find(report.stages_run.begin(), report.stages_run.end(), s) == report.stages_run.end())
      report.stages_run.push_back(s);
    if (cause) report.defer_to(stage_begin, *cause);
    stage_begin = report.findings().size();
    if (!report.has_failure(s)) return false;
    if (!options.keep_going) {
      report.stopped_at = s;
      return true;
    }
    if (!cause)
      for (const Finding& f : report.findings())
        if (f.failed()) {
          cause = f;
          break;
        }
    return false;
  };

  // 1. data
  report.add(guarded(Stage::Data, "data", [&] {
    // the targets go to check_finite as targets (regression targets too); the label checks need classes
    std::vector<Finding> fs = check_data(data.inputs, data.targets, loss.takes_class_indices() ? classes : 0,
                                         options.input_stats, data.holdout_inputs);
    if (data.holdout_targets.defined() && loss.takes_class_indices() && classes > 0) {
      Finding h = check_label_range(data.holdout_targets, classes);
      h.check = "holdout_label_range";
      h.evidence = "held-out split: " + h.evidence;
      fs.push_back(std::move(h));
    }
    if (data.loader && classes > 0) fs.push_back(check_loader_order(*data.loader, classes));
    return fs;
  }));
  if (finish_stage(Stage::Data)) return report;

  // 2. model, on one batch
  ModelCheckOptions mo;
  mo.activations = options.activations;
  mo.layer_gradients = options.layer_gradients;
  if (!options.expected_output.empty()) {
    mo.expected_output = {bs};
    mo.expected_output.insert(mo.expected_output.end(), options.expected_output.begin(), options.expected_output.end());
  } else if (loss.takes_class_indices()) {
    mo.expected_output = {bs, classes};
  } else {
    mo.expected_output = yb.sizes();
  }
  report.add(guarded(Stage::Model, "model", [&] {
    std::vector<LayerStats> layers;
    std::vector<Finding> fs = check_model(model, loss, xb, yb, &optimizer, mo, &layers);
    for (LayerStats& l : layers)
      report.charts.activations.push_back({std::move(l.name), std::move(l.type), l.shape, std::move(l.histogram)});
    return fs;
  }));
  if (finish_stage(Stage::Model)) return report;

  // 3. training
  report.add(guarded(Stage::Training, "overfit_one_batch", [&] {
    return std::vector<Finding>{overfit_one_batch(model, loss, optimizer, xb, yb, options.overfit)};
  }));
  if (options.lr_range_test) {
    LRRangeOptions lo = options.lr_range;
    lo.batch_size = bs;
    lo.seed = options.seed;
    report.add(guarded(Stage::Training, "lr_range", [&] {
      LRRangeResult r = lr_range_test(model, loss, optimizer, data.inputs, data.targets, lo);
      report.charts.lr_range = {r.lrs, r.losses, r.best_lr, r.diverged_lr, r.finding.metric("lr")};
      return std::vector<Finding>{std::move(r.finding)};
    }));
  }
  GradientStatsOptions go = options.gradients;
  go.batch_size = bs;
  go.seed = options.seed;
  report.add(guarded(Stage::Training, "gradient_stats", [&] {
    GradientStatsResult r = gradient_stats(model, loss, optimizer, data.inputs, data.targets, go);
    for (const ParameterStepStats& p : r.parameters) report.charts.grad_norms.push_back({p.name, p.grad_norm});
    return std::vector<Finding>{std::move(r.finding)};
  }));
  NonFiniteOptions no = options.nonfinite;
  no.batch_size = bs;
  no.seed = options.seed;
  report.add(guarded(Stage::Training, "nonfinite_watch", [&] {
    return std::vector<Finding>{watch_nonfinite(model, loss, optimizer, data.inputs, data.targets, no)};
  }));
  if (data.loader)
    report.add(guarded(Stage::Training, "loader_speed", [&] {
      return std::vector<Finding>{check_loader_speed(model, loss, optimizer, *data.loader, options.loader_speed)};
    }));
  finish_stage(Stage::Training);
  return report;
}

}  // namespace gradlab::diagnose
