#pragma once
// GRADLAB_ARG(T, name): an option with a chainable setter and a getter, as LibTorch's TORCH_ARG:
//   LinearOptions(64, 128).bias(false);   opts.bias() -> false

namespace gradlab::detail {
/// std::type_identity (C++20) for C++17 readers of this header.
template <class T>
struct ArgType {
  using type = T;
};
}  // namespace gradlab::detail

/// Declares `name_` with setter `name(value)` (returns *this) and getter `name()`.
#define GRADLAB_ARG(T, name)                                                            \
 public:                                                                                \
  inline auto name(const typename ::gradlab::detail::ArgType<T>::type& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                                                         \
    return *this;                                                                       \
  }                                                                                     \
  inline const typename ::gradlab::detail::ArgType<T>::type& name() const noexcept { return this->name##_; } \
  inline typename ::gradlab::detail::ArgType<T>::type& name() noexcept { return this->name##_; }             \
                                                                                        \
 private:                                                                               \
  typename ::gradlab::detail::ArgType<T>::type name##_

/// GRADLAB_ARG for a base class template that several options types share (CRTP): the setter
/// returns `Derived&`, so `AdamWOptions(1e-3).betas(...).eps(...)` stays an AdamWOptions.
#define GRADLAB_SHARED_ARG(Derived, T, name)                                                     \
 public:                                                                                         \
  inline Derived& name(const typename ::gradlab::detail::ArgType<T>::type& new_##name) {         \
    this->name##_ = new_##name;                                                                  \
    return static_cast<Derived&>(*this);                                                         \
  }                                                                                              \
  inline const typename ::gradlab::detail::ArgType<T>::type& name() const noexcept {             \
    return this->name##_;                                                                        \
  }                                                                                              \
  inline typename ::gradlab::detail::ArgType<T>::type& name() noexcept { return this->name##_; } \
                                                                                                 \
 private:                                                                                        \
  typename ::gradlab::detail::ArgType<T>::type name##_
