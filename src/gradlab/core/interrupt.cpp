#include "gradlab/core/interrupt.hpp"

namespace gradlab {

namespace detail {
std::atomic<bool> interrupt_flag{false};

void throw_interrupted() {
  interrupt_flag.store(false, std::memory_order_relaxed);
  throw InterruptedError(
      "interrupted: the run was stopped at a gradlab op (request_interrupt, e.g. the notebook's "
      "interrupt button); hint: tensors and modules keep the values of the last completed step");
}
}  // namespace detail

void request_interrupt() noexcept { detail::interrupt_flag.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { detail::interrupt_flag.store(false, std::memory_order_relaxed); }

}  // namespace gradlab

extern "C" void gradlab_request_interrupt() noexcept { gradlab::request_interrupt(); }
extern "C" void gradlab_clear_interrupt() noexcept { gradlab::clear_interrupt(); }
