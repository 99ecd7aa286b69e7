#pragma once
// Which CUDA backend a checks/cuda test runs on.
//
//   GRADLAB_TEST_CUDA=emulator (default)  the host emulator: every CUDA kernel body runs on the
//                                         CPU. This is how the unit/property runs in CI check
//                                         the CUDA backend without a GPU.
//   GRADLAB_TEST_CUDA=device              a real GPU (the ctest runs labelled `cuda`). Without
//                                         one the test is skipped with the reason, unless
//                                         GRADLAB_REQUIRE_GPU=1, which turns that into a failure.
//
// Use:  TEST(CudaX, Y) { GRADLAB_USE_CUDA_BACKEND(); ... x.cuda() ... }

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gradlab/core/cuda.hpp"

namespace gradlab::testing_cuda {

inline bool want_device() {
  const char* v = std::getenv("GRADLAB_TEST_CUDA");
  return v && std::strcmp(v, "device") == 0;
}
inline bool require_gpu() {
  const char* v = std::getenv("GRADLAB_REQUIRE_GPU");
  return v && std::strcmp(v, "1") == 0;
}
/// "" when the backend is ready; else why the test cannot run.
inline std::string select_backend() {
  if (want_device()) {
    if (cuda::emulator::enabled()) cuda::emulator::disable();
    return cuda::is_available() ? std::string() : "no GPU: " + cuda::unavailable_reason();
  }
  if (!cuda::emulator::enabled()) cuda::emulator::enable();
  return {};
}
/// GRADLAB_CUDA_SYNC=1: every kernel is waited for and CUDA index checks raise at the op.
inline bool sync_each_launch() {
  const char* v = std::getenv("GRADLAB_CUDA_SYNC");
  return v && std::strcmp(v, "1") == 0;
}
/// Short name of the backend under test, for messages.
inline const char* backend_name() { return want_device() ? "GPU" : "host emulator"; }

}  // namespace gradlab::testing_cuda

/// Selects the backend for this test; skips (or, with GRADLAB_REQUIRE_GPU=1, fails) without a GPU.
#define GRADLAB_USE_CUDA_BACKEND()                                                                 \
  do {                                                                                             \
    const std::string why_ = ::gradlab::testing_cuda::select_backend();                            \
    if (!why_.empty()) {                                                                           \
      if (::gradlab::testing_cuda::require_gpu()) FAIL() << "GRADLAB_REQUIRE_GPU=1 but " << why_; \
      GTEST_SKIP() << why_;                                                                        \
    }                                                                                              \
  } while (0)
