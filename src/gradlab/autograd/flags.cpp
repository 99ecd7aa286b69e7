#include "gradlab/autograd/flags.hpp"

#include <atomic>

namespace gradlab {

namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_running_backward = false;
// Relaxed loads: the flag orders no other memory, and when off it costs one load per op.
std::atomic<bool> g_anomaly{false};
}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

bool autograd::is_anomaly_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void autograd::set_detect_anomaly(bool enabled) { g_anomaly.store(enabled, std::memory_order_relaxed); }
bool& autograd::detail::running_backward() { return t_running_backward; }

}  // namespace gradlab
