#pragma once
// A caching allocator for device memory (internal). cudaMalloc/cudaFree are slow and
// synchronize the device, so freed blocks are kept in free lists and handed out again.
//
//   size class: round up to 512 B below 1 MiB, to 2 MiB from 1 MiB on
//   malloc:     reuse a cached block of the same class, else ask the driver; when the driver says
//               out of memory, give every cached block back and ask once more; then throw
//               OutOfMemoryError (asked, held by gradlab, free of total, and what to try)
//   free:       the block goes back to the free list of its class
//
// The raw memory source is an interface so that the same logic runs on the driver (runtime.cpp)
// and on a host emulator with a fixed capacity (used by the CPU tests of the OOM path).

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gradlab::cuda_rt {

/// Where blocks come from: cudaMalloc on a GPU, or host memory under the emulator.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  /// nullptr when the device is out of memory (other failures throw).
  virtual void* malloc(std::size_t nbytes) = 0;
  virtual void free(void* p) = 0;
  /// (free, total) bytes of the device.
  virtual std::pair<std::size_t, std::size_t> mem_info() = 0;
  /// "cuda:0", "emulator" (for messages).
  virtual std::string where() const = 0;
};

struct AllocatorStats {
  std::size_t allocated = 0;  ///< bytes in live blocks (rounded sizes)
  std::size_t peak = 0;       ///< highest `allocated` since the last reset
  std::size_t cached = 0;     ///< bytes in free lists
  std::size_t driver_calls = 0;  ///< raw mallocs so far (a cache hit makes none)
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawMemory& raw) : raw_(raw) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least nbytes (nbytes > 0). Throws OutOfMemoryError naming `op`.
  void* malloc(std::size_t nbytes, const char* op);
  /// Returns a block from malloc() to the cache.
  void free(void* p);
  /// Gives every cached block back to the raw source.
  void empty_cache();
  AllocatorStats stats() const;
  void reset_peak();

  /// The size class of a request (see the top of this file).
  static std::size_t round_size(std::size_t nbytes);

 private:
  RawMemory& raw_;
  mutable std::mutex mu_;
  std::multimap<std::size_t, void*> free_;       // size class -> cached blocks
  std::unordered_map<void*, std::size_t> live_;  // block -> size class
  AllocatorStats stats_;
};

/// "1.50 GiB", "300.0 MiB", "512 B".
std::string format_bytes(std::size_t n);

}  // namespace gradlab::cuda_rt
