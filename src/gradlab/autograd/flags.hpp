#pragma once
// The autograd switches, in one place: grad mode (thread-local, as in PyTorch), anomaly mode
// (process-wide, torch.autograd.set_detect_anomaly) and whether this thread is inside a node's
// backward; and the autocast state (thread-local, torch.autocast), which the ops read here, below
// them. The scoped guards live in grad_mode.hpp, anomaly.hpp and amp/autocast.hpp.

#include "gradlab/core/device.hpp"
#include "gradlab/core/dtype.hpp"

namespace gradlab {

/// Global (thread-local) switch read by every op: record a graph or not.
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Thread-local autocast state, one slot per device type (torch.is_autocast_enabled and friends).
/// Set through amp::autocast; read by the ops that autocast (ops/common.hpp).
struct AutocastMode {
  /// Is autocast on for tensors of this device type (cpu or cuda) on this thread?
  static bool is_enabled(DeviceType type);
  /// The lower-precision dtype for that device type (defaults: cpu bfloat16, cuda float16).
  static ScalarType dtype(DeviceType type);
  static void set(DeviceType type, bool enabled, ScalarType dtype);
};

}  // namespace gradlab

namespace gradlab::autograd {

/// Is anomaly detection on (for any thread)?
bool is_anomaly_enabled();
/// Turns anomaly detection on or off (torch.autograd.set_detect_anomaly).
void set_detect_anomaly(bool enabled);

namespace detail {
/// True while this thread runs a node's backward: the ops inside it are not checked as forward
/// ops, so the backward check can name the node and the user's forward call instead.
bool& running_backward();

/// Marks this thread as running a node's backward for a scope.
class RunningBackwardGuard {
 public:
  RunningBackwardGuard() : prev_(running_backward()) { running_backward() = true; }
  ~RunningBackwardGuard() { running_backward() = prev_; }
  RunningBackwardGuard(const RunningBackwardGuard&) = delete;
  RunningBackwardGuard& operator=(const RunningBackwardGuard&) = delete;

 private:
  bool prev_;
};
}  // namespace detail

}  // namespace gradlab::autograd
