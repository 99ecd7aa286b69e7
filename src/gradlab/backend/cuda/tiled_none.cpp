// CPU-only builds (no nvcc): the CUDA matrix products of tiled_matmul.hpp still link,
// and say why they cannot run. With CUDA they are defined in tiled_matmul.cu.

#include "gradlab/backend/cuda/tiled_matmul.hpp"

#if !GRADLAB_HAVE_CUDA

namespace gradlab::cuda {

namespace {
[[noreturn]] void no_cuda(const char* op) {
  throw DeviceError(error_message(op, "needs a real GPU, and gradlab was built without CUDA",
                                  "a CUDA build on a machine with a GPU", "a CPU-only build",
                                  "use gradlab::matmul; rebuild with nvcc on PATH for the kernel"));
}
}  // namespace

Tensor tiled_matmul(const Tensor&, const Tensor&) { no_cuda("tiled_matmul"); }
Tensor cublas_matmul(const Tensor&, const Tensor&) { no_cuda("cublas_matmul"); }

}  // namespace gradlab::cuda

#endif
