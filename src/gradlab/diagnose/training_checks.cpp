// Training checks: short runs with the user's optimizer, each undone by a TrainingSnapshot.

#include "gradlab/diagnose/training_checks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "gradlab/autograd/anomaly.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/diagnose/internal.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::diagnose {
using detail::make;
using detail::num;

namespace {

constexpr Stage kTraining = Stage::Training;

StateDict deep_copy(const StateDict& sd) {
  StateDict out;
  NoGradGuard no_grad;
  for (const auto& [k, v] : sd) out.insert(k, v.defined() ? v.detach().clone() : v);
  return out;
}

double lr_of(const optim::Optimizer& opt) {
  return opt.param_groups().empty() ? 0.0 : opt.param_groups().front().options().get_lr();
}

void set_lr(optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) g.options().set_lr(lr);
}

// Restores the snapshot when it goes out of scope (also when a check throws).
class RestoreGuard {
 public:
  RestoreGuard(const Model& model, optim::Optimizer& opt, bool on)
      : model_(model), opt_(opt) {
    if (on) snap_.emplace(*model.module, opt);
  }
  ~RestoreGuard() {
    if (!snap_) return;
    try {
      snap_->restore(*model_.module, opt_);
    } catch (...) {  // NOTE: a destructor must not throw; restore only copies values it saved
    }
  }
  RestoreGuard(const RestoreGuard&) = delete;
  RestoreGuard& operator=(const RestoreGuard&) = delete;

 private:
  const Model& model_;
  optim::Optimizer& opt_;
  std::optional<TrainingSnapshot> snap_;
};

struct StepResult {
  double loss = 0, accuracy = -1, grad_norm = 0;
};

double accuracy_of(const Loss& loss, const Tensor& out, const Tensor& targets) {
  if (!loss.takes_class_indices() || out.dim() != 2) return -1;
  NoGradGuard no_grad;
  return mean((argmax(out.detach(), 1) == targets).to(kFloat64)).item<double>();
}

// zero_grad -> forward -> loss -> backward -> step; the loss and accuracy are those before the step.
StepResult train_step(const Model& model, const Loss& loss, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  const Tensor out = model(x);
  const Tensor l = loss(out, y);
  StepResult r;
  r.loss = l.item<double>();
  r.accuracy = accuracy_of(loss, out, y);
  if (!std::isfinite(r.loss)) return r;
  if (!l.requires_grad()) return r;  // no parameter reaches the loss: grad norm 0, nothing to step
  l.backward();
  double sq = 0;
  for (const Tensor& p : model.module->parameters())
    if (p.grad().defined()) {
      const double n = norm(p.grad().detach().to(kFloat64)).item<double>();
      sq += n * n;
    }
  r.grad_norm = std::sqrt(sq);
  opt.step();
  return r;
}

void check_pair(const char* op, const Tensor& x, const Tensor& y) {
  GRADLAB_CHECK(x.defined() && x.dim() >= 1 && x.size(0) > 0, ShapeError, op, "inputs must be a batch [B, ...]",
                "[B, ...] with B >= 1", x.defined() ? shape_str(x.sizes()) : std::string("undefined"));
  GRADLAB_CHECK(y.defined() && y.dim() >= 1 && y.size(0) == x.size(0), ShapeError, op,
                "targets must have one row per input", "[" + std::to_string(x.size(0)) + ", ...]",
                y.defined() ? shape_str(y.sizes()) : std::string("undefined"));
}

// A non-finite value at the first step, before any update, cannot come from the LR (no step has
// used it yet): the model computes it from finite inputs and its initial weights.
const char* const kNotTheLR =
    "this is before any update, so not the LR: an op outside its domain in forward (sqrt or log at 0, a "
    "division by 0, exp overflowing); nonfinite_watch names the op";

