#include "gradlab/core/dtype.hpp"

#include <ostream>

#include "gradlab/core/error.hpp"

namespace gradlab {

std::size_t element_size(ScalarType t) {
  switch (t) {
    case kFloat32: return 4;
    case kFloat64: return 8;
    case kInt64: return 8;
    case kBool:
    case kUInt8: return 1;
    case kFloat16:
    case kBFloat16: return 2;
  }
  throw DTypeError(error_message("element_size", "unknown dtype"));
}

std::string to_string(ScalarType t) {
  switch (t) {
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kInt64: return "int64";
    case kBool: return "bool";
    case kFloat16: return "float16";
    case kBFloat16: return "bfloat16";
    case kUInt8: return "uint8";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << to_string(t); }

bool is_floating_point(ScalarType t) {
  return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16;
}

bool is_computable_float(ScalarType t) { return t == kFloat32 || t == kFloat64; }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  auto rank = [](ScalarType t) {
    switch (t) {
      case kBool: return 0;
      case kUInt8: return 1;
      case kInt64: return 2;
      case kFloat16:
      case kBFloat16: return 3;
      case kFloat32: return 4;
      case kFloat64: return 5;
    }
    return 0;
  };
  // float16 with bfloat16 has no exact common type below float32 (PyTorch picks float32 too).
  if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
  return rank(a) >= rank(b) ? a : b;
}

ScalarType default_dtype() { return kFloat32; }

}  // namespace gradlab
