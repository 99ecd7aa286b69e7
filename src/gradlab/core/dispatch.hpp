#pragma once
// Where core/ reaches the layers above it (internal). core includes nothing above itself: the
// layers that serve it fill in these tables when the library loads.
//  - CUDA memory: the CUDA runtime (backend/cuda/runtime.cpp) resolves devices and allocates and
//    frees device memory for Storage;
//  - kernels: the dispatcher (backend/kernels.cpp) gives core's own functions (factories,
//    to_vector, item) copy and fill on any device.
// NOTE: nothing may call these before the library's static initializers have run (no Tensor is
// made during static initialization).

#include <cstddef>

#include "gradlab/core/device.hpp"

namespace gradlab {
class Tensor;
class Scalar;
}  // namespace gradlab

namespace gradlab::dispatch {

/// What Storage needs for a CUDA device.
struct CudaMemory {
  /// `d` with its index resolved; throws DeviceError naming `op` when CUDA is unavailable.
  Device (*resolve)(Device d, const char* op) = nullptr;
  /// nbytes > 0 bytes of device memory; throws OutOfMemoryError naming `op`.
  void* (*alloc)(std::size_t nbytes, const char* op) = nullptr;
  void (*free)(void* p) = nullptr;
};
void set_cuda_memory(const CudaMemory& m);
/// The registered table; throws DeviceError naming `op` when none is (a library without the
/// CUDA runtime).
const CudaMemory& cuda_memory(const char* op);

/// The kernels core's own functions call.
struct CoreKernels {
  /// dst[i] = src[i], any devices, dtypes and strides.
  void (*copy)(const Tensor& dst, const Tensor& src) = nullptr;
  /// dst[i] = v, any device, dtype and strides.
  void (*fill)(const Tensor& dst, const Scalar& v) = nullptr;
};
void set_core_kernels(const CoreKernels& k);
/// The registered table; throws Error naming `op` when none is.
const CoreKernels& core_kernels(const char* op);

}  // namespace gradlab::dispatch
