#pragma once
// The CUDA runtime seen by the rest of gradlab (internal): which backend serves "cuda" tensors,
// device memory through the caching allocator, copies, and CUDA error reporting.
// No CUDA header here: core/ and the host emulator include this in CPU-only builds too.

#include <cstddef>
#include <cstdint>
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

// ---- index checks on the device --------------------------------------------------------------
// An index check (index_select, gather, scatter_add, index_add, index_put_, nll_loss, and
// cross_entropy's targets) runs as kernels that leave the first bad index in one record in
// device memory; nothing crosses to the host at the op. The host reads the record at the next
// point where it waits for the device anyway (copy_to_host: item(), to_vector(), .cpu();
// cuda::synchronize(); cuda::Timer::elapsed_ms()) and throws the op's ShapeError there. The
// kernels that use the indices skip a bad one (gather / index_select write 0), so a bad index
// is never read through, only reported late.
// GRADLAB_CUDA_SYNC=1 or cuda::set_blocking_index_checks(true): the record is read at the op
// (one blocking copy per check) and the error is raised there, word for word the CPU's.

/// What a failed check reports. Kernels fill it (device memory; host memory under the
/// emulator) only while `set` is 0, so the first failure in stream order is the one kept.
struct DeviceErrorRecord {
  int64_t set = 0;    ///< 1 once a check failed
  int64_t site = 0;   ///< error_site(): which op, and its wording
  int64_t pos = 0;    ///< first bad position, in the index's row-major order
  int64_t value = 0;  ///< the bad index (or target) found there
  int64_t bound = 0;  ///< the valid range is [0, bound)
};
/// Indices into a dim, or class targets of cross_entropy (the two CPU wordings).
enum class CheckKind { Index, Target };
/// A small number that names (op, kind) in DeviceErrorRecord::site. `op` is copied.
int64_t error_site(const char* op, CheckKind kind);
/// The record of the active backend (allocated on first use, outside the caching allocator,
/// so memory statistics do not see it).
DeviceErrorRecord* device_error_record(const char* op);
/// Called after a check's kernels are queued: the next synchronization reads the record. Reads
/// it at once (and throws) with GRADLAB_CUDA_SYNC=1 or blocking index checks on.
void check_queued(const char* op);
/// Throws the ShapeError of a failed check and clears the record; returns at once when no check
/// was queued since the last read. `where` names the synchronization point for the message.
void raise_device_error(const char* where);
/// cuda::set_blocking_index_checks (see core/cuda.hpp).
bool blocking_index_checks();

}  // namespace gradlab::cuda_rt
