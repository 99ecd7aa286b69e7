#pragma once
// Anomaly mode: find where a NaN or Inf is born. When on, every op checks its outputs in forward
// and every node checks the gradients it produces in backward; the first one that turns finite
// inputs into non-finite results throws, naming the op, where the user called it, and its inputs'
// statistics. When off it costs one relaxed atomic load per op (the flag: flags.hpp).

#include <string>
#include <vector>

#include "gradlab/autograd/flags.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::autograd {

/// Anomaly detection for a scope (torch::autograd::DetectAnomalyGuard).
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(is_anomaly_enabled()) { set_detect_anomaly(true); }
  ~DetectAnomalyGuard() { set_detect_anomaly(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

/// Counts of non-finite values and the finite range of a tensor, for anomaly messages.
struct TensorStats {
  int64_t numel = 0, nan = 0, pos_inf = 0, neg_inf = 0;
  double min = 0, max = 0;  // over finite elements
  bool all_finite() const { return nan == 0 && pos_inf == 0 && neg_inf == 0; }
  /// "shape [2, 3] float32, min -1.2, max 4, nan 0, inf 1"
  std::string str(const Tensor& t) const;
};
TensorStats tensor_stats(const Tensor& t);

/// ", inside a module called at <user line>" when `module_site` is known and is not `op_site`
/// itself; "" otherwise (anomaly messages append it to an op's site).
std::string inside_module(const Site& op_site, const Site& module_site);

/// Thrown by anomaly mode; the message has every detail.
class AnomalyError : public AutogradError {
 public:
  using AutogradError::AutogradError;
  AnomalyError(const std::string& message, const Site& op, const Site& module)
      : AutogradError(message), op_site(op), module_site(module) {}
  /// Where the op was called (a line in gradlab's sources for an op inside a library module) and
  /// the innermost user call of a module around it (Site::unknown() when none).
  Site op_site = Site::unknown(), module_site = Site::unknown();
};

}  // namespace gradlab::autograd
