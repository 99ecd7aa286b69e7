#pragma once
// The CUDA runtime seen by the rest of gradlab (internal): which backend serves "cuda" tensors,
// device memory through the caching allocator, copies, and CUDA error reporting.
// No CUDA header here: core/ and the host emulator include this in CPU-only builds too.

#include <cstddef>
#include <string>

#include "gradlab/core/device.hpp"

namespace gradlab::cuda_rt {

/// Who serves CUDA tensors right now.
enum class Backend { None, Device, Emulator };
Backend backend();

/// `d` with its index resolved (-1 -> 0); throws DeviceError naming `op` when CUDA is not
/// available or the index is out of range.
Device resolve(Device d, const char* op);

/// Device memory for a Storage (nbytes > 0); throws OutOfMemoryError naming `op`.
void* alloc(std::size_t nbytes, const char* op);
void free(void* p);

/// Copies (synchronous). `op` names the caller in error messages.
void copy_to_host(void* dst, const void* src, std::size_t n, const char* op);
void copy_from_host(void* dst, const void* src, std::size_t n, const char* op);
void copy_on_device(void* dst, const void* src, std::size_t n, const char* op);
void memset(void* p, int byte, std::size_t n, const char* op);

/// Throws gradlab::Error: "<op>: CUDA call failed: <call> returned <name> (<code>): <string>".
[[noreturn]] void throw_cuda_error(int code, const char* name, const char* text, const char* call,
                                   const char* op);
/// True when GRADLAB_CUDA_SYNC=1: kernels are waited for one by one, so an error that shows up
/// asynchronously is reported by the op that caused it (like CUDA_LAUNCH_BLOCKING=1).
bool sync_each_launch();

}  // namespace gradlab::cuda_rt