int64_t not_held(const Model& model, const optim::Optimizer& opt) {
  std::unordered_set<const void*> held;
  for (const Tensor& p : opt.parameters()) held.insert(p.impl());
  int64_t n = 0;
  for (const Tensor& p : model.module->parameters())
    if (p.requires_grad() && !held.count(p.impl())) ++n;
  return n;
}

}  // namespace

TrainingSnapshot::TrainingSnapshot(const nn::Module& model, const optim::Optimizer& optimizer)
    : model_(deep_copy(model.state_dict())), optimizer_(deep_copy(optimizer.state_dict())) {}

void TrainingSnapshot::restore(nn::Module& model, optim::Optimizer& optimizer) const {
  model.load_state_dict(model_);
  optimizer.load_state_dict(optimizer_);
  model.zero_grad();
}

// ---- overfit one batch ---------------------------------------------------------------------------

Finding overfit_one_batch(const Model& model, const Loss& loss, optim::Optimizer& optimizer, const Tensor& inputs,
                          const Tensor& targets, const OverfitOptions& options) {
  check_pair("diagnose::overfit_one_batch", inputs, targets);
  GRADLAB_CHECK(options.steps >= 2, ValueError, "diagnose::overfit_one_batch", "needs at least 2 steps", ">= 2",
                std::to_string(options.steps));
  RestoreGuard restore(model, optimizer, options.restore);
  const double lr = lr_of(optimizer);
  std::vector<double> losses;
  double acc = -1, first_grad = 0;
  bool passed = false, nonfinite = false;
  // The loss is still falling at the end when it fell by 5% or more overall and the last quarter
  // of the run lowered it by more than a fifth of that drop or by more than 5% of its value (a
  // curve that slows down geometrically, as with a small but working LR): undecided, so run on
  // (up to max_steps) before judging.
  auto still_falling = [&] {
    const double drop = losses.front() - *std::min_element(losses.begin(), losses.end());
    const double last = losses[losses.size() * 3 / 4] - losses.back();
    return drop >= 0.05 * std::abs(losses.front()) && (last > 0.2 * drop || last > 0.05 * std::abs(losses.back()));
  };
  const int64_t max_steps = std::max(options.steps, options.max_steps);
  for (int64_t s = 0; s < max_steps; ++s) {
    if (s >= options.steps && s % options.steps == 0 && !still_falling()) break;
    const StepResult r = train_step(model, loss, optimizer, inputs, targets);
    losses.push_back(r.loss);
    acc = r.accuracy;
    if (s == 0) first_grad = r.grad_norm;
    if (!std::isfinite(r.loss) || (s == 0 && !std::isfinite(r.grad_norm))) {
      nonfinite = true;
      break;
    }
    if (r.loss < options.loss_threshold || (options.accept_full_accuracy && acc >= 1.0)) {
      passed = true;
      break;
    }
  }
  const double initial = losses.front(), final_loss = losses.back();
  const double min_loss = *std::min_element(losses.begin(), losses.end(), [](double a, double b) {
    return std::isnan(b) || a < b;  // NaN never counts as the minimum
  });
  Finding f = make(kTraining, "overfit_one_batch", Verdict::Ok, "");
  f.metrics["initial_loss"] = initial;
  f.metrics["final_loss"] = final_loss;
  f.metrics["min_loss"] = min_loss;
  f.metrics["accuracy"] = acc;
  f.metrics["steps_run"] = static_cast<double>(losses.size());
  f.metrics["lr"] = lr;
  f.metrics["initial_grad_norm"] = first_grad;
  const int64_t run_steps = static_cast<int64_t>(losses.size());
  const std::string budget = run_steps > options.steps
                                 ? std::to_string(options.steps) + " (+ up to " + std::to_string(max_steps - options.steps) +
                                       " while still falling)"
                                 : std::to_string(options.steps);
  const std::string run = "loss " + num(initial) + " -> " + num(final_loss) + " in " + std::to_string(run_steps) +
                          " of " + budget + " steps on one batch of " +
                          std::to_string(inputs.size(0)) + (acc >= 0 ? ", accuracy " + num(100 * acc, 3) + "%" : "") +
                          " (" + optimizer.name() + ", lr " + num(lr) + ")";
  if (passed) {
    f.evidence = run + ": memorized";
    return f;
  }
  f.verdict = Verdict::Fail;
  const double drop = initial - min_loss;
  if (!std::isfinite(initial) || !std::isfinite(first_grad)) {
    f.metrics["symptom"] = 2;
    f.evidence = run + ": the first step already gives a non-finite " +
                 (std::isfinite(initial) ? "gradient (norm " + num(first_grad) + ")" : std::string("loss"));
    f.hint = kNotTheLR;
  } else if (nonfinite || final_loss > 1.1 * initial) {
    f.metrics["symptom"] = 2;
    f.evidence = run + ": rising loss" + (nonfinite ? " (not finite)" : "");
    f.hint = "the LR is too large (" + num(lr) + "): lower it 10x (an LR range test gives a range), add gradient "
             "clipping, or use Adam/AdamW";
  } else if (drop < 0.05 * std::abs(initial)) {
    f.metrics["symptom"] = 1;
    const int64_t missing = not_held(model, optimizer);
    f.evidence = run + ": flat loss (fell " + num(100 * drop / std::abs(initial), 3) + "%); gradient norm " +
                 num(first_grad) + ", " + std::to_string(missing) + " trainable parameters not in the optimizer";
    if (lr == 0)
      f.hint = "the LR is 0: no step moves the weights; set a positive LR (or check a scheduler that decays it to 0)";
    else if (first_grad == 0)
      f.hint = "zero gradient: the loss does not depend on the parameters (a detach, a dead activation, a constant "
               "output); check gradient_flow";
    else if (missing > 0)
      f.hint = "parameters missing from the optimizer: build it from model->parameters()";
    else
      f.hint = "the LR is too small (" + num(lr) + ") for the gradient: raise it 10x, or check that step() is called";
  } else if (still_falling()) {
    f.metrics["symptom"] = 3;
    f.evidence = run + ": still falling at the end";
    f.hint = "the LR is too small (" + num(lr) + ") or the steps too few: raise the LR (an LR range test gives a range)";
  } else {
    f.metrics["symptom"] = 4;
    f.evidence = run + ": a plateau at " + num(final_loss) + ", above " + num(options.loss_threshold);
    f.hint = "the model cannot fit even one batch: too little capacity (a layer left out, too narrow, no "
             "nonlinearity), or label noise (identical inputs with different labels)";
  }
  return f;
}

