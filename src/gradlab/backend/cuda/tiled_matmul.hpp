#pragma once
// Two hand-called CUDA matrix products, for teaching and benchmarks (bench_cuda, checks/cuda): the
// readable shared-memory tiled kernel (tiled_matmul.cu, beside this header) next to the cuBLAS
// call that gradlab::matmul makes. Not part of gradlab.hpp: include this header to use them.
// Neither records autograd history, and both need a real GPU: on the host emulator, on CPU
// tensors or in a CPU-only build they throw DeviceError. Use gradlab::matmul everywhere else.

#include "gradlab/core/tensor.hpp"

namespace gradlab::cuda {

/// c = a @ b with the teaching kernel (backend/cuda/tiled_matmul.cu): 32x32 tiles staged in
/// shared memory. a [M, K], b [K, N], both CUDA, same dtype (float32 or float64); non-contiguous
/// inputs are copied to contiguous first. Returns a contiguous [M, N] CUDA tensor.
Tensor tiled_matmul(const Tensor& a, const Tensor& b);

/// c = a @ b through one cuBLAS GEMM (what gradlab::matmul runs on a GPU), same contract as
/// tiled_matmul; float32 stays true fp32 (no TF32).
Tensor cublas_matmul(const Tensor& a, const Tensor& b);

}  // namespace gradlab::cuda
