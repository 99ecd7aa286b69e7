#include "gradlab/optim/schedulers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "gradlab/core/factories.hpp"

namespace gradlab::optim {

namespace {

Tensor num(double v) { return scalar_tensor(v, dtype(kFloat64)); }

double read(const StateDict& sd, const std::string& key) {
  const Tensor& t = sd.at(key);
  GRADLAB_CHECK(t.numel() == 1, ShapeError, "scheduler load_state_dict",
                "'" + key + "' must be one number", "a 0-d tensor", shape_str(t.sizes()));
  return t.item<double>();
}

// Python's a % m for m > 0 (never negative).
int64_t py_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

}  // namespace

// ---- LRScheduler -----------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) { base_lrs_ = group_lrs(); }

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> r;
  for (const auto& g : optimizer_.param_groups()) r.push_back(g.options().get_lr());
  return r;
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  std::vector<double> lrs = get_lr();
  auto& groups = optimizer_.param_groups();
  GRADLAB_CHECK(lrs.size() == groups.size(), ValueError, name(),
                "the optimizer's number of param groups changed after the scheduler was made",
                std::to_string(lrs.size()) + " groups", std::to_string(groups.size()) + " groups");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = std::move(lrs);
}

StateDict LRScheduler::state_dict() const {
  StateDict sd;
  sd.insert("last_epoch", num(static_cast<double>(last_epoch_)));
  sd.insert("step_count", num(static_cast<double>(step_count_)));
  for (size_t i = 0; i < base_lrs_.size(); ++i)
    sd.insert("base_lrs." + std::to_string(i), num(base_lrs_[i]));
  for (size_t i = 0; i < last_lr_.size(); ++i)
    sd.insert("last_lr." + std::to_string(i), num(last_lr_[i]));
  for (const auto& [k, v] : settings()) sd.insert(k, num(v));
  save_extra(sd);
  sd.metadata["scheduler"] = name();
  return sd;
}

void LRScheduler::load_state_dict(const StateDict& sd) {
  const size_t groups = base_lrs_.size();
  GRADLAB_CHECK(!sd.contains("base_lrs." + std::to_string(groups)) &&
                    sd.contains("base_lrs." + std::to_string(groups - 1)),
                ValueError, name() + "::load_state_dict",
                "the saved scheduler has another number of param groups",
                std::to_string(groups) + " groups", "a different number");
  std::vector<double> base, last;
  for (size_t i = 0; i < groups; ++i) {
    base.push_back(read(sd, "base_lrs." + std::to_string(i)));
    last.push_back(read(sd, "last_lr." + std::to_string(i)));
  }
  const auto epoch = static_cast<int64_t>(read(sd, "last_epoch"));
  const auto count = static_cast<int64_t>(read(sd, "step_count"));
  load_settings(sd);
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
  last_epoch_ = epoch;
  step_count_ = count;
}

// ---- StepLR ----------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  GRADLAB_CHECK(step_size > 0, ValueError, "StepLR", "step_size must be positive", "step_size > 0",
                std::to_string(step_size));
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}
std::vector<std::pair<std::string, double>> StepLR::settings() const {
  return {{"step_size", static_cast<double>(step_size_)}, {"gamma", gamma_}};
}
void StepLR::load_settings(const StateDict& sd) {
  step_size_ = static_cast<int64_t>(read(sd, "step_size"));
  gamma_ = read(sd, "gamma");
}

// ---- MultiStepLR -----------------------------------------------------------------------------

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (hits == 0) return lrs;
  for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(hits));
  return lrs;
}
std::vector<std::pair<std::string, double>> MultiStepLR::settings() const {
  return {{"gamma", gamma_}};
}
void MultiStepLR::save_extra(StateDict& sd) const {
  sd.insert("milestones", from_vector(milestones_, {static_cast<int64_t>(milestones_.size())}));
}
void MultiStepLR::load_settings(const StateDict& sd) {
  gamma_ = read(sd, "gamma");
  if (sd.contains("milestones")) milestones_ = sd.at("milestones").to_vector<int64_t>();
}

// ---- ExponentialLR ---------------------------------------------------------------------------

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}
std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}
std::vector<std::pair<std::string, double>> ExponentialLR::settings() const {
  return {{"gamma", gamma_}};
}
void ExponentialLR::load_settings(const StateDict& sd) { gamma_ = read(sd, "gamma"); }

// ---- CosineAnnealingLR -----------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  GRADLAB_CHECK(T_max > 0, ValueError, "CosineAnnealingLR", "T_max must be positive", "T_max > 0",
                std::to_string(T_max));
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  const double pi = std::numbers::pi, T = static_cast<double>(T_max_),
               t = static_cast<double>(last_epoch_);
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double base = base_lrs_[i];
    if (py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0) {
      lrs[i] = lrs[i] + (base - eta_min_) * (1 - std::cos(pi / T)) / 2;
    } else {
      lrs[i] = (1 + std::cos(pi * t / T)) / (1 + std::cos(pi * (t - 1) / T)) * (lrs[i] - eta_min_) +
               eta_min_;
    }
  }
  return lrs;
}
std::vector<std::pair<std::string, double>> CosineAnnealingLR::settings() const {
  return {{"T_max", static_cast<double>(T_max_)}, {"eta_min", eta_min_}};
}
void CosineAnnealingLR::load_settings(const StateDict& sd) {
  T_max_ = static_cast<int64_t>(read(sd, "T_max"));
  eta_min_ = read(sd, "eta_min");
}