// ---- LR range test ---------------------------------------------------------------------------------

LRRangeResult lr_range_test(const Model& model, const Loss& loss, optim::Optimizer& optimizer, const Tensor& inputs,
                            const Tensor& targets, const LRRangeOptions& options) {
  check_pair("diagnose::lr_range_test", inputs, targets);
  GRADLAB_CHECK(options.lr_min > 0 && options.lr_max > options.lr_min && options.steps >= 2, ValueError,
                "diagnose::lr_range_test", "needs 0 < lr_min < lr_max and steps >= 2", "a log-spaced sweep",
                "lr_min " + num(options.lr_min) + ", lr_max " + num(options.lr_max) + ", steps " + std::to_string(options.steps));
  const double user_lr = lr_of(optimizer);
  LRRangeResult r;
  bool first_nonfinite = false;  // the first step (before any update) is not finite: no curve to read
  {
    RestoreGuard restore(model, optimizer, options.restore);
    const std::vector<int64_t> perm = detail::permutation(inputs.size(0), options.seed);
    const int64_t bs = std::min<int64_t>(options.batch_size, inputs.size(0));
    // Exponential moving average of the loss, bias-corrected (as fastai's lr_find).
    constexpr double kBeta = 0.7;
    double avg = 0, best = std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < options.steps && !first_nonfinite; ++k) {
      const double lr = options.lr_min * std::pow(options.lr_max / options.lr_min, static_cast<double>(k) / static_cast<double>(options.steps - 1));
      set_lr(optimizer, lr);
      const StepResult s = train_step(model, loss, optimizer, detail::rows(inputs, perm, k * bs, bs), detail::rows(targets, perm, k * bs, bs));
      first_nonfinite = k == 0 && (!std::isfinite(s.loss) || !std::isfinite(s.grad_norm));
      avg = kBeta * avg + (1 - kBeta) * s.loss;
      const double smooth = avg / (1 - std::pow(kBeta, static_cast<double>(k + 1)));
      r.lrs.push_back(lr);
      r.losses.push_back(smooth);
      if (!std::isfinite(smooth) || (k > 2 && smooth > options.divergence_factor * best)) {
        r.diverged_lr = lr;
        break;
      }
      if (smooth < best) {
        best = smooth;
        r.best_lr = lr;
      }
    }
  }
  set_lr(optimizer, user_lr);  // (restore puts it back too; this covers restore = false)
  r.suggested_max = r.best_lr / 10;
  r.suggested_min = r.best_lr / 100;
  Finding& f = r.finding;
  f = make(kTraining, "lr_range", Verdict::Ok, "");
  f.metrics["best_lr"] = r.best_lr;
  f.metrics["diverged_lr"] = r.diverged_lr;
  f.metrics["suggested_min"] = r.suggested_min;
  f.metrics["suggested_max"] = r.suggested_max;
  f.metrics["lr"] = user_lr;
  f.evidence = "LR swept " + num(options.lr_min) + " .. " + num(r.lrs.back()) + " in " + std::to_string(r.lrs.size()) +
               " steps: lowest loss at lr " + num(r.best_lr, 3) +
               (r.diverged_lr > 0 ? ", diverged at lr " + num(r.diverged_lr, 3) : ", no divergence") +
               "; suggested range [" + num(r.suggested_min, 3) + ", " + num(r.suggested_max, 3) + "]; the optimizer's lr is " +
               num(user_lr, 3);
  if (first_nonfinite) {
    f.verdict = Verdict::Fail;
    f.evidence = "the first step of the sweep (lr " + num(options.lr_min) + ") already gives a non-finite loss or "
                 "gradient: no LR can be judged";
    f.hint = kNotTheLR;
  } else if (r.diverged_lr > 0 && user_lr >= r.diverged_lr) {
    f.verdict = Verdict::Fail;
    f.hint = "lr " + num(user_lr, 3) + " is past the point where the loss blows up: use about " + num(r.suggested_max, 3);
  } else if (r.best_lr > 0 && user_lr > r.best_lr) {
    f.verdict = Verdict::Warn;
    f.hint = "lr " + num(user_lr, 3) + " is above the lowest-loss LR: training may be unstable; try about " + num(r.suggested_max, 3);
  } else if (r.best_lr > 0 && user_lr < r.suggested_min / 10) {
    f.verdict = Verdict::Warn;
    f.hint = "lr " + num(user_lr, 3) + " is far below the suggested range: training will crawl; try about " + num(r.suggested_max, 3);
  }
  return r;
}

