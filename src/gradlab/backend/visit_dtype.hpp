#pragma once
// The one dispatch from a compute dtype to its C++ type, for the CPU kernels (backend/cpu/) and
// the CUDA kernels with their host emulator (backend/cuda/).

#include <cstdint>
#include <utility>

#include "gradlab/core/dtype.hpp"
#include "gradlab/core/error.hpp"

namespace gradlab {

/// Calls `f.template operator()<T>()` with T the C++ type of `dt`, one of the four compute dtypes;
/// half types (storage only, see visit_storage_dtype) and others throw DTypeError naming `op`.
template <class F>
decltype(auto) visit_dtype(ScalarType dt, const char* op, F&& f) {
  switch (dt) {
    case kFloat32:
      return std::forward<F>(f).template operator()<float>();
    case kFloat64:
      return std::forward<F>(f).template operator()<double>();
    case kInt64:
      return std::forward<F>(f).template operator()<int64_t>();
    case kBool:
      return std::forward<F>(f).template operator()<bool>();
    default:
      throw DTypeError(
          error_message(op, "dtype " + to_string(dt) + " has no compute kernel",
                        "float32, float64, int64 or bool", to_string(dt),
                        "convert with .to(kFloat32) first (half types and uint8 are storage only)"));
  }
}

}  // namespace gradlab
