#pragma once
// Scoped grad-mode guards (the flag itself is in flags.hpp). Thread-local, like PyTorch's.

#include "gradlab/autograd/flags.hpp"

namespace gradlab {

/// Sets grad mode for a scope and restores it after.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

/// No graph is recorded inside this scope (torch::NoGradGuard): for evaluation and for
/// updating parameters in place.
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

/// LibTorch's c10::InferenceMode guard: InferenceMode(true) (the default) records no graph, as
/// NoGradGuard; InferenceMode(false) records. NOTE: LibTorch also marks tensors made inside as
/// inference tensors that autograd later refuses; gradlab's are ordinary tensors.
class InferenceMode : public AutoGradMode {
 public:
  explicit InferenceMode(bool enabled = true) : AutoGradMode(!enabled) {}
};

/// Turns recording back on inside a NoGradGuard scope.
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};

}  // namespace gradlab
