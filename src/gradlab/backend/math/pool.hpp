#pragma once
// The max-pooling window, written once for the CPU kernel (backend/cpu/conv.cpp) and the CUDA
// kernel with its host emulator (backend/cuda/nn.cuh), so their values and indices agree exactly.

#include <cstdint>
#include <limits>

#include "gradlab/core/half.hpp"

namespace gradlab::math {

template <class T>
struct PoolMax {
  T value;
  int64_t index;  // flat iy * W + ix of the winner in the [H, W] plane
};

/// The max of the window of output (y, x) over a [H, W] plane read at plane[iy * s_h + ix * s_w]:
///   iy = y sh - ph + i dh, i in [0, kh);   ix = x sw - pw + j dw, j in [0, kw)
/// Padding (iy or ix outside the plane) never wins; index 0 when the window is all padding.
/// NaN wins and propagates, as in PyTorch; otherwise the first maximum wins.
/// NOTE: a NaN ends the scan of its window row only; a later row's NaN takes the index.
template <class T, class Window>
GRADLAB_HD inline PoolMax<T> max_pool_window(const T* plane, int64_t s_h, int64_t s_w, int64_t H,
                                             int64_t W, const Window& w, int64_t y, int64_t x) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t arg = -1;
  for (int64_t i = 0; i < w.kh; ++i) {
    const int64_t iy = y * w.sh - w.ph + i * w.dh;
    if (iy < 0 || iy >= H) continue;
    for (int64_t j = 0; j < w.kw; ++j) {
      const int64_t ix = x * w.sw - w.pw + j * w.dw;
      if (ix < 0 || ix >= W) continue;
      const T v = plane[iy * s_h + ix * s_w];
      if (arg < 0 || v > best || v != v) {
        best = v;
        arg = iy * W + ix;
        if (v != v) break;
      }
    }
  }
  return {best, arg < 0 ? 0 : arg};
}

}  // namespace gradlab::math
