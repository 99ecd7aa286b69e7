#pragma once
// Shapes and strides. Strides count elements, not bytes (as in PyTorch).

#include <cstdint>
#include <string>
#include <vector>

namespace gradlab {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;
/// A list of dims, possibly negative (-1 = last).
using Dims = std::vector<int64_t>;

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