// ---- LinearLR --------------------------------------------------------------------------------

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  GRADLAB_CHECK(
      start_factor > 0 && start_factor <= 1, ValueError, "LinearLR",
      "starting multiplicative factor expected to be greater than 0 and less or equal to 1",
      "0 < start_factor <= 1", std::to_string(start_factor));
  GRADLAB_CHECK(end_factor >= 0 && end_factor <= 1, ValueError, "LinearLR",
                "ending multiplicative factor expected to be between 0 and 1",
                "0 <= end_factor <= 1", std::to_string(end_factor));
  GRADLAB_CHECK(total_iters > 0, ValueError, "LinearLR", "total_iters must be positive",
                "total_iters > 0", std::to_string(total_iters));
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double f = 1.0 + (end_factor_ - start_factor_) /
                             (static_cast<double>(total_iters_) * start_factor_ +
                              static_cast<double>(last_epoch_ - 1) * (end_factor_ - start_factor_));
  for (double& lr : lrs) lr *= f;
  return lrs;
}
std::vector<std::pair<std::string, double>> LinearLR::settings() const {
  return {{"start_factor", start_factor_},
          {"end_factor", end_factor_},
          {"total_iters", static_cast<double>(total_iters_)}};
}
void LinearLR::load_settings(const StateDict& sd) {
  start_factor_ = read(sd, "start_factor");
  end_factor_ = read(sd, "end_factor");
  total_iters_ = static_cast<int64_t>(read(sd, "total_iters"));
}

// ---- ReduceLROnPlateau -----------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, Options options)
    : optimizer_(optimizer), options_(options) {
  GRADLAB_CHECK(options.factor < 1.0 && options.factor >= 0, ValueError, "ReduceLROnPlateau",
                "factor should be < 1.0", "0 <= factor < 1", std::to_string(options.factor));
  best_ = options.mode == Options::Mode::Min ? std::numeric_limits<double>::infinity()
                                             : -std::numeric_limits<double>::infinity();
  for (const auto& g : optimizer_.param_groups()) last_lr_.push_back(g.options().get_lr());
}

bool ReduceLROnPlateau::is_better(double a) const {
  const double t = options_.threshold;
  const bool rel = options_.threshold_mode == Options::ThresholdMode::Rel;
  if (options_.mode == Options::Mode::Min) return rel ? a < best_ * (1.0 - t) : a < best_ - t;
  return rel ? a > best_ * (t + 1.0) : a > best_ + t;
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // ignore bad epochs in cooldown
  }
  if (num_bad_epochs_ > options_.patience) {
    for (auto& g : optimizer_.param_groups()) {
      const double old_lr = g.options().get_lr();
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
      if (old_lr - new_lr > options_.eps) g.options().set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& g : optimizer_.param_groups()) last_lr_.push_back(g.options().get_lr());
}

StateDict ReduceLROnPlateau::state_dict() const {
  StateDict sd;
  sd.insert("mode", num(options_.mode == Options::Mode::Min ? 0 : 1));
  sd.insert("factor", num(options_.factor));
  sd.insert("patience", num(static_cast<double>(options_.patience)));
  sd.insert("threshold", num(options_.threshold));
  sd.insert("threshold_mode", num(options_.threshold_mode == Options::ThresholdMode::Rel ? 0 : 1));
  sd.insert("cooldown", num(static_cast<double>(options_.cooldown)));
  sd.insert("min_lr", num(options_.min_lr));
  sd.insert("eps", num(options_.eps));
  sd.insert("best", num(best_));
  sd.insert("num_bad_epochs", num(static_cast<double>(num_bad_epochs_)));
  sd.insert("cooldown_counter", num(static_cast<double>(cooldown_counter_)));
  sd.insert("last_epoch", num(static_cast<double>(last_epoch_)));
  for (size_t i = 0; i < last_lr_.size(); ++i)
    sd.insert("last_lr." + std::to_string(i), num(last_lr_[i]));
  sd.metadata["scheduler"] = "ReduceLROnPlateau";
  return sd;
}

void ReduceLROnPlateau::load_state_dict(const StateDict& sd) {
  Options o;
  o.mode = read(sd, "mode") == 0 ? Options::Mode::Min : Options::Mode::Max;
  o.factor = read(sd, "factor");
  o.patience = static_cast<int64_t>(read(sd, "patience"));
  o.threshold = read(sd, "threshold");
  o.threshold_mode =
      read(sd, "threshold_mode") == 0 ? Options::ThresholdMode::Rel : Options::ThresholdMode::Abs;
  o.cooldown = static_cast<int64_t>(read(sd, "cooldown"));
  o.min_lr = read(sd, "min_lr");
  o.eps = read(sd, "eps");
  const double best = read(sd, "best");
  const auto bad = static_cast<int64_t>(read(sd, "num_bad_epochs"));
  const auto cool = static_cast<int64_t>(read(sd, "cooldown_counter"));
  const auto epoch = static_cast<int64_t>(read(sd, "last_epoch"));
  std::vector<double> last;
  for (size_t i = 0; sd.contains("last_lr." + std::to_string(i)); ++i)
    last.push_back(read(sd, "last_lr." + std::to_string(i)));
  options_ = o;
  best_ = best;
  num_bad_epochs_ = bad;
  cooldown_counter_ = cool;
  last_epoch_ = epoch;
  last_lr_ = std::move(last);
}

}  // namespace gradlab::optim
