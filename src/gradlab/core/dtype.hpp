#pragma once
// Element types. float32/float64 carry gradients; int64 (labels, indices) and bool (masks) never do.
// float16/bfloat16 are stored as such; ops compute on them through float32 (backend/kernels.cpp).

#include <cstdint>
#include <iosfwd>
#include <string>
#include <type_traits>

namespace gradlab {

enum class ScalarType : int8_t { Float32, Float64, Int64, Bool, Float16, BFloat16, UInt8 };
using Dtype = ScalarType;

inline constexpr ScalarType kFloat32 = ScalarType::Float32;
inline constexpr ScalarType kFloat = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;
inline constexpr ScalarType kDouble = ScalarType::Float64;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kLong = ScalarType::Int64;
inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kFloat16 = ScalarType::Float16;
inline constexpr ScalarType kHalf = ScalarType::Float16;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
/// uint8 (LibTorch's kByte): storage only, for image bytes and masks read from files. Ops
/// compute on it after a conversion (`x.to(kFloat32)`); a kernel given uint8 says so. Combined
/// with another dtype it promotes like an integer (uint8 + float32 -> float32).
inline constexpr ScalarType kUInt8 = ScalarType::UInt8;
inline constexpr ScalarType kByte = ScalarType::UInt8;

/// Bytes per element.
std::size_t element_size(ScalarType t);
/// "float32", "float64", "int64", "bool", "float16", "bfloat16", "uint8".
std::string to_string(ScalarType t);
/// Prints to_string(t), as LibTorch's `std::cout << x.dtype()` ("float32" here, "float" there).
std::ostream& operator<<(std::ostream& os, ScalarType t);
/// float32, float64, float16, bfloat16.
bool is_floating_point(ScalarType t);
/// float32 or float64: the dtypes the kernels compute in (half types are widened to float32).
bool is_computable_float(ScalarType t);
/// PyTorch's promotion of two tensor dtypes: bool < int64 < floating; among floats the wider wins.
ScalarType promote_types(ScalarType a, ScalarType b);
/// The dtype factories use when none is given (float32, like PyTorch).
ScalarType default_dtype();

/// C++ type -> ScalarType.
template <class T>
constexpr ScalarType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return kFloat32;
  else if constexpr (std::is_same_v<T, double>) return kFloat64;
  else if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_same_v<T, uint8_t>) return kUInt8;
  else {
    static_assert(std::is_integral_v<T>, "dtype_of: unsupported C++ type");
    return kInt64;
  }
}

}  // namespace gradlab
