#include "gradlab/core/storage.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "gradlab/core/dispatch.hpp"

namespace gradlab {

namespace {
constexpr std::align_val_t kAlign{64};

// Freed blocks of at least kMinCached bytes (256 KiB: one batch-1024 MLP activation is 512 KiB)
// are kept (up to kMaxCached in all) and handed out again for the same size.
// NOTE: a fresh large block costs one page fault per 4 KiB page on its first write, which made a
// 16M-element elementwise op ~6x slower than writing into a reused buffer.
constexpr std::size_t kMinCached = std::size_t{256} << 10;
constexpr std::size_t kMaxCached = std::size_t{256} << 20;

struct Pool {
  std::mutex mu;
  std::multimap<std::size_t, void*> free_blocks;
  std::size_t cached = 0, allocated = 0, peak = 0;
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: storages may be freed during static destruction
  return *p;
}

void* take(std::size_t nbytes) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.allocated += nbytes;
  p.peak = std::max(p.peak, p.allocated);
  if (nbytes >= kMinCached) {
    auto it = p.free_blocks.find(nbytes);
    if (it != p.free_blocks.end()) {
      void* block = it->second;
      p.free_blocks.erase(it);
      p.cached -= nbytes;
      return block;
    }
  }
  return nullptr;
}

void give_back(void* block, std::size_t nbytes) {
  Pool& p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.allocated -= nbytes;
    if (nbytes >= kMinCached && p.cached + nbytes <= kMaxCached) {
      p.free_blocks.emplace(nbytes, block);
      p.cached += nbytes;
      return;
    }
  }
  ::operator delete(block, kAlign);
}
}  // namespace

namespace memory {
std::size_t allocated() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().allocated;
}
std::size_t max_allocated() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().peak;
}
void reset_peak() {
  std::lock_guard<std::mutex> lock(pool().mu);
  pool().peak = pool().allocated;
}
std::size_t cached() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().cached;
}
void empty_cache() {
  std::multimap<std::size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    blocks.swap(pool().free_blocks);
    pool().cached = 0;
  }
  for (auto& [n, b] : blocks) ::operator delete(b, kAlign);
}
}  // namespace memory

Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (device.is_cuda()) {
    const dispatch::CudaMemory& cuda = dispatch::cuda_memory("Storage");
    device_ = cuda.resolve(device, "Storage");
    if (nbytes > 0) data_ = cuda.alloc(nbytes, "Storage");
    return;
  }
  if (nbytes == 0) return;
  data_ = take(nbytes);
  if (data_) return;
  try {
    data_ = ::operator new(nbytes, kAlign, std::nothrow);
    if (!data_) {  // give cached blocks back to the system and try once more
      memory::empty_cache();
      data_ = ::operator new(nbytes, kAlign);
    }
  } catch (const std::bad_alloc&) {
    {
      std::lock_guard<std::mutex> lock(pool().mu);
      pool().allocated -= nbytes;
    }
    throw Error(error_message("Storage", "out of memory", std::to_string(nbytes) + " bytes",
                              "allocation failure",
                              "use a smaller batch, gradient accumulation, or no_grad for evaluation"));
  }
}

Storage::~Storage() {
  if (!data_) return;
  if (device_.is_cuda()) dispatch::cuda_memory("Storage").free(data_);
  else give_back(data_, nbytes_);
}

}  // namespace gradlab
