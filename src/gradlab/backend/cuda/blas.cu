// Matrix products on the GPU: cuBLAS strided-batched GEMM (the emulator's loop is in blas.cuh).

#include <cublas_v2.h>

#include <climits>
#include <cstddef>
#include <mutex>
#include <string>

#include "gradlab/backend/cuda/blas.cuh"
#include "gradlab/backend/cuda/exec.cuh"
#include "gradlab/backend/cuda/runtime.hpp"
#include "gradlab/core/cuda.hpp"

namespace gradlab::gpu {

// Defined in elementwise.cu; used here for contiguous copies and the K = 0 fill.
extern template struct Elementwise<DeviceExec>;

namespace detail {

namespace {

// "<op>: cuBLAS call failed: <call> returned CUBLAS_STATUS_... (<code>): <text>"
void check_cublas(cublasStatus_t s, const char* call, const char* op) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw Error(error_message(
      op,
      std::string("cuBLAS call failed: ") + call + " returned " + cublasGetStatusName(s) + " (" +
          std::to_string(static_cast<int>(s)) + "): " + cublasGetStatusString(s),
      {}, {},
      s == CUBLAS_STATUS_NOT_INITIALIZED
          ? "cuBLAS could not start: check the driver and that the GPU is visible"
          : ""));
}
#define GRADLAB_CUBLAS_CHECK(call, op) check_cublas((call), #call, op)

// One handle for the process, made on first use. It is never destroyed: at exit the CUDA
// context may already be gone, and cublasDestroy would then fail or crash.
// NOTE: CUBLAS_DEFAULT_MATH keeps float32 GEMMs in true fp32: TF32 tensor cores
// (CUBLAS_TF32_TENSOR_OP_MATH) and BF16x9 emulation (CUBLAS_FP32_EMULATED_BF16X9_MATH) are
// opt-in modes, and a TF32 product differs from the CPU reference around the 3rd digit. Set
// explicitly so a later default or a copied snippet cannot silently trade parity for speed.
// NOTE: kernels and cuBLAS run on the legacy default stream, so they are ordered without syncs.
//
// NOTE: cuBLAS's workspace comes from the caching allocator. Left alone, cuBLAS cudaMallocs its
// own on first use, behind the allocator's back: when the cache holds nearly all device memory
// that fails, and the first GEMM reports ALLOC_FAILED or NOT_INITIALIZED. The same happens to
// cublasCreate's own small allocations, so a failed create empties the cache and tries once more.
// 32 MiB is what PyTorch gives cuBLAS on Hopper (CUBLAS_WORKSPACE_CONFIG :4096:8); the block is
// held for the life of the process, like the handle.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

cublasHandle_t handle(const char* op) {
  static std::mutex mu;
  static cublasHandle_t h = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (h == nullptr) {
    cublasHandle_t fresh = nullptr;
    cublasStatus_t s = cublasCreate(&fresh);
    if (s == CUBLAS_STATUS_ALLOC_FAILED || s == CUBLAS_STATUS_NOT_INITIALIZED) {
      cuda::empty_cache();
      s = cublasCreate(&fresh);
    }
    GRADLAB_CUBLAS_CHECK(s, op);
    void* workspace = cuda_rt::alloc(kCublasWorkspaceBytes, op);  // throws OutOfMemoryError
    s = cublasSetWorkspace(fresh, workspace, kCublasWorkspaceBytes);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetMathMode(fresh, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) {
      (void)cublasDestroy(fresh);
      cuda_rt::free(workspace);
    }
    GRADLAB_CUBLAS_CHECK(s, op);
    h = fresh;
  }
  return h;
}

// How a row-major [rows, cols] matrix with strides (rs, cs) reads as a column-major cuBLAS
// operand: rs = 1 is a column-major matrix (op T), cs = 1 a row-major one (op N, ld = rs).
// The same rules (and the same size-1 normalization) as cpu/blas.cpp's blas_layout.
struct Layout {
  bool ok = false;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 0;
};

Layout layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  // NOTE: a size-1 dim's stride is arbitrary (and ignored by is_contiguous): normalize it.
  if (cols == 1) cs = 1;
  if (rows == 1) rs = std::max<int64_t>(cols, 1);
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1))
    return {true, CUBLAS_OP_N, std::max(rs, std::max<int64_t>(cols, 1))};
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1))
    return {true, CUBLAS_OP_T, std::max(cs, std::max<int64_t>(rows, 1))};
  return {};
}

