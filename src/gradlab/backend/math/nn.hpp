#pragma once
// The nn formulas of one row or element, written once for the CPU kernels (backend/cpu/nn.cpp)
// and the CUDA kernels (backend/cuda/nn.cuh): cross-entropy and the ReLU gradient.

#include <cstdint>
#include <limits>

#include "gradlab/backend/math/elementwise.hpp"

namespace gradlab::math {

/// dx = y > threshold ? dy : 0 (ReLU's backward from its output, threshold 0). T: a number, or on
/// the CPU an xsimd batch (select found by argument-dependent lookup, as in elementwise.hpp).
template <class T>
GRADLAB_HD inline T threshold_grad(T dy, T y, T threshold) {
  return select(y > threshold, dy, T(0));
}

template <class T>
struct CrossEntropyRow {
  T lse, loss;
};

/// One row of cross-entropy over the logits x[c * stride], c in [0, C), target class t:
///   lse = m + log Σ_c exp(x_c - m), m = the row max (0 when not finite, as logsumexp does)
///   loss = (1 - ε)(lse - x_t) + ε (lse - mean_c x_c)        (0 when the row is ignored)
/// t must be in [0, C) unless `ignored`.
template <class T>
GRADLAB_HD inline CrossEntropyRow<T> cross_entropy_row(const T* x, int64_t stride, int64_t C, int64_t t,
                                                       bool ignored, double smoothing) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < C; ++c) m = x[c * stride] > m ? x[c * stride] : m;
  if (!isfinite(m)) m = T(0);
  T s = 0, total = 0;
  for (int64_t c = 0; c < C; ++c) s += exp(x[c * stride] - m), total += x[c * stride];
  const T lse = m + log(s);
  if (ignored) return {lse, T(0)};
  const T nll = lse - x[t * stride];
  return {lse, smoothing > 0 ? static_cast<T>((1.0 - smoothing) * nll + smoothing * (lse - total / C)) : nll};
}

/// d loss / d x_c scaled by s: (exp(x_c - lse) - ε/C) s, less (1 - ε) s at the target class.
/// uniform = ε / C, hit = 1 - ε.
template <class T>
GRADLAB_HD inline T cross_entropy_grad(T x, T lse, bool is_target, T uniform, T hit, T s) {
  const T v = (exp(x - lse) - uniform) * s;
  return is_target ? v - hit * s : v;
}

}  // namespace gradlab::math
