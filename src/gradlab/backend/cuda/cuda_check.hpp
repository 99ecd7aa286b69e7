#pragma once
// GRADLAB_CUDA_CHECK: every CUDA runtime call goes through it (internal; host code of .cu files
// and runtime.cpp, which is compiled by g++ against the CUDA headers).

#include <cuda_runtime_api.h>

#include "gradlab/backend/cuda/runtime.hpp"

/// Checks a CUDA runtime call; a failure throws gradlab::Error naming the op and the call.
#define GRADLAB_CUDA_CHECK(call, op)                                                       \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess)                                                                 \
      ::gradlab::cuda_rt::throw_cuda_error(static_cast<int>(e_), cudaGetErrorName(e_),     \
                                           cudaGetErrorString(e_), #call, op);             \
  } while (0)
