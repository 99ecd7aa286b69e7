#pragma once
// How a CUDA kernel of gradlab is written (internal).
//
// A kernel is the body of one GPU thread: a __host__ __device__ lambda `f(i)` for i in [0, n),
// handed to `X::for_each(n, f, op)`. X is the executor:
//   DeviceExec (exec.cuh, nvcc only): launches f as a grid-stride CUDA kernel, checks the launch;
//   HostExec   (this file):           runs f(0), f(1), ... on the CPU: the host emulator.
// Kernel families are class templates over X (gpu.hpp), defined in <family>.cuh, instantiated
// for DeviceExec in <family>.cu and for HostExec in emulate.cpp. So the index math of every
// kernel runs in CI, on a machine without a GPU, against the CPU reference (checks/cuda).
//
// NOTE: a kernel body reads and writes device memory only. Host code around it may look at a
// tensor's shape but never dereference its data: values cross with cuda_rt::copy_to_host.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gradlab/backend/math/elementwise.hpp"
#include "gradlab/backend/visit_dtype.hpp"
#include "gradlab/core/half.hpp"
#include "gradlab/core/tensor_impl.hpp"


namespace gradlab::gpu {

/// The most dims a CUDA kernel indexes (a bigger rank is an error that says to reshape).
inline constexpr int kMaxDims = 10;

/// Maps a linear index over `size` (row-major) to an element offset through `stride`.
/// Offsets are in elements from the tensor's first element.
struct Indexer {
  int rank = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};
  GRADLAB_HD int64_t operator()(int64_t i) const {
    if (rank == 1) return i * stride[0];  // the common case after make_indexer merges dims
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t s = size[d];
      off += (i % s) * stride[d];
      i /= s;
    }
    return off;
  }
};

/// An Indexer over `shape` with `strides`; throws ShapeError naming `op` when the rank is too big.
/// Size-1 dims are dropped and neighbours that step like one dim are merged (a contiguous tensor
/// becomes rank 1), so most kernels pay no 64-bit division per element.
Indexer make_indexer(const Shape& shape, const Strides& strides, const char* op);
inline Indexer make_indexer(const Tensor& t, const char* op) { return make_indexer(t.sizes(), t.strides(), op); }

/// Typed pointer to element 0 of t (a device address: only kernels dereference it).
template <class T>
T* dptr(const Tensor& t) {
  return reinterpret_cast<T*>(t.impl()->data());
}

/// Runs kernels on the CPU, one "thread" after another (the host emulator).
struct HostExec {
  static constexpr bool kOnDevice = false;
  template <class F>
  static void for_each(int64_t n, const F& f, const char* /*op*/) {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
};

// Half storage (core/half.hpp) and the scalar math every kernel uses (backend/math/).
using gradlab::BFloat16;
using gradlab::Conv;
using gradlab::convert;
using gradlab::Half;
using gradlab::kHalfType;
using gradlab::visit_dtype;
using gradlab::visit_storage_dtype;

}  // namespace gradlab::gpu

namespace gradlab::gpu {

/// *p += v, atomically on the GPU, so threads that hit the same element (scatter_add / index_add
/// with a repeated index) all land; a plain += under the host emulator (one thread at a time).
/// NOTE: float results then depend on the order the threads happen to run in (not bitwise
/// reproducible, and not the CPU's index order): compare them with a tolerance.
/// int64 goes through the unsigned long long overload: two's complement wraps the same way.
template <class T>
GRADLAB_HD inline void atomic_add(T* p, T v) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, int64_t>) {
    static_assert(sizeof(int64_t) == sizeof(unsigned long long));
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "atomic_add: float, double or int64");
    atomicAdd(p, v);  // double: sm_60 and newer
  }
#else
  *p += v;
#endif
}

}  // namespace gradlab::gpu
