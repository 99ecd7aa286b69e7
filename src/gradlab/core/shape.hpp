#pragma once
// Shapes and strides. Strides count elements, not bytes (as in PyTorch).

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace gradlab {

/// A list of int64: sizes, strides or dims. A std::vector<int64_t> with LibTorch's IntArrayRef
/// spellings (`vec()`, `std::cout << x.sizes()` prints "[2, 3]"); being gradlab's own type, its
/// operator<< is found by argument-dependent lookup.
class Shape : public std::vector<int64_t> {
 public:
  using std::vector<int64_t>::vector;
  Shape() = default;
  Shape(const std::vector<int64_t>& v) : std::vector<int64_t>(v) {}             // NOLINT
  Shape(std::vector<int64_t>&& v) : std::vector<int64_t>(std::move(v)) {}        // NOLINT
  /// A copy as a plain vector (IntArrayRef::vec()).
  std::vector<int64_t> vec() const { return *this; }
};
using Strides = Shape;
/// A list of dims, possibly negative (-1 = last).
using Dims = Shape;
/// LibTorch's name for a list of sizes. NOTE: gradlab's owns its elements (LibTorch's is a
/// non-owning view), so keeping one past the tensor it came from is safe here.
using IntArrayRef = Shape;

/// "[2, 3]", as LibTorch prints an IntArrayRef.
std::ostream& operator<<(std::ostream& os, const Shape& s);

/// "[2, 3]"; "[]" for a scalar.
std::string shape_str(const Shape& s);
/// Product of sizes; 1 for a scalar.
int64_t numel_of(const Shape& s);
/// Row-major strides of a contiguous tensor of shape `s`.
Strides contiguous_strides(const Shape& s);
/// Wraps a possibly negative dim into [0, rank); throws ShapeError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);
/// The broadcast shape of a and b (numpy rules); throws ShapeError in PyTorch's wording.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace gradlab
