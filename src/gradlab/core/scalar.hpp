#pragma once
// A number that combines with tensors (`2 * x`, `x - 1.0`). Like a Python number in PyTorch it
// does not widen the tensor's dtype: float32 * 2.0 stays float32; int64 * 0.5 gives float32.

#include <cstdint>
#include <type_traits>

#include "gradlab/core/dtype.hpp"
#include "gradlab/core/half.hpp"

namespace gradlab {

/// A double, an int64 or a bool.
class Scalar {
 public:
  enum class Kind : int8_t { Floating, Integral, Boolean };
  Scalar() : Scalar(0.0) {}
  Scalar(bool v) : kind_(Kind::Boolean), d_(v ? 1.0 : 0.0), i_(v) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v)  // NOLINT(google-explicit-constructor): numbers convert implicitly, as in LibTorch
      : kind_(std::is_floating_point_v<T> ? Kind::Floating : Kind::Integral),
        d_(static_cast<double>(v)),
        i_(std::is_floating_point_v<T> ? saturating_int64(static_cast<double>(v)) : static_cast<int64_t>(v)) {}

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Floating; }
  bool is_integral() const { return kind_ == Kind::Integral; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  double to_double() const { return d_; }
  /// As an int64: a float is truncated and saturates (NaN gives 0; see saturating_int64).
  int64_t to_long() const { return kind_ == Kind::Floating ? saturating_int64(d_) : i_; }
  /// The dtype a tensor made from this number alone would have (float32, int64, bool).
  ScalarType natural_dtype() const {
    return kind_ == Kind::Floating ? default_dtype() : kind_ == Kind::Integral ? kInt64 : kBool;
  }

 private:
  Kind kind_;
  double d_;
  int64_t i_;
};

/// Result dtype of (tensor of dtype t) op (number s): the number only decides between categories.
ScalarType result_type(ScalarType t, const Scalar& s);

}  // namespace gradlab