// x itself when cuBLAS can read its last two dims, else a contiguous copy.
Tensor blas_ready(const Tensor& x, Layout& l) {
  l = layout(x.size(1), x.size(2), x.stride(1), x.stride(2));
  if (l.ok) return x;
  Tensor c = make_tensor(x.sizes(), x.dtype(), x.device());
  Elementwise<DeviceExec>::copy(c, x);
  l = layout(c.size(1), c.size(2), c.stride(1), c.stride(2));
  return c;
}

void check_int(int64_t v, const char* what) {
  GRADLAB_CHECK(v <= INT_MAX, ShapeError, "matmul", std::string(what) + " too large for cuBLAS",
                "at most " + std::to_string(INT_MAX), std::to_string(v),
                "split the product into smaller pieces");
}

}  // namespace

Tensor cublas_bmm(const Tensor& a_in, const Tensor& b_in) {
  const int64_t B = a_in.size(0), M = a_in.size(1), K = a_in.size(2), N = b_in.size(2);
  Tensor out = make_tensor({B, M, N}, a_in.dtype(), a_in.device());
  if (out.numel() == 0) return out;
  if (K == 0) {  // an empty sum; cuBLAS is not asked to handle k = 0
    Elementwise<DeviceExec>::fill(out, 0);
    return out;
  }
  Layout la, lb;
  const Tensor a = blas_ready(a_in, la), b = blas_ready(b_in, lb);
  for (int64_t v : {B, M, N, K}) check_int(v, "a matrix size or batch count");
  check_int(la.ld, "a leading dimension");
  check_int(lb.ld, "a leading dimension");

  // Row-major C [M, N] is column-major Cᵀ [N, M], and Cᵀ = Bᵀ Aᵀ: so cuBLAS gets b first,
  // with m = N, n = M. A row-major operand (op N) already *is* its transpose in column-major
  // terms; a column-major one (rs = 1) is transposed by cuBLAS (op T). No copies either way.
  const int m = static_cast<int>(N), n = static_cast<int>(M), k = static_cast<int>(K);
  const long long sa = a.stride(0), sb = b.stride(0), sc = M * N;  // a batch stride may be 0
  cublasHandle_t h = handle("matmul");
  if (a.dtype() == kFloat32) {
    const float alpha = 1.0f, beta = 0.0f;
    GRADLAB_CUBLAS_CHECK(
        cublasSgemmStridedBatched(h, lb.op, la.op, m, n, k, &alpha, dptr<const float>(b),
                                  static_cast<int>(lb.ld), sb, dptr<const float>(a),
                                  static_cast<int>(la.ld), sa, &beta, dptr<float>(out), m, sc,
                                  static_cast<int>(B)),
        "matmul");
  } else if (a.dtype() == kFloat16 || a.dtype() == kBFloat16) {
    // Half operands and result, float32 accumulation and scalars (PyTorch's default for half
    // GEMMs); alpha / beta are float because the compute type is CUBLAS_COMPUTE_32F.
    const cudaDataType_t t = a.dtype() == kFloat16 ? CUDA_R_16F : CUDA_R_16BF;
    const float alpha = 1.0f, beta = 0.0f;
    GRADLAB_CUBLAS_CHECK(
        cublasGemmStridedBatchedEx(h, lb.op, la.op, m, n, k, &alpha, b.impl()->data(), t,
                                   static_cast<int>(lb.ld), sb, a.impl()->data(), t, static_cast<int>(la.ld),
                                   sa, &beta, out.impl()->data(), t, m, sc, static_cast<int>(B),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "matmul");
  } else {
    const double alpha = 1.0, beta = 0.0;
    GRADLAB_CUBLAS_CHECK(
        cublasDgemmStridedBatched(h, lb.op, la.op, m, n, k, &alpha, dptr<const double>(b),
                                  static_cast<int>(lb.ld), sb, dptr<const double>(a),
                                  static_cast<int>(la.ld), sa, &beta, dptr<double>(out), m, sc,
                                  static_cast<int>(B)),
        "matmul");
  }
  if (cuda_rt::sync_each_launch()) GRADLAB_CUDA_CHECK(cudaDeviceSynchronize(), "matmul");
  return out;
}

#undef GRADLAB_CUBLAS_CHECK

}  // namespace detail

template struct Blas<DeviceExec>;

}  // namespace gradlab::gpu
