#include "gradlab/autograd/flags.hpp"

#include <atomic>

namespace gradlab {

namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_running_backward = false;
struct AutocastSlot {
  bool enabled = false;
  ScalarType dtype;
};
thread_local AutocastSlot t_autocast_cpu{false, kBFloat16}, t_autocast_cuda{false, kFloat16};
AutocastSlot& autocast_slot(DeviceType type) { return type == DeviceType::CUDA ? t_autocast_cuda : t_autocast_cpu; }
// Relaxed loads: the flag orders no other memory, and when off it costs one load per op.
std::atomic<bool> g_anomaly{false};
}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

bool AutocastMode::is_enabled(DeviceType type) { return autocast_slot(type).enabled; }
ScalarType AutocastMode::dtype(DeviceType type) { return autocast_slot(type).dtype; }
void AutocastMode::set(DeviceType type, bool enabled, ScalarType dtype) { autocast_slot(type) = {enabled, dtype}; }

bool autograd::is_anomaly_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void autograd::set_detect_anomaly(bool enabled) { g_anomaly.store(enabled, std::memory_order_relaxed); }
bool& autograd::detail::running_backward() { return t_running_backward; }

}  // namespace gradlab
