// The teaching kernel: a shared-memory tiled matrix product, c = a @ b (lesson 17, bench/).
// gradlab::matmul itself calls cuBLAS (blas.cu); cublas_matmul below is that call on its own,
// for side-by-side timing. Declarations: tiled_matmul.hpp.
//
// Why tiles: a naive kernel (one thread per c[i, j]) reads row i of a and column j of b from
// global memory, K loads each, for every output; neighbours reload the same values. Here a
// block of TILE x TILE threads computes a TILE x TILE patch of c: for each step along K it copies
// one TILE x TILE tile of a and one of b into shared memory (one element per thread), waits for
// the whole block, then every thread reads its row / column from the fast shared copy. Global
// traffic drops by a factor TILE.
//
//             K                         N                     N
//       +-----------+            +-----------+          +-----------+
//     M | ==tile==> |   @      K |  |tile|   |   =    M |    [c]    |   c patch = Σ over
//       +-----------+            |  v    v   |          +-----------+   the K/TILE tile pairs
//                                +-----------+

#include "gradlab/backend/cuda/blas.cuh"
#include "gradlab/backend/cuda/exec.cuh"
#include "gradlab/backend/cuda/tiled_matmul.hpp"
#include "gradlab/backend/kernels.hpp"
#include "gradlab/core/shape.hpp"

namespace gradlab::gpu {

namespace {

constexpr int kTile = 32;  // 32 x 32 = 1024 threads per block; a warp is one row of the tile

// a [M, K], b [K, N], c [M, N], all contiguous (row-major).
template <class T>
__global__ void tiled_matmul_kernel(const T* a, const T* b, T* c, int64_t M, int64_t K, int64_t N) {
  __shared__ T a_tile[kTile][kTile];
  __shared__ T b_tile[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + ty;  // of c (and a)
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;  // of c (and b)
  T acc = T(0);
  for (int64_t k0 = 0; k0 < K; k0 += kTile) {
    // Stage: thread (ty, tx) loads a[row, k0 + tx] and b[k0 + ty, col]. Outside the matrices
    // (sizes that are not multiples of kTile) it loads 0, which adds nothing to the sum.
    a_tile[ty][tx] = (row < M && k0 + tx < K) ? a[row * K + k0 + tx] : T(0);
    b_tile[ty][tx] = (k0 + ty < K && col < N) ? b[(k0 + ty) * N + col] : T(0);
    __syncthreads();  // every load of this step is done before anyone reads the tiles
    // NOTE: within a warp (fixed ty) a_tile[ty][k] is one broadcast address and b_tile[k][tx]
    // 32 consecutive words: no shared-memory bank conflicts.
    for (int k = 0; k < kTile; ++k) acc += a_tile[ty][k] * b_tile[k][tx];
    __syncthreads();  // every read is done before the next step overwrites the tiles
  }
  // Threads past the edge still took part in the loads and barriers above; only now do they
  // stop. (A return before __syncthreads would leave the rest of the block waiting forever.)
  if (row < M && col < N) c[row * N + col] = acc;
}

// Shared checks of tiled_matmul and cublas_matmul.
void check_args(const char* op, const Tensor& a, const Tensor& b) {
  GRADLAB_CHECK(a.defined() && b.defined(), ValueError, op, "got an undefined tensor");
  GRADLAB_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, op, "expected two matrices",
                "[M, K] and [K, N]", shape_str(a.sizes()) + " and " + shape_str(b.sizes()),
                "gradlab::matmul handles batches and vectors");
  GRADLAB_CHECK(a.size(1) == b.size(0), ShapeError, op, "inner sizes differ", "[M, K] @ [K, N]",
                shape_str(a.sizes()) + " @ " + shape_str(b.sizes()));
  GRADLAB_CHECK(
      a.dtype() == b.dtype() && (a.dtype() == kFloat32 || a.dtype() == kFloat64), DTypeError, op,
      "expected two float32 or two float64 matrices", "float32 or float64 (both the same)",
      to_string(a.dtype()) + " and " + to_string(b.dtype()), "convert with .to(kFloat32)");
  GRADLAB_CHECK(a.is_cuda() && b.is_cuda(), DeviceError, op, "expected CUDA tensors",
                "cuda and cuda", a.device().str() + " and " + b.device().str(),
                "move them with .cuda()");
  GRADLAB_CHECK(cuda_rt::backend() == cuda_rt::Backend::Device, DeviceError, op,
                "needs a real GPU: the host emulator runs gradlab's generic kernels only",
                "a CUDA device", "the host emulator",
                "use gradlab::matmul, which runs on the emulator too");
}

}  // namespace

}  // namespace gradlab::gpu

namespace gradlab::cuda {

Tensor tiled_matmul(const Tensor& a_in, const Tensor& b_in) {
  const char* op = "tiled_matmul";
  gpu::check_args(op, a_in, b_in);
  const Tensor a = kern::contiguous(a_in), b = kern::contiguous(b_in);
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  Tensor c = make_tensor({M, N}, a.dtype(), a.device());
  if (c.numel() == 0) return c;
  const int64_t gx = (N + gpu::kTile - 1) / gpu::kTile, gy = (M + gpu::kTile - 1) / gpu::kTile;
  GRADLAB_CHECK(gy <= 65535 && gx <= INT32_MAX, ShapeError, op, "matrix too large for one grid",
                "M <= " + std::to_string(65535 * gpu::kTile), shape_str(c.sizes()));
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy)),
      block(gpu::kTile, gpu::kTile);
  if (a.dtype() == kFloat32)
    gpu::tiled_matmul_kernel<float><<<grid, block>>>(
        gpu::dptr<const float>(a), gpu::dptr<const float>(b), gpu::dptr<float>(c), M, K, N);
  else
    gpu::tiled_matmul_kernel<double><<<grid, block>>>(
        gpu::dptr<const double>(a), gpu::dptr<const double>(b), gpu::dptr<double>(c), M, K, N);
  GRADLAB_CUDA_CHECK(cudaGetLastError(), op);
  if (cuda_rt::sync_each_launch()) GRADLAB_CUDA_CHECK(cudaDeviceSynchronize(), op);
  return c;
}

Tensor cublas_matmul(const Tensor& a, const Tensor& b) {
  gpu::check_args("cublas_matmul", a, b);
  // [M, K] @ [K, N] as a batch of one: views, no copy (cuBLAS reads transposed operands as is).
  Tensor a3 =
      make_view(a, {1, a.size(0), a.size(1)}, {0, a.stride(0), a.stride(1)}, a.storage_offset());
  Tensor b3 =
      make_view(b, {1, b.size(0), b.size(1)}, {0, b.stride(0), b.stride(1)}, b.storage_offset());
  Tensor c = gpu::detail::cublas_bmm(a3, b3);  // fresh and contiguous [1, M, N]: drop the 1
  TensorImpl* impl = c.impl();
  impl->sizes.erase(impl->sizes.begin());
  impl->strides.erase(impl->strides.begin());
  return c;
}

}  // namespace gradlab::cuda
