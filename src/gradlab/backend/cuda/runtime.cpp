// The CUDA runtime: device discovery, the caching allocator on cudaMalloc (or on host memory
// under the emulator), copies, events and error reporting. Compiled in every build; the driver
// parts only when nvcc was found (GRADLAB_HAVE_CUDA).

#include "gradlab/backend/cuda/runtime.hpp"
#include "gradlab/core/dispatch.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "gradlab/backend/cuda/allocator.hpp"
#include "gradlab/core/cuda.hpp"
#include "gradlab/core/error.hpp"

#if GRADLAB_HAVE_CUDA
#include "gradlab/backend/cuda/cuda_check.hpp"
#endif

namespace gradlab::cuda_rt {

namespace {

// ---- the GPU, found once ---------------------------------------------------------------------
struct Probe {
  int count = 0;
  std::string reason;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
#if GRADLAB_HAVE_CUDA
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      // NOTE: without a driver this is cudaErrorInsufficientDriver (35); with a driver but no
      // GPU, cudaErrorNoDevice (100). Either way: no device. Clear the sticky error.
      r.reason = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + " (" +
                 std::to_string(static_cast<int>(e)) + "): " + cudaGetErrorString(e);
      (void)cudaGetLastError();
    } else if (n == 0) {
      r.reason = "the CUDA driver reports no device";
    } else {
      r.count = n;
    }
#else
    r.reason = "gradlab was built without CUDA (no nvcc found when CMake configured it)";
#endif
    return r;
  }();
  return p;
}

// ---- raw memory sources ----------------------------------------------------------------------
#if GRADLAB_HAVE_CUDA
class DriverMemory : public RawMemory {
 public:
  void* malloc(std::size_t n) override {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    GRADLAB_CUDA_CHECK(e, "cuda alloc");
    return p;
  }
  void free(void* p) override { (void)cudaFree(p); }
  std::pair<std::size_t, std::size_t> mem_info() override {
    std::size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) (void)cudaGetLastError();
    return {f, t};
  }
  std::string where() const override { return "cuda:0"; }
};
#endif

class HostMemory : public RawMemory {
 public:
  explicit HostMemory(std::size_t capacity) : capacity_(capacity) {}
  void* malloc(std::size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (used_ + n > capacity_) return nullptr;
    void* p = ::operator new(n, std::align_val_t{256}, std::nothrow);
    if (p) used_ += n, sizes_[p] = n;
    return p;
  }
  void free(void* p) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return;
    used_ -= it->second;
    sizes_.erase(it);
    ::operator delete(p, std::align_val_t{256});
  }
  std::pair<std::size_t, std::size_t> mem_info() override {
    std::lock_guard<std::mutex> lock(mu_);
    return {capacity_ - used_, capacity_};
  }
  std::string where() const override { return "cuda:0 (host emulator)"; }

 private:
  std::mutex mu_;
  std::size_t capacity_, used_ = 0;
  std::unordered_map<void*, std::size_t> sizes_;
};

// ---- the active backend ----------------------------------------------------------------------
struct State {
  std::mutex mu;
  Backend backend = Backend::None;
  std::unique_ptr<RawMemory> raw;
  std::unique_ptr<CachingAllocator> alloc;
  bool poison = false;
};

State& state() {
  static State* s = [] {
    auto* st = new State;  // never destroyed: storages may be freed during static destruction
#if GRADLAB_HAVE_CUDA
    if (probe().count > 0) {
      st->backend = Backend::Device;
      st->raw = std::make_unique<DriverMemory>();
      st->alloc = std::make_unique<CachingAllocator>(*st->raw);
    }
#endif
    return st;
  }();
  return *s;
}

CachingAllocator* allocator() { return state().alloc.get(); }

bool emulated() { return state().backend == Backend::Emulator; }

}  // namespace

Backend backend() { return state().backend; }

void throw_cuda_error(int code, const char* name, const char* text, const char* call, const char* op) {
  throw Error(error_message(op, std::string("CUDA call failed: ") + call + " returned " + name + " (" +
                                    std::to_string(code) + "): " + text,
                            {}, {},
                            "an error from an earlier kernel can surface here; rerun with "
                            "GRADLAB_CUDA_SYNC=1 to check every kernel as it finishes"));
}

