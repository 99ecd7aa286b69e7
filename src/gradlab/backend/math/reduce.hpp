#pragma once
// The reduction formulas, written once for the CPU kernels (backend/cpu/reduce.cpp) and the CUDA
// kernels (backend/cuda/reduce.cuh): what a reduction starts from and how it folds in one value.

#include <cstdint>
#include <type_traits>

#include "gradlab/core/half.hpp"

namespace gradlab::math {

enum class Reduce { Sum, Max, Min };

/// float32 / float64 accumulate in double, int64 and bool in int64.
template <class T>
using ReduceAcc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

/// acc ⊕ v. max/min: NaN wins (a NaN acc is never replaced by a number), as in PyTorch.
template <class A>
GRADLAB_HD inline A reduce_combine(Reduce op, A acc, A v) {
  switch (op) {
    case Reduce::Sum: return acc + v;
    case Reduce::Max: return (v > acc || v != v) ? v : acc;
    case Reduce::Min: return (v < acc || v != v) ? v : acc;
  }
  return acc;
}

/// Max and min start from the first element of a row (an empty row is an error); sum from 0.
inline constexpr bool reduce_from_first(Reduce op) { return op != Reduce::Sum; }

inline const char* reduce_name(Reduce op) {
  switch (op) {
    case Reduce::Sum: return "sum";
    case Reduce::Max: return "max";
    case Reduce::Min: return "min";
  }
  return "reduce";
}

}  // namespace gradlab::math