// ---- gradient norms and update ratios ----------------------------------------------------------------

GradientStatsResult gradient_stats(const Model& model, const Loss& loss, optim::Optimizer& optimizer,
                                   const Tensor& inputs, const Tensor& targets, const GradientStatsOptions& options) {
  check_pair("diagnose::gradient_stats", inputs, targets);
  GradientStatsResult r;
  bool nonfinite = false;
  int64_t nonfinite_step = -1;
  std::string nonfinite_name;
  {
    RestoreGuard restore(model, optimizer, options.restore);
    const std::vector<int64_t> perm = detail::permutation(inputs.size(0), options.seed);
    const int64_t bs = std::min<int64_t>(options.batch_size, inputs.size(0));
    nn::NamedTensors params;
    for (auto& [name, p] : model.module->named_parameters())
      if (p.requires_grad()) params.emplace_back(name, p);
    for (auto& [name, p] : params) r.parameters.push_back({name, {}, {}});
    for (int64_t k = 0; k < options.steps && !nonfinite; ++k) {
      optimizer.zero_grad();
      const Tensor l = loss(model(detail::rows(inputs, perm, k * bs, bs)), detail::rows(targets, perm, k * bs, bs));
      if (l.requires_grad()) l.backward();
      std::vector<Tensor> before;
      {
        NoGradGuard no_grad;
        for (auto& [name, p] : params) before.push_back(p.detach().to(kFloat64));
        if (k == 0)
          for (size_t i = 0; i < params.size(); ++i)
            r.parameters[i].constant_start =
                before[i].numel() > 0 && before[i].max().item<double>() == before[i].min().item<double>();
      }
      for (size_t i = 0; i < params.size(); ++i) {
        const Tensor& g = params[i].second.grad();
        const double gn = g.defined() ? norm(g.detach().to(kFloat64)).item<double>() : 0.0;
        r.parameters[i].grad_norm.push_back(gn);
        if (!std::isfinite(gn) && !nonfinite) {
          nonfinite = true;
          nonfinite_step = k;
          nonfinite_name = params[i].first;
        }
      }
      optimizer.step();
      NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) {
        const double w = norm(before[i]).item<double>();
        const double d = norm(params[i].second.detach().to(kFloat64) - before[i]).item<double>();
        r.parameters[i].update_ratio.push_back(w > 0 ? d / w : d);
      }
    }
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Finding& f = r.finding;
  f = make(kTraining, "gradient_stats", Verdict::Ok, "");
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  std::string lo_name, hi_name, table;
  std::vector<std::string> zero;
  std::vector<double> judged;  // the median update ratio of each parameter the ratio rules judge
  for (const ParameterStepStats& p : r.parameters) {
    const double g = median(p.grad_norm), u = median(p.update_ratio);
    f.metrics["grad_norm_" + p.name] = g;
    f.metrics["update_ratio_" + p.name] = u;
    table += "\n" + p.name + ": grad norm " + num(g, 3) + ", update/weight " + num(u, 3);
    if (g == 0) zero.push_back(p.name);
    if (p.constant_start) {  // a bias at 0, a norm weight at 1: ||Δw|| / ||w|| says nothing yet
      table += " (starts constant: not judged)";
      continue;
    }
    judged.push_back(u);
    if (u < lo) lo = u, lo_name = p.name;
    if (u > hi || std::isnan(u)) hi = u, hi_name = p.name;
  }
  f.metrics["max_update_ratio"] = hi;
  f.metrics["min_update_ratio"] = std::isinf(lo) ? 0.0 : lo;
  const std::string lr = " (" + optimizer.name() + ", lr " + num(lr_of(optimizer)) + ")";
  f.evidence = "median over " + std::to_string(options.steps) + " steps per parameter" + lr + ":" + table;
  if (nonfinite) {
    f.verdict = Verdict::Fail;
    f.evidence = "the gradient of " + nonfinite_name + " is not finite at step " + std::to_string(nonfinite_step) + "; " +
                 f.evidence;
    f.hint = nonfinite_step == 0 ? kNotTheLR : "see nonfinite_watch for the op where it was born; lower the LR, clip gradients";
  } else if (!(hi <= options.fail_ratio)) {
    f.verdict = Verdict::Fail;
    f.evidence = "one step changes " + hi_name + " by " + num(hi, 3) + " of its size; " + f.evidence;
    f.hint = "updates as large as the weights: the LR is far too large; aim for update/weight ratios near 1e-3";
  } else if (hi > options.max_ratio) {
    f.verdict = Verdict::Warn;
    f.hint = "large updates on " + hi_name + " (" + num(hi, 3) + " of its size per step): the LR may be too large";
  } else if (!zero.empty() || median(judged) < options.min_ratio) {
    f.verdict = Verdict::Warn;
    f.hint = zero.empty() ? "tiny updates on " + lo_name + " (" + num(lo, 3) + ") and most other parameters (median " +
                                num(median(judged), 3) + "): the LR is too small or the gradients vanish"
                          : zero.front() + " gets a zero gradient: a dead path (dead ReLU, a multiplication by 0)";
  }
  return r;
}

