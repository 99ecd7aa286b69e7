#include "gradlab/core/shape.hpp"

#include <ostream>

#include "gradlab/core/error.hpp"

namespace gradlab {

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << shape_str(s); }

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(s[i], 1);
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  int64_t r = std::max<int64_t>(rank, 1);  // a scalar accepts dim 0 and -1, like PyTorch
  GRADLAB_CHECK(dim >= -r && dim < r, ShapeError, op, "dimension out of range",
                "a dim in [" + std::to_string(-r) + ", " + std::to_string(r - 1) + "]",
                std::to_string(dim));
  return dim < 0 ? dim + r : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  // From the last dim, as PyTorch: the message names the rightmost mismatch.
  for (size_t i = n; i-- > 0;) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(error_message(
          op,
          "size of a (" + std::to_string(da) + ") must match size of b (" + std::to_string(db) +
              ") at non-singleton dimension " + std::to_string(i),
          "broadcastable shapes", shape_str(a) + " and " + shape_str(b),
          "sizes must be equal or 1, compared from the last dim; unsqueeze or reshape one side"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace gradlab
