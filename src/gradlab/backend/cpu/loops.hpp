#pragma once
// Strided iteration shared by the kernels: visit every innermost row of a shape once, with the
// element offset of each operand at the row's start.

#include <array>
#include <cstdint>
#include <vector>

#include "gradlab/backend/visit_dtype.hpp"
#include "gradlab/core/shape.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::cpu {

/// The number of rows for_each_row visits (1 for rank 0, 0 when empty).
inline int64_t rows_of(const Shape& shape) {
  const int64_t numel = numel_of(shape);
  if (numel == 0) return 0;
  return shape.empty() ? 1 : numel / shape.back();
}

/// for_each_row restricted to rows [r0, r1) (a parallel_for chunk of rows_of(shape)).
template <size_t K, class F>
void for_each_row_in(const Shape& shape, const std::array<const Strides*, K>& st, int64_t r0,
                     int64_t r1, F&& f) {
  const size_t rank = shape.size();
  if (numel_of(shape) == 0 || r0 >= r1) return;
  std::array<int64_t, K> off{};
  std::array<int64_t, K> inner{};
  if (rank == 0) {
    f(off, int64_t{1}, inner);
    return;
  }
  const int64_t n = shape.back();
  for (size_t k = 0; k < K; ++k) inner[k] = (*st[k])[rank - 1];
  // The multi-index of row r0 over the leading dims (last of them fastest), and its offsets.
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = r0, d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
    idx[d] = r % shape[d];
    r /= shape[d];
    for (size_t k = 0; k < K; ++k) off[k] += idx[d] * (*st[k])[d];
  }
  for (int64_t r = r0; r < r1; ++r) {
    f(off, n, inner);
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < K; ++k) off[k] += (*st[k])[d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= (*st[k])[d] * shape[d];
      idx[d] = 0;
    }
  }
}

/// Calls f(offsets, n, inner_strides) for each row of the last dim, where offsets[k] is operand
/// k's element offset at the row start. Rank 0 is one row of one element.
template <size_t K, class F>
void for_each_row(const Shape& shape, const std::array<const Strides*, K>& st, F&& f) {
  for_each_row_in<K>(shape, st, 0, rows_of(shape), f);
}

template <class T>
T* ptr(const Tensor& t) {
  return reinterpret_cast<T*>(t.impl()->data());
}

/// True when every stride is 0 (a broadcast single value) and the tensor is non-empty.
inline bool is_broadcast_scalar(const Tensor& t) {
  for (auto s : t.strides())
    if (s != 0) return false;
  return t.numel() > 0;
}

}  // namespace gradlab::cpu
