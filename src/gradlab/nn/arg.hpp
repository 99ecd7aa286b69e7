#pragma once
// GRADLAB_ARG(T, name): an option with a chainable setter and a getter, as LibTorch's TORCH_ARG:
//   LinearOptions(64, 128).bias(false);   opts.bias() -> false

#include <type_traits>

/// Declares `name_` with setter `name(value)` (returns *this) and getter `name()`.
#define GRADLAB_ARG(T, name)                                                            \
 public:                                                                                \
  inline auto name(const std::type_identity_t<T>& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                                                         \
    return *this;                                                                       \
  }                                                                                     \
  inline const std::type_identity_t<T>& name() const noexcept { return this->name##_; } \
  inline std::type_identity_t<T>& name() noexcept { return this->name##_; }             \
                                                                                        \
 private:                                                                               \
  std::type_identity_t<T> name##_
