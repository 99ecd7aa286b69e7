#include "gradlab/amp/autocast.hpp"

#include "gradlab/core/error.hpp"

namespace gradlab::amp {

autocast::autocast(DeviceType device_type, std::optional<ScalarType> dtype, bool enabled)
    : type_(device_type),
      prev_enabled_(AutocastMode::is_enabled(device_type)),
      prev_dtype_(AutocastMode::dtype(device_type)) {
  const ScalarType dt = dtype.value_or(prev_dtype_);
  GRADLAB_CHECK(dt == kFloat16 || dt == kBFloat16, DTypeError, "autocast",
                "the autocast dtype must be a lower-precision float", "float16 or bfloat16", to_string(dt),
                "autocast(kCPU) uses bfloat16, autocast(DeviceType::CUDA) float16; pass one of them");
  AutocastMode::set(type_, enabled, dt);
}

autocast::~autocast() { AutocastMode::set(type_, prev_enabled_, prev_dtype_); }

bool is_autocast_enabled(DeviceType device_type) { return AutocastMode::is_enabled(device_type); }
ScalarType get_autocast_dtype(DeviceType device_type) { return AutocastMode::dtype(device_type); }

}  // namespace gradlab::amp
