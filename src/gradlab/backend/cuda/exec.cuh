#pragma once
// DeviceExec: runs a kernel body on the GPU (nvcc only; see exec.hpp for the model).

#include <algorithm>

#include "gradlab/backend/cuda/cuda_check.hpp"
#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/runtime.hpp"

namespace gradlab::gpu {

// One thread per index, grid-stride: thread t handles t, t + gridDim*blockDim, ...
template <class F>
__global__ void for_each_kernel(int64_t n, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) f(i);
}

struct DeviceExec {
  static constexpr bool kOnDevice = true;
  static constexpr int kThreads = 256;
  template <class F>
  static void for_each(int64_t n, const F& f, const char* op) {
    if (n <= 0) return;
    // Enough blocks to fill an H200 many times over; beyond that the grid-stride loop takes over.
    const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{1} << 16);
    for_each_kernel<<<static_cast<unsigned>(blocks), kThreads>>>(n, f);
    GRADLAB_CUDA_CHECK(cudaGetLastError(), op);
    if (cuda_rt::sync_each_launch()) GRADLAB_CUDA_CHECK(cudaDeviceSynchronize(), op);
  }
};

}  // namespace gradlab::gpu
