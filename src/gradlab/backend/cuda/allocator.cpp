#include "gradlab/backend/cuda/allocator.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/storage.hpp"

namespace gradlab::cuda_rt {

namespace {
constexpr std::size_t kSmall = std::size_t{1} << 20;     // below: 512 B granules
constexpr std::size_t kLargeGranule = std::size_t{2} << 20;
}  // namespace

std::string format_bytes(std::size_t n) { return memory::format_bytes(n); }

std::size_t CachingAllocator::round_size(std::size_t nbytes) {
  const std::size_t g = nbytes < kSmall ? 512 : kLargeGranule;
  return (std::max<std::size_t>(nbytes, 1) + g - 1) / g * g;
}

CachingAllocator::~CachingAllocator() {
  // Live blocks are leaked on purpose: tensors may outlive the allocator at static destruction.
  for (auto& [n, p] : free_) raw_.free(p);
}

void* CachingAllocator::malloc(std::size_t nbytes, const char* op) {
  const std::size_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  if (auto it = free_.find(size); it != free_.end()) {
    p = it->second;
    free_.erase(it);
    stats_.cached -= size;
  } else {
    ++stats_.driver_calls;
    p = raw_.malloc(size);
    if (!p && !free_.empty()) {  // out of memory: hand the cache back and try once more
      for (auto& [n, q] : free_) raw_.free(q);
      free_.clear();
      stats_.cached = 0;
      ++stats_.driver_calls;
      p = raw_.malloc(size);
    }
    if (!p) {
      auto [fr, total] = raw_.mem_info();
      throw OutOfMemoryError(error_message(
          op, "out of memory on " + raw_.where() + " while allocating " + format_bytes(size),
          "room for " + format_bytes(size),
          format_bytes(fr) + " free of " + format_bytes(total) + " total; gradlab holds " +
              format_bytes(stats_.allocated) + " in live tensors (peak " + format_bytes(stats_.peak) +
              ") and " + format_bytes(stats_.cached) + " cached",
          memory::out_of_memory_hint() + "; cuda::empty_cache() before a big allocation"));
    }
  }
  live_.emplace(p, size);
  stats_.allocated += size;
  stats_.peak = std::max(stats_.peak, stats_.allocated);
  return p;
}

void CachingAllocator::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // not ours (cannot happen through Storage)
  const std::size_t size = it->second;
  live_.erase(it);
  stats_.allocated -= size;
  free_.emplace(size, p);
  stats_.cached += size;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [n, p] : free_) raw_.free(p);
  free_.clear();
  stats_.cached = 0;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak = stats_.allocated;
}

}  // namespace gradlab::cuda_rt
