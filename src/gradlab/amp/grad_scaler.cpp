#include "gradlab/amp/grad_scaler.hpp"

#include <cmath>
#include <string>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::amp {

GradScaler::GradScaler(const GradScalerOptions& o)
    : scale_(static_cast<float>(o.init_scale_)),
      init_scale_(o.init_scale_),
      growth_factor_(o.growth_factor_),
      backoff_factor_(o.backoff_factor_),
      growth_interval_(o.growth_interval_),
      enabled_(o.enabled_) {
  GRADLAB_CHECK(o.growth_factor_ > 1.0, ValueError, "GradScaler", "growth_factor must be > 1", "> 1",
                std::to_string(o.growth_factor_));
  GRADLAB_CHECK(o.backoff_factor_ < 1.0 && o.backoff_factor_ > 0, ValueError, "GradScaler",
                "backoff_factor must be in (0, 1)", "0 < backoff_factor < 1", std::to_string(o.backoff_factor_));
  GRADLAB_CHECK(o.growth_interval_ > 0, ValueError, "GradScaler", "growth_interval must be positive", "> 0",
                std::to_string(o.growth_interval_));
  GRADLAB_CHECK(o.init_scale_ > 0 && std::isfinite(o.init_scale_), ValueError, "GradScaler",
                "init_scale must be a positive finite number", "> 0", std::to_string(o.init_scale_));
}

void GradScaler::check_scale(const char* op) const {
  GRADLAB_CHECK(scale_made_, ValueError, op, "no scale yet: scale() was never called",
                "scaler.scale(loss) earlier in the iteration", "none",
                "call scaler.scale(loss).backward() before unscale_ / step / update");
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!enabled_) return outputs;
  GRADLAB_CHECK(outputs.defined(), ValueError, "GradScaler::scale", "outputs is undefined", "a tensor",
                "Tensor()");
  if (!scale_made_) {
    scale_ = static_cast<float>(init_scale_);
    scale_made_ = true;
  }
  // A 0-d float32 factor: a float16 loss with dims stays float16, a 0-d one becomes float32 (PyTorch).
  return outputs * scalar_tensor(scale_, TensorOptions().dtype(kFloat32).device(outputs.device()));
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  check_scale("GradScaler::unscale_");
  PerOptimizer& st = per_optimizer_[&optimizer];
  GRADLAB_CHECK(st.stage != Stage::Unscaled, ValueError, "GradScaler::unscale_",
                "unscale_() has already been called on this optimizer since the last update()",
                "one unscale_ per optimizer per iteration", "a second call",
                "call scaler.update() at the end of each iteration");
  GRADLAB_CHECK(st.stage != Stage::Stepped, ValueError, "GradScaler::unscale_", "unscale_() is being called after step()",
                "unscale_ before step", "unscale_ after step", "unscale_ (and clip) first, then step");
  // inv = 1 / scale in float64, rounded to float32 (PyTorch: _scale.double().reciprocal().float()).
  const float inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    for (Tensor& p : group.params()) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      GRADLAB_CHECK(g.dtype() != kFloat16, ValueError, "GradScaler::unscale_", "attempting to unscale float16 gradients",
                    "float32 (or bfloat16) gradients", "float16",
                    "keep the parameters in float32 and let autocast cast them per op");
      st.checked = true;
      // found_inf looks at the scaled values; every gradient is unscaled either way (as PyTorch).
      if (!st.found_inf && sum(logical_not(isfinite(g))).item<int64_t>() > 0) st.found_inf = true;
      g.mul_(static_cast<double>(inv));
    }
  }
  st.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  check_scale("GradScaler::step");
  PerOptimizer& st = per_optimizer_[&optimizer];
  GRADLAB_CHECK(st.stage != Stage::Stepped, ValueError, "GradScaler::step",
                "step() has already been called since the last update()", "one step per optimizer per iteration",
                "a second call", "call scaler.update() after each iteration's steps");
  if (st.stage == Stage::Ready) unscale_(optimizer);
  PerOptimizer& s = per_optimizer_[&optimizer];
  GRADLAB_CHECK(s.checked, ValueError, "GradScaler::step", "no inf checks were recorded for this optimizer",
                "parameters with gradients", "no parameter has a gradient", "call backward() before step()");
  const bool run = !s.found_inf;
  if (run) optimizer.step();
  s.stage = Stage::Stepped;
  return run;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  check_scale("GradScaler::update");
  if (new_scale) {
    scale_ = static_cast<float>(*new_scale);
  } else {
    bool any_checked = false, found_inf = false;
    for (const auto& [opt, st] : per_optimizer_) {
      any_checked = any_checked || st.checked;
      found_inf = found_inf || st.found_inf;
    }
    GRADLAB_CHECK(any_checked, ValueError, "GradScaler::update", "no inf checks were recorded prior to update()",
                  "unscale_() or step() in this iteration", "neither", "call scaler.step(optimizer) before update()");
    // _amp_update_scale_: float32 scale, float64 factors.
    if (found_inf) {
      scale_ = static_cast<float>(static_cast<double>(scale_) * backoff_factor_);
      growth_tracker_ = 0;
    } else if (growth_tracker_ + 1 == growth_interval_) {
      const float grown = static_cast<float>(static_cast<double>(scale_) * growth_factor_);
      if (std::isfinite(grown)) scale_ = grown;
      growth_tracker_ = 0;
    } else {
      ++growth_tracker_;
    }
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_made_ ? static_cast<double>(scale_) : init_scale_;
}

StateDict GradScaler::state_dict() const {
  StateDict d;
  if (!enabled_) return d;
  auto f64 = [](double v) { return scalar_tensor(v, TensorOptions().dtype(kFloat64)); };
  d.insert("scale", f64(get_scale()));
  d.insert("growth_factor", f64(growth_factor_));
  d.insert("backoff_factor", f64(backoff_factor_));
  d.insert("growth_interval", scalar_tensor(growth_interval_, TensorOptions().dtype(kInt64)));
  d.insert("_growth_tracker", scalar_tensor(growth_tracker_, TensorOptions().dtype(kInt64)));
  return d;
}

void GradScaler::load_state_dict(const StateDict& d) {
  GRADLAB_CHECK(enabled_, ValueError, "GradScaler::load_state_dict", "the scaler is disabled", "an enabled GradScaler",
                "enabled(false)", "construct it with GradScalerOptions().enabled(true)");
  GRADLAB_CHECK(!d.empty(), ValueError, "GradScaler::load_state_dict", "the source state dict is empty",
                "scale, growth_factor, backoff_factor, growth_interval, _growth_tracker", "no keys",
                "it was probably saved from a disabled GradScaler");
  init_scale_ = d.at("scale").item<double>();
  scale_ = static_cast<float>(init_scale_);
  scale_made_ = true;
  growth_factor_ = d.at("growth_factor").item<double>();
  backoff_factor_ = d.at("backoff_factor").item<double>();
  growth_interval_ = d.at("growth_interval").item<int64_t>();
  growth_tracker_ = d.at("_growth_tracker").item<int64_t>();
}

}  // namespace gradlab::amp