// ---- non-finite watch --------------------------------------------------------------------------------

Finding watch_nonfinite(const Model& model, const Loss& loss, optim::Optimizer& optimizer, const Tensor& inputs,
                        const Tensor& targets, const NonFiniteOptions& options) {
  check_pair("diagnose::watch_nonfinite", inputs, targets);
  RestoreGuard restore(model, optimizer, options.restore);
  const std::vector<int64_t> perm = detail::permutation(inputs.size(0), options.seed);
  const int64_t bs = std::min<int64_t>(options.batch_size, inputs.size(0));
  Finding f = make(kTraining, "nonfinite_watch", Verdict::Ok, "");
  auto stop = [&](int64_t step, int phase, const std::string& what, const std::string& hint) {
    f.verdict = Verdict::Fail;
    f.metrics["step"] = static_cast<double>(step);
    f.metrics["phase"] = phase;
    f.evidence = "step " + std::to_string(step) + ": " + what;
    f.hint = hint;
    return f;
  };
  const std::string lr_hint = "most NaNs trace back to the LR: lower it 10x, clip the gradient norm "
                              "(nn::utils::clip_grad_norm_) or use AdamW; then check the init and the input scale";
  // Anomaly mode names the op's own line; for an op inside a library module that no user line
  // calls (a layer of a Sequential) that is a line of gradlab's sources, so add the user's.
  // `given`/`given_what`: the model's or the loss's line (Model::site, Loss::site), by where it was born.
  auto anomaly = [&](const autograd::AnomalyError& e, const Site& given, const std::string& given_what) {
    std::string what = e.what();
    if (e.op_site.in_library() && !e.module_site.known())
      what += "\n  that op is " + detail::user_site(e.op_site, e.module_site, given, given_what);
    return what;
  };
  // A backward node may be the model's or the loss's.
  const bool same_line = model.site.loc.line() == loss.site.loc.line() &&
                         std::string_view(model.site.loc.file_name()) == loss.site.loc.file_name();
  const std::string backward_what = same_line ? "the model or the loss" : "the model";
  autograd::DetectAnomalyGuard anomaly_mode;
  for (int64_t k = 0; k < options.steps; ++k) {
    const Tensor x = detail::rows(inputs, perm, k * bs, bs), y = detail::rows(targets, perm, k * bs, bs);
    for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{x, "inputs"}, {y, "targets"}}) {
      if (!t.is_floating_point()) continue;
      const autograd::TensorStats s = autograd::tensor_stats(t);
      if (!s.all_finite())
        return stop(k, 0, "the batch's " + std::string(name) + " are not finite (" + s.str(t) + "): born in the data",
                    "check_finite on the data names the first bad row: drop or repair it");
    }
    optimizer.zero_grad();
    Tensor out, l;
    try {
      out = model(x);
    } catch (const autograd::AnomalyError& e) {
      return stop(k, 1, anomaly(e, model.site, "the model"), k == 0 ? kNotTheLR : lr_hint);
    }
    try {
      l = loss(out, y);
    } catch (const autograd::AnomalyError& e) {
      return stop(k, 1, anomaly(e, loss.site, "the loss"), k == 0 ? kNotTheLR : lr_hint);
    }
    if (!std::isfinite(l.item<double>()))
      return stop(k, 1, "the loss is " + num(l.item<double>()) + " (no single op turned finite values into it)",
                  k == 0 ? kNotTheLR : lr_hint);
    try {
      if (l.requires_grad()) l.backward();
    } catch (const autograd::AnomalyError& e) {
      return stop(k, 2, anomaly(e, model.site, backward_what), k == 0 ? kNotTheLR : lr_hint);
    }
    optimizer.step();
    for (const auto& [name, p] : model.module->named_parameters()) {
      const autograd::TensorStats s = autograd::tensor_stats(p);
      if (!s.all_finite())
        return stop(k, 3, "the update made " + name + " non-finite (" + s.str(p) + ") from finite gradients", lr_hint);
    }
  }
  f.metrics["step"] = -1;
  f.evidence = std::to_string(options.steps) + " steps under anomaly mode: every input, loss, gradient and parameter "
               "stayed finite";
  return f;
}

