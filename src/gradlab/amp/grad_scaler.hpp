#pragma once
// Loss scaling for float16 training, as torch.amp.GradScaler. float16 gradients below 2^-24
// underflow to zero; scaling the loss by S scales every gradient by S, so small ones survive.
// The optimizer must then see the true gradients, and a step whose scaled gradients overflowed
// must be skipped:
//
//   amp::GradScaler scaler;                    // init_scale 65536, growth 2, backoff 0.5, interval 2000
//   for (...) {
//     optimizer.zero_grad();
//     Tensor loss = ...;                        // forward, usually under amp::autocast
//     scaler.scale(loss).backward();            // gradients are S * true gradients
//     scaler.unscale_(optimizer);               // optional: true gradients now, e.g. to clip them
//     nn::utils::clip_grad_norm_(params, 1.0);
//     scaler.step(optimizer);                   // unscales if not done; skipped on inf / NaN
//     scaler.update();                          // inf seen: S *= 0.5; growth_interval clean steps: S *= 2
//   }
//
// Semantics, errors and the float32 arithmetic of the scale follow PyTorch's
// torch/amp/grad_scaler.py and _amp_update_scale_ (checks/amp compares a recorded trajectory).

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::amp {

/// GradScaler's constructor arguments (PyTorch's defaults).
struct GradScalerOptions {
  double init_scale_ = 65536.0;
  double growth_factor_ = 2.0;
  double backoff_factor_ = 0.5;
  int64_t growth_interval_ = 2000;
  bool enabled_ = true;
  GradScalerOptions& init_scale(double v) { init_scale_ = v; return *this; }
  GradScalerOptions& growth_factor(double v) { growth_factor_ = v; return *this; }
  GradScalerOptions& backoff_factor(double v) { backoff_factor_ = v; return *this; }
  GradScalerOptions& growth_interval(int64_t v) { growth_interval_ = v; return *this; }
  GradScalerOptions& enabled(bool v) { enabled_ = v; return *this; }
};

class GradScaler {
 public:
  explicit GradScaler(const GradScalerOptions& options = GradScalerOptions());

  /// outputs * scale (a float32 0-d scale; outputs unchanged when disabled).
  Tensor scale(const Tensor& outputs);
  /// Divides the optimizer's gradients by the scale in place and records whether any was inf or
  /// NaN. At most once per optimizer between update()s, and before step(). float16 gradients are
  /// refused (keep parameters float32: autocast casts them per op).
  void unscale_(optim::Optimizer& optimizer);
  /// unscale_ (unless done) then optimizer.step(), skipped when a gradient was inf / NaN.
  /// Returns whether the step ran. Once per optimizer between update()s.
  bool step(optim::Optimizer& optimizer);
  /// After the steps of an iteration: a skipped step multiplies the scale by backoff_factor and
  /// restarts the count; growth_interval clean steps in a row multiply it by growth_factor (kept
  /// if finite). new_scale sets it directly instead.
  void update(std::optional<double> new_scale = std::nullopt);

  /// The current scale (1.0 when disabled).
  double get_scale() const;
  /// Clean steps since the last change of the scale.
  int64_t get_growth_tracker() const { return growth_tracker_; }
  double get_growth_factor() const { return growth_factor_; }
  double get_backoff_factor() const { return backoff_factor_; }
  int64_t get_growth_interval() const { return growth_interval_; }
  bool is_enabled() const { return enabled_; }

  /// "scale", "growth_factor", "backoff_factor" (0-d float64), "growth_interval",
  /// "_growth_tracker" (0-d int64); empty when disabled (PyTorch's keys). io::Checkpoint::scaler.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool checked = false;  // unscale_ saw at least one gradient
    bool found_inf = false;
  };
  void check_scale(const char* op) const;

  float scale_;                 // float32, as PyTorch's _scale tensor
  bool scale_made_ = false;     // PyTorch makes _scale lazily, in the first scale()
  double init_scale_, growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  int64_t growth_tracker_ = 0;  // int32 in PyTorch
  bool enabled_;
  std::unordered_map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace gradlab::amp