bool sync_each_launch() {
  static const bool on = [] {
    const char* v = std::getenv("GRADLAB_CUDA_SYNC");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// ---- the device-side error record of index checks (see runtime.hpp) ---------------------------
namespace {

struct CheckSite {
  std::string op;
  CheckKind kind;
};

struct ErrorState {
  std::mutex mu;  // sites, and reading / clearing the records
  std::vector<CheckSite> sites;
  // One record per backend; `pending`: a check was queued since the record was last read.
  DeviceErrorRecord host;
  std::atomic<bool> host_pending{false};
  DeviceErrorRecord* device = nullptr;
  std::atomic<bool> device_pending{false};
  std::atomic<bool> blocking{false};
};

ErrorState& errors() {
  static ErrorState* e = new ErrorState;  // never destroyed, as State
  return *e;
}

// The CPU's messages (ops/index.cpp via cpu::check_indices, cpu::cross_entropy_forward).
std::string check_message(const CheckSite& site, const DeviceErrorRecord& r) {
  const std::string range = "[0, " + std::to_string(r.bound) + ")";
  if (site.kind == CheckKind::Target)
    return error_message(site.op, "target out of range at position " + std::to_string(r.pos),
                         "a class index in " + range, std::to_string(r.value),
                         "labels must be 0..C-1 for C logits; check the number of classes");
  return error_message(site.op, "index out of range at position " + std::to_string(r.pos),
                       "an index in " + range, std::to_string(r.value),
                       "class labels and indices must be smaller than the size of the dim they index");
}

}  // namespace

int64_t error_site(const char* op, CheckKind kind) {
  ErrorState& e = errors();
  std::lock_guard<std::mutex> lock(e.mu);
  for (size_t i = 0; i < e.sites.size(); ++i)
    if (e.sites[i].kind == kind && e.sites[i].op == op) return static_cast<int64_t>(i);
  e.sites.push_back({op, kind});
  return static_cast<int64_t>(e.sites.size() - 1);
}

DeviceErrorRecord* device_error_record(const char* op) {
  ErrorState& e = errors();
  if (emulated()) return &e.host;
  GRADLAB_CHECK(backend() == Backend::Device, DeviceError, op, "CUDA is not available", "a CUDA device",
                cuda::unavailable_reason());
#if GRADLAB_HAVE_CUDA
  std::lock_guard<std::mutex> lock(e.mu);
  if (!e.device) {
    void* p = nullptr;
    GRADLAB_CUDA_CHECK(cudaMalloc(&p, sizeof(DeviceErrorRecord)), op);
    GRADLAB_CUDA_CHECK(cudaMemset(p, 0, sizeof(DeviceErrorRecord)), op);
    e.device = static_cast<DeviceErrorRecord*>(p);
  }
#endif
  return e.device;
}

bool blocking_index_checks() { return errors().blocking.load(); }

namespace {
// The emulator's record goes with its memory: a check failed under one emulator session is not
// raised in the next.
void reset_host_errors() {
  ErrorState& e = errors();
  std::lock_guard<std::mutex> lock(e.mu);
  e.host = DeviceErrorRecord{};
  e.host_pending.store(false);
}
}  // namespace

void check_queued(const char* op) {
  ErrorState& e = errors();
  (emulated() ? e.host_pending : e.device_pending).store(true);
  if (sync_each_launch() || e.blocking.load()) raise_device_error(op);
}

void raise_device_error(const char* where) {
  ErrorState& e = errors();
  const bool emu = emulated();
  if (!(emu ? e.host_pending : e.device_pending).exchange(false)) return;
  DeviceErrorRecord r;
  CheckSite site;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    if (emu) {
      r = e.host;
      e.host = DeviceErrorRecord{};
    } else {
#if GRADLAB_HAVE_CUDA
      if (!e.device) return;
      // NOTE: a synchronous copy: it waits for the check kernels queued before it.
      GRADLAB_CUDA_CHECK(cudaMemcpy(&r, e.device, sizeof r, cudaMemcpyDeviceToHost), where);
      if (r.set) GRADLAB_CUDA_CHECK(cudaMemset(e.device, 0, sizeof(DeviceErrorRecord)), where);
#endif
    }
    if (!r.set) return;
    GRADLAB_CHECK(r.site >= 0 && static_cast<size_t>(r.site) < e.sites.size(), Error, where,
                  "the device error record names an unknown check", "a known check site",
                  std::to_string(r.site));
    site = e.sites[static_cast<size_t>(r.site)];
  }
  std::string msg = check_message(site, r);
  if (site.op != where)
    msg += " (a CUDA check: found on the device by " + site.op + ", raised at the next synchronization, " +
           where + "; GRADLAB_CUDA_SYNC=1 or cuda::set_blocking_index_checks(true) raise it at the op)";
  throw ShapeError(msg);
}

Device resolve(Device d, const char* op) {
  if (d.is_cpu()) return d;
  GRADLAB_CHECK(backend() != Backend::None, DeviceError, op, "CUDA is not available for " + d.str(),
                "a CUDA device", cuda::unavailable_reason(),
                "keep tensors on the CPU, or check cuda::is_available() before .cuda()");
  const int n = cuda::device_count();
  const int idx = d.index < 0 ? 0 : d.index;
  GRADLAB_CHECK(idx < n, DeviceError, op, "no such CUDA device", "an index below " + std::to_string(n),
                d.str(), "use cuda:0 .. cuda:" + std::to_string(n - 1));
  GRADLAB_CHECK(idx == 0, DeviceError, op, "only cuda:0 is supported by this build", "cuda:0", d.str(),
                "gradlab runs one GPU per process; use CUDA_VISIBLE_DEVICES to pick it");
  return Device(kCUDA, 0);
}

void* alloc(std::size_t nbytes, const char* op) {
  CachingAllocator* a = allocator();
  GRADLAB_CHECK(a != nullptr, DeviceError, op, "CUDA is not available", "a CUDA device",
                cuda::unavailable_reason());
  void* p = a->malloc(nbytes, op);
  if (state().poison) memset(p, 0x7F, nbytes, op);
  return p;
}

void free(void* p) {
  if (CachingAllocator* a = allocator()) a->free(p);
}

// Storage (core/) reaches CUDA memory through core/dispatch.hpp.
const bool kCudaMemoryRegistered = (dispatch::set_cuda_memory({&resolve, &alloc, &free}), true);

void copy_to_host(void* dst, const void* src, std::size_t n, const char* op) {
  if (n == 0) return;
  if (emulated()) {
    std::memcpy(dst, src, n);
  } else {
#if GRADLAB_HAVE_CUDA
    GRADLAB_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), op);
#else
    (void)dst, (void)src;
#endif
  }
  // The host has waited for the device: a failed index check queued before is raised here,
  // before anyone looks at data computed from a bad index.
  raise_device_error(op);
}

