#pragma once
// Batched matrix product c[b] = a[b] @ b[b]: a [B, M, K], b [B, K, N] -> [B, M, N], float32 or
// float64, any strides (a batch stride may be 0). CPU reference: cpu/blas.cpp (OpenBLAS).
//   On a GPU (DeviceExec): cuBLAS strided-batched GEMM (blas.cu).
//   Under the emulator (HostExec): one thread per output element, a plain dot product over K.
// NOTE: the two paths sum the K products in different orders; results agree with the CPU
// within rounding, not bit for bit.

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"

namespace gradlab::gpu::detail {

/// cuBLAS (Sgemm|Dgemm)StridedBatched for same-dtype float operands already checked by Blas::bmm;
/// float16 / bfloat16 operands through cublasGemmStridedBatchedEx with float32 accumulation.
/// Defined in blas.cu (nvcc only): only Blas<DeviceExec> calls it.
Tensor cublas_bmm(const Tensor& a, const Tensor& b);

// out[b, i, j] = Σ_k a[b, i, k] b[b, k, j]   (out contiguous; a, b through their strides)
template <class X, class T>
void bmm_loop(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t M = a.size(1), K = a.size(2), N = b.size(2);
  const int64_t as0 = a.stride(0), as1 = a.stride(1), as2 = a.stride(2);
  const int64_t bs0 = b.stride(0), bs1 = b.stride(1), bs2 = b.stride(2);
  const T* pa = dptr<const T>(a);
  const T* pb = dptr<const T>(b);
  T* pc = dptr<T>(out);
  X::for_each(
      out.numel(),
      [=] GRADLAB_HD(int64_t idx) {
        const int64_t j = idx % N, i = (idx / N) % M, n = idx / (N * M);
        const T* ra = pa + n * as0 + i * as1;
        const T* cb = pb + n * bs0 + j * bs2;
        T acc = T(0);
        for (int64_t k = 0; k < K; ++k) acc += ra[k * as2] * cb[k * bs1];
        pc[idx] = acc;
      },
      "matmul");
}

}  // namespace gradlab::gpu::detail

namespace gradlab::gpu {

template <class X>
Tensor Blas<X>::bmm(const Tensor& a, const Tensor& b) {
  // NOTE: float16 / bfloat16 reach Blas<DeviceExec> only (cublasGemmEx); under the emulator the
  // dispatcher (backend/kernels.cpp) widens them to float32 first.
  const bool half = a.dtype() == kFloat16 || a.dtype() == kBFloat16;
  GRADLAB_CHECK(a.dtype() == kFloat32 || a.dtype() == kFloat64 || (X::kOnDevice && half), DTypeError, "matmul",
                "BLAS multiplies floating-point matrices only", "float32 or float64",
                to_string(a.dtype()), "convert with .to(kFloat32) first");
  if constexpr (X::kOnDevice) {
    return detail::cublas_bmm(a, b);
  } else {
    Tensor out = make_tensor({a.size(0), a.size(1), b.size(2)}, a.dtype(), a.device());
    if (out.numel() == 0) return out;
    if (a.dtype() == kFloat32)
      detail::bmm_loop<X, float>(a, b, out);
    else
      detail::bmm_loop<X, double>(a, b, out);
    return out;
  }
}

}  // namespace gradlab::gpu
