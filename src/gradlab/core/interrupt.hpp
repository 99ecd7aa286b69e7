#pragma once
// A process-wide interrupt flag, as PyTorch checks for Python signals: a host (the notebook
// kernel's SIGINT handler, a GUI's stop button) calls request_interrupt(); gradlab checks the flag
// at safe points, the op dispatch (record) and the autograd engine's loop, and there throws
// InterruptedError (like Python's KeyboardInterrupt). A training loop is stopped at its next op.
//
// NOTE: the check is one relaxed atomic load; the flag is only read and written with atomic
// operations, so request_interrupt is async-signal-safe (it may be called from a signal handler).
// Code that runs no gradlab op (a plain C++ loop, a sleep) is not interrupted.

#include <atomic>

#include "gradlab/core/error.hpp"

namespace gradlab {

/// Thrown at a safe point after request_interrupt() (the notebook kernel names it
/// KeyboardInterrupt). Throwing clears the flag: the handler's own ops run normally.
class InterruptedError : public Error {
 public:
  using Error::Error;
};

namespace detail {
extern std::atomic<bool> interrupt_flag;
[[noreturn]] void throw_interrupted();
}  // namespace detail

/// Asks gradlab to stop at its next safe point (async-signal-safe).
void request_interrupt() noexcept;
/// True after request_interrupt() until clear_interrupt() or until InterruptedError is thrown.
inline bool interrupt_requested() noexcept {
  return detail::interrupt_flag.load(std::memory_order_relaxed);
}
/// Forgets a pending request.
void clear_interrupt() noexcept;
/// Throws InterruptedError when an interrupt was requested (a safe point).
inline void check_interrupt() {
  if (interrupt_requested()) detail::throw_interrupted();
}

}  // namespace gradlab

/// The same as gradlab::request_interrupt(), with a C name a host can look up with dlsym (the
/// notebook kernel loads libgradlab at run time and does not link it).
extern "C" void gradlab_request_interrupt() noexcept;
/// The same as gradlab::clear_interrupt(), for dlsym.
extern "C" void gradlab_clear_interrupt() noexcept;