// ---- loader speed ----------------------------------------------------------------------------------

Finding check_loader_speed(const Model& model, const Loss& loss, optim::Optimizer& optimizer,
                           const data::DataLoader& loader, const LoaderSpeedOptions& options) {
  GRADLAB_CHECK(options.batches >= 1, ValueError, "diagnose::check_loader_speed", "needs at least 1 timed batch",
                ">= 1", std::to_string(options.batches));
  GRADLAB_CHECK(options.max_wait_ratio > 0, ValueError, "diagnose::check_loader_speed",
                "max_wait_ratio must be positive", "> 0", num(options.max_wait_ratio));
  RestoreGuard restore(model, optimizer, options.restore);
  const std::unique_ptr<data::DataLoader> reader = detail::replica(loader);
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::vector<double> waits, steps;
  bool unlabelled = false;
  int64_t k = 0;
  Clock::time_point asked = Clock::now();
  for (auto it = reader->begin(); it != reader->end() && k <= options.batches; ++it, ++k) {
    const Clock::time_point got = Clock::now();
    const data::Batch& b = *it;
    if (!b.target.defined()) {
      unlabelled = true;
      break;
    }
    train_step(model, loss, optimizer, b.data, b.target);
    const Clock::time_point done = Clock::now();
    if (k > 0) {  // batch 0 is the warm-up
      waits.push_back(ms(asked, got));
      steps.push_back(ms(got, done));
    }
    asked = Clock::now();
  }
  const size_t workers = loader.options().num_workers_;
  Finding f = make(kTraining, "loader_speed", Verdict::Ok, "");
  f.metrics["num_workers"] = static_cast<double>(workers);
  f.metrics["batches"] = static_cast<double>(waits.size());
  if (unlabelled || waits.empty()) {
    f.evidence = unlabelled ? "the loader's batches have no targets: no training step to time"
                            : "the loader has fewer than 2 batches left in this epoch: nothing to time";
    return f;
  }
  // Medians: one batch delayed by the machine (another process, a page fault) does not decide.
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  };
  const double wait = median(waits), step = median(steps);
  const double ratio = step > 0 ? wait / step : (wait > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  f.metrics["wait_ms"] = wait;
  f.metrics["step_ms"] = step;
  f.metrics["wait_ratio"] = ratio;
  f.evidence = "over " + detail::plural(static_cast<int64_t>(waits.size()), "batch") + " (num_workers " +
               std::to_string(workers) + "): waiting for a batch took a median " + num(wait, 3) +
               " ms, a training step (forward, backward, " + optimizer.name() + " step) " + num(step, 3) +
               " ms: the wait is " + num(ratio, 3) + "x the step";
  if (ratio > options.max_wait_ratio) {
    f.verdict = Verdict::Warn;
    f.evidence += " (the model idles, waiting for data)";
    f.hint = "raise num_workers (now " + std::to_string(workers) +
             ") so batches are prepared while the model trains, move decoding out of get() (decode once, keep the "
             "tensors in memory), or give the dataset a get_batch (one call per batch)";
  }
  return f;
}

}  // namespace gradlab::diagnose
