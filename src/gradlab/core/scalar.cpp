#include "gradlab/core/scalar.hpp"

namespace gradlab {

ScalarType result_type(ScalarType t, const Scalar& s) {
  if (s.is_floating_point()) return is_floating_point(t) ? t : default_dtype();
  if (s.is_integral()) return t == kBool ? kInt64 : t;
  return t;
}

}  // namespace gradlab
