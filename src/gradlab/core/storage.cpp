#include "gradlab/core/storage.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "gradlab/core/dispatch.hpp"

#if defined(__GLIBC__)
#include <malloc.h>  // malloc_trim
#endif

namespace gradlab {

namespace {
constexpr std::align_val_t kAlign{64};

// Freed blocks of at least kMinCached bytes are kept and handed out again for the same size.
// kMinCached is glibc malloc's default mmap threshold: below it malloc serves and reuses blocks
// from its own heap; at or above it, a block given back to the system is unmapped, and the next
// one is mapped afresh and faults once per 4 KiB page on its first write (the kernel zeroes each
// page). That made a 16M-element elementwise op ~6x slower than writing into a reused buffer.
// Bound: cached <= kCacheFloor + 2 x the highest allocated() the process has reached (high_water,
// which reset_peak leaves alone). A freed block that would pass it pushes out the least recently
// freed blocks first, so sizes never asked for again age out.
// NOTE: blocks are reused for their exact size only, so a repeating training step needs one
// cached block per distinct buffer it frees, which adds up to more than its peak: 1.7x (a small
// CNN) to 2x (a DCGAN) of high_water was measured (bench_memory faults/*). The old bound, a fixed
// 256 MiB that turned the newest free away when full, made a full-width DCGAN at batch 64 map
// fresh pages on every op: 143k page faults per step, and its step took 1.7x as long.
constexpr std::size_t kCacheFloor = std::size_t{256} << 20;
constexpr std::size_t kMinCached = std::size_t{128} << 10;

struct Block {
  std::size_t size;
  void* ptr;
};
using Lru = std::list<Block>;  // least recently freed first

struct Pool {
  std::mutex mu;
  Lru lru;
  std::multimap<std::size_t, Lru::iterator> by_size;  // the same blocks, by size
  std::size_t cached = 0, allocated = 0, peak = 0, high_water = 0, limit = 0;
  memory::Stats st;  // the counters summary() prints (allocated / cached / peak live above)
};
// glibc's malloc adapts two thresholds to the program (mallopt(3), "dynamic mmap threshold"):
// when a block it had mapped is freed, the mmap threshold rises to that block's size (at most
// 32 MiB) and the heap-trim threshold to twice that. gradlab keeps its big blocks, so in a
// gradlab program that never happens: the trim threshold stays at 128 KiB, the heap's top is
// given back to the system each time a step's small buffers (< kMinCached) are freed, and mapped
// afresh (one fault per 4 KiB page, zeroed by the kernel) when the next step takes them again.
// A LibTorch program raises both thresholds by freeing its first large tensors. prime_malloc()
// does the same once, with one kPrimeBytes block: then up to 2 x kPrimeBytes of free heap top
// stay mapped between steps, and blocks under kPrimeBytes come from the heap (the cached ones
// stay cached; empty_cache() hands the heap's free pages back with malloc_trim). A program that
// set the thresholds itself (mallopt, MALLOC_TRIM_THRESHOLD_=...) turned the adaptation off, and
// this free changes nothing there.
constexpr std::size_t kPrimeBytes = std::size_t{4} << 20;
void prime_malloc() {
#if defined(__GLIBC__)
  void* volatile block = std::malloc(kPrimeBytes);  // volatile: the pair must not be elided
  std::free(block);
#endif
}

Pool& pool() {
  static Pool* p = [] {
    prime_malloc();
    return new Pool;  // never destroyed: storages may be freed during static destruction
  }();
  return *p;
}

// Under p.mu. Removes a cached block from both indexes.
void uncache(Pool& p, std::multimap<std::size_t, Lru::iterator>::iterator it) {
  p.cached -= it->first;
  p.lru.erase(it->second);
  p.by_size.erase(it);
}

// Under p.mu. Hands every cached block to `out` (freed by the caller, outside the lock).
void drain_cache(Pool& p, std::vector<Block>& out) {
  out.insert(out.end(), p.lru.begin(), p.lru.end());
  p.lru.clear();
  p.by_size.clear();
  p.cached = 0;
}

void release(const std::vector<Block>& blocks) {
  for (const Block& b : blocks) ::operator delete(b.ptr, kAlign);
}

// Counts an allocation of nbytes and returns a cached block of that size, or nullptr (the caller
// then asks the system). Throws OutOfMemoryError when a limit is set and would be passed.
void* take(std::size_t nbytes, const char* op) {
  Pool& p = pool();
  std::vector<Block> released;
  std::string oom;  // the message, thrown once the lock is released
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (nbytes >= kMinCached) {
      // The most recently freed block of that size: the likeliest to be still in cache.
      auto it = p.by_size.upper_bound(nbytes);
      if (it != p.by_size.begin() && (--it)->first == nbytes) {  // reused: reserved bytes do not change
        block = it->second->ptr;
        uncache(p, it);
        ++p.st.cache_hits;
      }
    }
    // NOTE: the limit bounds reserved = allocated + cached. Past it, the cache goes back to the
    // system first (as the CUDA allocator does on a failed cudaMalloc), then the live bytes decide.
    if (!block && p.limit != 0 && p.allocated + p.cached + nbytes > p.limit) {
      drain_cache(p, released);
      if (p.allocated + nbytes > p.limit) {
        ++p.st.ooms;
        std::size_t freed = 0;
        for (const Block& b : released) freed += b.size;
        using memory::format_bytes;
        auto exact = [](std::size_t n) { return format_bytes(n) + " (" + std::to_string(n) + " bytes)"; };
        oom = error_message(
            op,
            "out of memory on cpu while allocating " + exact(nbytes) + " under memory::set_limit(" +
                exact(p.limit) + ")",
            "requested + allocated <= limit",
            "requested " + exact(nbytes) + ", allocated " + exact(p.allocated) + " in live tensors (peak " +
                format_bytes(p.peak) + "), cached " + exact(freed) + " (given back to the system first), limit " +
                exact(p.limit),
            memory::out_of_memory_hint() + "; memory::summary() shows where the bytes are");
      }
    }
    if (oom.empty()) {
      p.allocated += nbytes;
      p.peak = std::max(p.peak, p.allocated);
      p.high_water = std::max(p.high_water, p.allocated);
      p.st.allocated_total += nbytes;
      ++p.st.allocations;
      ++p.st.allocations_total;
      p.st.allocations_peak = std::max(p.st.allocations_peak, p.st.allocations);
      p.st.reserved_peak = std::max(p.st.reserved_peak, p.allocated + p.cached);
    }
  }
  release(released);
  if (!oom.empty()) throw OutOfMemoryError(oom);
  return block;
}

// Undoes take()'s counting when the system has no memory either.
void untake(std::size_t nbytes) {
  std::lock_guard<std::mutex> lock(pool().mu);
  Pool& p = pool();
  p.allocated -= nbytes;
  p.st.allocated_total -= nbytes;
  --p.st.allocations;
  --p.st.allocations_total;
  ++p.st.ooms;
}

void give_back(void* block, std::size_t nbytes) {
  Pool& p = pool();
  std::vector<Block> evicted;
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.allocated -= nbytes;
    p.st.freed_total += nbytes;
    --p.st.allocations;
    ++p.st.frees_total;
    // Under a limit the cache never pushes reserved bytes past it (it cannot: this block's bytes
    // only move from allocated to cached), so the high-water bound is the one that evicts.
    std::size_t bound = kCacheFloor + 2 * p.high_water;
    if (p.limit != 0) bound = std::min(bound, p.limit > p.allocated ? p.limit - p.allocated : 0);
    if (nbytes >= kMinCached && nbytes <= bound) {
      while (p.cached + nbytes > bound) {  // the least recently freed go first
        const Block old = p.lru.front();
        auto [lo, hi] = p.by_size.equal_range(old.size);
        uncache(p, std::find_if(lo, hi, [&](const auto& e) { return e.second == p.lru.begin(); }));
        evicted.push_back(old);
        ++p.st.cache_evictions;
      }
      p.by_size.emplace(nbytes, p.lru.insert(p.lru.end(), Block{nbytes, block}));
      p.cached += nbytes;
      kept = true;
    }
  }
  release(evicted);
  if (!kept) ::operator delete(block, kAlign);
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
  Pool& p = pool();
  p.peak = p.allocated;
  p.st.allocations_peak = p.st.allocations;
  p.st.reserved_peak = p.allocated + p.cached;
}
std::size_t cached() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().cached;
}
std::size_t reserved() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().allocated + pool().cached;
}
void empty_cache() {
  std::vector<Block> blocks;
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    drain_cache(pool(), blocks);
  }
  release(blocks);