void copy_from_host(void* dst, const void* src, std::size_t n, const char* op) {
  if (n == 0) return;
  if (emulated()) return (void)std::memcpy(dst, src, n);
#if GRADLAB_HAVE_CUDA
  GRADLAB_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), op);
#else
  (void)dst, (void)src, (void)op;
#endif
}

void copy_on_device(void* dst, const void* src, std::size_t n, const char* op) {
  if (n == 0) return;
  if (emulated()) return (void)std::memmove(dst, src, n);
#if GRADLAB_HAVE_CUDA
  GRADLAB_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice), op);
#else
  (void)dst, (void)src, (void)op;
#endif
}

void memset(void* p, int byte, std::size_t n, const char* op) {
  if (n == 0) return;
  if (emulated()) return (void)std::memset(p, byte, n);
#if GRADLAB_HAVE_CUDA
  GRADLAB_CUDA_CHECK(cudaMemset(p, byte, n), op);
#else
  (void)p, (void)byte, (void)op;
#endif
}

}  // namespace gradlab::cuda_rt

// ---- the public face: gradlab::cuda ----------------------------------------------------------
namespace gradlab::cuda {

using cuda_rt::Backend;

bool is_available() { return cuda_rt::backend() != Backend::None; }

int device_count() {
  if (cuda_rt::backend() == Backend::Emulator) return 1;
  return cuda_rt::probe().count;
}

std::string unavailable_reason() { return is_available() ? std::string() : cuda_rt::probe().reason; }

std::string device_name(int index) {
  if (cuda_rt::backend() == Backend::Emulator) return "gradlab host emulator";
  if (!is_available()) return "none (" + unavailable_reason() + ")";
#if GRADLAB_HAVE_CUDA
  cudaDeviceProp prop{};
  GRADLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, index), "cuda::device_name");
  return prop.name;
#else
  (void)index;
  return "none";
#endif
}

void synchronize() {
  if (cuda_rt::backend() == Backend::None) return;
#if GRADLAB_HAVE_CUDA
  if (cuda_rt::backend() == Backend::Device) GRADLAB_CUDA_CHECK(cudaDeviceSynchronize(), "cuda::synchronize");
#endif
  cuda_rt::raise_device_error("cuda::synchronize");
}

