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

/// Calls f(offsets, n, inner_strides) for each row of the last dim, where offsets[k] is operand
/// k's element offset at the row start. Rank 0 is one row of one element.
template <size_t K, class F>
void for_each_row(const Shape& shape, const std::array<const Strides*, K>& st, F&& f) {
  const size_t rank = shape.size();
  if (numel_of(shape) == 0) return;
  std::array<int64_t, K> off{};
  std::array<int64_t, K> inner{};
  if (rank == 0) {
    f(off, int64_t{1}, inner);
    return;
  }
  const int64_t n = shape.back();
  for (size_t k = 0; k < K; ++k) inner[k] = (*st[k])[rank - 1];
  const int64_t rows = numel_of(shape) / n;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
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
