#pragma once
// LibTorch-style tensor options: TensorOptions().dtype(kFloat64).requires_grad(true),
// or the shorthands gradlab::dtype(kFloat64), gradlab::requires_grad().

#include <optional>

#include "gradlab/core/device.hpp"
#include "gradlab/core/dtype.hpp"

namespace gradlab {

/// dtype, device and requires_grad for a new tensor; unset fields take defaults.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}  // NOLINT: zeros({2}, kFloat64) reads like LibTorch
  TensorOptions(DeviceType d) : device_(Device(d)) {}  // NOLINT
  TensorOptions(Device d) : device_(d) {}              // NOLINT

  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; return o; }

  ScalarType dtype() const { return dtype_.value_or(default_dtype()); }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_.value_or(Device()); }
  /// False when no device was given (the *_like factories then keep the source's device).
  bool has_device() const { return device_.has_value(); }
  bool requires_grad() const { return requires_grad_; }

 private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

/// TensorOptions().dtype(t)
inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
/// TensorOptions().device(d)
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
/// TensorOptions().requires_grad(r)
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace gradlab