void set_blocking_index_checks(bool on) { cuda_rt::errors().blocking.store(on); }
bool blocking_index_checks() { return cuda_rt::blocking_index_checks(); }

namespace {
cuda_rt::AllocatorStats stats() {
  auto* a = cuda_rt::allocator();
  return a ? a->stats() : cuda_rt::AllocatorStats{};
}
}  // namespace

std::size_t memory_allocated() { return stats().allocated; }
std::size_t max_memory_allocated() { return stats().peak; }
std::size_t memory_reserved() { return stats().allocated + stats().cached; }
void reset_peak_memory_stats() {
  if (auto* a = cuda_rt::allocator()) a->reset_peak();
}
void empty_cache() {
  if (auto* a = cuda_rt::allocator()) a->empty_cache();
}

MemoryInfo mem_get_info() {
  auto& st = cuda_rt::state();
  if (!st.raw) return {};
  auto [f, t] = st.raw->mem_info();
  return {f, t};
}

void set_poison_allocations(bool on) { cuda_rt::state().poison = on; }
bool poison_allocations() { return cuda_rt::state().poison; }

namespace emulator {
void enable(std::size_t capacity) {
  auto& st = cuda_rt::state();
  std::lock_guard<std::mutex> lock(st.mu);
  GRADLAB_CHECK(!st.alloc || st.alloc->stats().allocated == 0, DeviceError, "cuda::emulator::enable",
                "CUDA tensors are still alive", "no live CUDA tensor",
                cuda_rt::format_bytes(st.alloc ? st.alloc->stats().allocated : 0) + " allocated",
                "switch to the emulator before making CUDA tensors");
  st.alloc.reset();
  cuda_rt::reset_host_errors();
  st.raw = std::make_unique<cuda_rt::HostMemory>(capacity);
  st.alloc = std::make_unique<cuda_rt::CachingAllocator>(*st.raw);
  st.backend = Backend::Emulator;
}

void disable() {
  auto& st = cuda_rt::state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.backend != Backend::Emulator) return;
  GRADLAB_CHECK(st.alloc->stats().allocated == 0, DeviceError, "cuda::emulator::disable",
                "emulated CUDA tensors are still alive", "no live CUDA tensor",
                cuda_rt::format_bytes(st.alloc->stats().allocated) + " allocated");
  st.alloc.reset();
  st.raw.reset();
  cuda_rt::reset_host_errors();
  st.backend = Backend::None;
#if GRADLAB_HAVE_CUDA
  if (cuda_rt::probe().count > 0) {
    st.backend = Backend::Device;
    st.raw = std::make_unique<cuda_rt::DriverMemory>();
    st.alloc = std::make_unique<cuda_rt::CachingAllocator>(*st.raw);
  }
#endif
}

bool enabled() { return cuda_rt::backend() == Backend::Emulator; }
}  // namespace emulator

// ---- Timer -----------------------------------------------------------------------------------
namespace {
double host_now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Timer::Timer() {
#if GRADLAB_HAVE_CUDA
  if (cuda_rt::backend() == Backend::Device) {
    cudaEvent_t a, b;
    GRADLAB_CUDA_CHECK(cudaEventCreate(&a), "cuda::Timer");
    GRADLAB_CUDA_CHECK(cudaEventCreate(&b), "cuda::Timer");
    start_ = a;
    stop_ = b;
  }
#endif
}

Timer::~Timer() {
#if GRADLAB_HAVE_CUDA
  if (start_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
#endif
}

void Timer::start() {
#if GRADLAB_HAVE_CUDA
  if (start_) {
    GRADLAB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_)), "cuda::Timer::start");
    return;
  }
#endif
  host_start_ = host_now_ms();
}

void Timer::stop() {
#if GRADLAB_HAVE_CUDA
  if (stop_) {
    GRADLAB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_)), "cuda::Timer::stop");
    return;
  }
#endif
  host_ms_ = host_now_ms() - host_start_;
}

double Timer::elapsed_ms() {
#if GRADLAB_HAVE_CUDA
  if (stop_) {
    GRADLAB_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)), "cuda::Timer::elapsed_ms");
    float ms = 0;
    GRADLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)),
             "cuda::Timer::elapsed_ms");
    cuda_rt::raise_device_error("cuda::Timer::elapsed_ms");
    return ms;
  }
#endif
  if (cuda_rt::emulated()) cuda_rt::raise_device_error("cuda::Timer::elapsed_ms");
  return host_ms_;
}

}  // namespace gradlab::cuda
