#pragma once
// The CUDA device as users see it (mirrors torch::cuda and torch.cuda's memory functions).
// Every function here is safe to call in a CPU-only build or on a machine without a GPU.

#include <cstddef>
#include <string>

namespace gradlab::cuda {

/// True when CUDA tensors can be made: a GPU and a driver are there (or the host emulator is on).
bool is_available();
/// Number of usable devices (0 without a GPU or driver, or in a CPU-only build).
int device_count();
/// Why is_available() is false ("" when it is true): no nvcc at build time, no driver, no device.
std::string unavailable_reason();
/// The device's name ("NVIDIA H200", or "gradlab host emulator").
std::string device_name(int index = 0);
/// Waits for every kernel queued on the device.
void synchronize();

/// Bytes held by live CUDA tensors (rounded block sizes, like PyTorch's allocator).
std::size_t memory_allocated();
/// Highest memory_allocated() since start or the last reset_peak_memory_stats().
std::size_t max_memory_allocated();
void reset_peak_memory_stats();
/// memory_allocated() plus freed blocks the caching allocator keeps for reuse.
std::size_t memory_reserved();
/// Returns every cached (unused) block to the driver.
void empty_cache();
/// Free and total bytes on the device, as the driver reports them.
struct MemoryInfo {
  std::size_t free = 0, total = 0;
};
MemoryInfo mem_get_info();

/// Times device work with CUDA events (host clock under the emulator), in milliseconds.
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start();
  void stop();
  /// Waits for the stop event, then returns the time between start() and stop().
  double elapsed_ms();

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
  double host_start_ = 0, host_ms_ = 0;
};

/// The host emulator: "cuda" tensors live in host memory and every CUDA kernel of gradlab runs
/// as a plain loop on the CPU, thread index by thread index. It lets the CUDA backend's index
/// math, dispatch, allocator and autograd plumbing be tested on a machine without a GPU.
/// NOTE: it proves nothing about timing, shared memory, warps or cuBLAS: matmul uses a host loop.
namespace emulator {
/// Switches CUDA to the emulator with `capacity` bytes of "device" memory. Throws
/// DeviceError while CUDA tensors are alive.
void enable(std::size_t capacity = std::size_t{1} << 30);
void disable();
bool enabled();
}  // namespace emulator

/// CUDA index checks (index_select, gather, scatter_add, index_add, index_put_, nll_loss,
/// cross_entropy's targets) run on the device and never stall the host: an out-of-range index
/// is raised as the op's ShapeError at the next synchronization (item(), to_vector(), .cpu(),
/// synchronize(), Timer::elapsed_ms()), and the message says where it was raised. On (or with
/// GRADLAB_CUDA_SYNC=1): every check waits for its result and throws at the op, word for word
/// the CPU's message, at the cost of one blocking device-to-host copy per check.
void set_blocking_index_checks(bool on);
bool blocking_index_checks();

/// Testing aid: when on, every new CUDA block is filled with 0x7F bytes before a kernel writes
/// it, so an element a kernel forgets to write shows up as a huge value, not as a lucky zero.
void set_poison_allocations(bool on);
bool poison_allocations();

}  // namespace gradlab::cuda
