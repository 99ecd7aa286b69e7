#include "gradlab/core/dispatch.hpp"

#include <string>

#include "gradlab/core/error.hpp"

namespace gradlab::dispatch {

namespace {
CudaMemory& cuda_table() {
  static CudaMemory m;
  return m;
}
CoreKernels& kernel_table() {
  static CoreKernels k;
  return k;
}
}  // namespace

void set_cuda_memory(const CudaMemory& m) { cuda_table() = m; }
const CudaMemory& cuda_memory(const char* op) {
  const CudaMemory& m = cuda_table();
  GRADLAB_CHECK(m.resolve && m.alloc && m.free, DeviceError, op, "no CUDA runtime is registered",
                "the CUDA runtime of libgradlab", "none", "link the full gradlab library");
  return m;
}

void set_core_kernels(const CoreKernels& k) { kernel_table() = k; }
const CoreKernels& core_kernels(const char* op) {
  const CoreKernels& k = kernel_table();
  GRADLAB_CHECK(k.copy && k.fill, Error, op, "no kernels are registered", "the kernels of libgradlab",
                "none", "do not make tensors during static initialization");
  return k;
}

}  // namespace gradlab::dispatch