#if defined(__GLIBC__)
  malloc_trim(0);  // blocks under prime_malloc's threshold went back to the heap, not the system
#endif
}

void set_limit(std::size_t bytes) {
  GRADLAB_CHECK(bytes > 0, ValueError, "memory::set_limit", "the limit must be positive", "bytes > 0", "0",
                "call memory::clear_limit() to remove the limit");
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    pool().limit = bytes;
  }
  empty_cache();  // cached blocks would count against the new limit
}
void clear_limit() {
  std::lock_guard<std::mutex> lock(pool().mu);
  pool().limit = 0;
}
std::size_t limit() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().limit;
}

Stats stats() {
  std::lock_guard<std::mutex> lock(pool().mu);
  const Pool& p = pool();
  Stats s = p.st;
  s.allocated = p.allocated;
  s.allocated_peak = p.peak;
  s.cached = p.cached;
  s.reserved = p.allocated + p.cached;
  s.limit = p.limit;
  s.cache_bound = kCacheFloor + 2 * p.high_water;
  if (p.limit != 0) s.cache_bound = std::min(s.cache_bound, p.limit);
  return s;
}

std::string format_bytes(std::size_t n) {
  char buf[64];
  const double d = static_cast<double>(n);
  if (n >= (std::size_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", d / (1 << 30));
  else if (n >= (std::size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", d / (1 << 20));
  else if (n >= (std::size_t{1} << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", d / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%zu B", n);
  return buf;
}

std::string out_of_memory_hint() {
  return "free memory by one of: a smaller batch; gradient accumulation over smaller batches (the same "
         "effective batch); mixed precision (amp::autocast: bfloat16/float16 activations); activation "
         "checkpointing (gradlab::checkpoint: recompute in backward instead of saving); NoGradGuard for "
         "evaluation (no graph is kept); detaching what you keep (a loss stored for logging holds its whole "
         "graph: keep loss.item() or loss.detach())";
}

std::string summary() {
  const Stats s = stats();
  // The layout of torch.cuda.memory_summary(): one row per metric, four columns.
  constexpr std::size_t kWidth = 75;
  std::string out;
  auto rule = [&](char c) { out += "|" + std::string(kWidth, c) + "|\n"; };
  auto centered = [&](const std::string& text) {
    const std::size_t pad = text.size() < kWidth ? kWidth - text.size() : 0;
    out.append("|").append(pad / 2, ' ').append(text).append(pad - pad / 2, ' ').append("|\n");
  };
  auto row = [&](const char* metric, const std::string& cur, const std::string& peak, const std::string& tot,
                 const std::string& freed) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "| %-21s | %10s | %10s | %10s | %10s |\n", metric, cur.c_str(), peak.c_str(),
                  tot.c_str(), freed.c_str());
    out += buf;
  };
  auto num = [](std::size_t n) { return std::to_string(n); };
  rule('=');
  centered("gradlab CPU memory summary");
  rule('-');
  centered("OOMs: " + num(s.ooms) + "   limit: " + (s.limit ? format_bytes(s.limit) : std::string("none")) +
           "   cache hits: " + num(s.cache_hits) + "   evictions: " + num(s.cache_evictions));
  rule('=');
  row("Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed");
  rule('-');
  row("Allocated memory", format_bytes(s.allocated), format_bytes(s.allocated_peak), format_bytes(s.allocated_total),
      format_bytes(s.freed_total));
  row("Reserved memory", format_bytes(s.reserved), format_bytes(s.reserved_peak), "", "");
  row("Cached (free) memory", format_bytes(s.cached), "", "", "");
  row("Allocations", num(s.allocations), num(s.allocations_peak), num(s.allocations_total), num(s.frees_total));
  rule('=');
  return out;
}

LimitGuard::LimitGuard(std::size_t bytes) : previous_(limit()) { set_limit(bytes); }
LimitGuard::~LimitGuard() {
  if (previous_ == 0) clear_limit();
  else {
    std::lock_guard<std::mutex> lock(pool().mu);
    pool().limit = previous_;
  }
}

PeakScope::PeakScope() {
  std::lock_guard<std::mutex> lock(pool().mu);
  Pool& p = pool();
  start_ = p.allocated;
  outer_peak_ = p.peak;
  p.peak = p.allocated;
}
PeakScope::~PeakScope() {
  std::lock_guard<std::mutex> lock(pool().mu);
  pool().peak = std::max(pool().peak, outer_peak_);
}
std::size_t PeakScope::peak() const {
  std::lock_guard<std::mutex> lock(pool().mu);
  return pool().peak;
}

PhasePeaks::Scope::Scope(PhasePeaks& owner, std::string name) : owner_(owner), name_(std::move(name)) {}
PhasePeaks::Scope::~Scope() {
  const std::size_t peak = peak_.peak(), increase = peak_.peak_increase();
  for (Reading& r : owner_.readings_) {
    if (r.name != name_) continue;
    r.peak = std::max(r.peak, peak);
    r.increase = std::max(r.increase, increase);
    return;
  }
  owner_.readings_.push_back({name_, peak, increase});
}
const PhasePeaks::Reading& PhasePeaks::find(const std::string& name) const {
  for (const Reading& r : readings_)
    if (r.name == name) return r;
  throw ValueError(error_message("PhasePeaks::peak", "no phase of that name was measured",
                                 "one of the measured phases", "'" + name + "'",
                                 "measure it first: auto s = phases.measure(\"" + name + "\");"));
}
std::size_t PhasePeaks::peak(const std::string& name) const { return find(name).peak; }
std::size_t PhasePeaks::peak_increase(const std::string& name) const { return find(name).increase; }
std::vector<std::string> PhasePeaks::phases() const {
  std::vector<std::string> names;
  for (const Reading& r : readings_) names.push_back(r.name);
  return names;
}
std::string PhasePeaks::str() const {
  std::string out;
  for (const Reading& r : readings_) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-10s peak %10s (+%s)\n", r.name.c_str(), format_bytes(r.peak).c_str(),
                  format_bytes(r.increase).c_str());
    out += buf;
  }
  return out;
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
  data_ = take(nbytes, "Storage");
  if (data_) return;
  try {
    data_ = ::operator new(nbytes, kAlign, std::nothrow);
    if (!data_) {  // give cached blocks back to the system and try once more
      memory::empty_cache();
      data_ = ::operator new(nbytes, kAlign);
    }
  } catch (const std::bad_alloc&) {
    untake(nbytes);
    throw OutOfMemoryError(error_message(
        "Storage", "out of memory on cpu: the system refused " + memory::format_bytes(nbytes),
        "room for " + std::to_string(nbytes) + " bytes",
        "allocation failure with " + memory::format_bytes(memory::allocated()) + " allocated in live tensors",
        memory::out_of_memory_hint()));
  }
}

Storage::Storage(void* external, std::size_t nbytes, std::function<void(void*)> deleter)
    : data_(external), nbytes_(nbytes), external_(true), deleter_(std::move(deleter)), device_(Device(kCPU)) {}

Storage::~Storage() {
  if (external_) {
    if (deleter_) deleter_(data_);
    return;
  }
  if (!data_) return;
  if (device_.is_cuda()) dispatch::cuda_memory("Storage").free(data_);
  else give_back(data_, nbytes_);
}

}  // namespace gradlab
