// The threads behind parallel_for (parallel.hpp) and set_num_threads: OpenMP's team when the
// library is built with OpenMP (GRADLAB_HAVE_OPENMP) and GRADLAB_THREAD_RUNTIME is not "pool",
// else a small pool of std::threads.

#include "gradlab/backend/cpu/parallel.hpp"

#include <cblas.h>
#include <unistd.h>
#ifndef GRADLAB_HAVE_OPENMP
#define GRADLAB_HAVE_OPENMP 0
#endif
#if GRADLAB_HAVE_OPENMP
#include <omp.h>
#endif

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "gradlab/core/error.hpp"

namespace gradlab {

namespace {

// The process that loaded the library: a forked child (another pid) runs every chunk serially.
const pid_t g_owner = ::getpid();
bool forked_child() { return ::getpid() != g_owner; }

// The other runtimes that start threads: OpenMP's team (oneDNN's and, with GRADLAB_HAVE_OPENMP,
// parallel_for's) gets n; OpenBLAS gets 1 for any n: matrix products are split over gradlab's own
// threads (gemm.hpp), each block one single-threaded OpenBLAS call, so OpenBLAS's pthreads never
// compete with the OpenMP team for the cores. NOTE: OpenMP's count (nthreads-var) belongs to
// each thread: omp_set_num_threads here sets the calling thread's only; sync_runtime_threads()
// sets it again on any thread that is about to call oneDNN.
void set_runtime_threads(int n) {
  openblas_set_num_threads(1);
#if GRADLAB_HAVE_OPENMP
  omp_set_num_threads(n);
#endif
}

std::atomic<int>& thread_count() {
  static std::atomic<int> n{[] {
    std::string warning;
    const int v = detail::num_threads_from_env(std::getenv("GRADLAB_NUM_THREADS"),
                                               std::getenv("OMP_NUM_THREADS"),
                                               detail::available_cores(), warning);
    if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
    // GRADLAB_NUM_THREADS governs OpenMP from the start too (it reads only OMP_NUM_THREADS),
    // and OpenBLAS goes to 1 thread whatever OPENBLAS_NUM_THREADS said.
    set_runtime_threads(v);
    return v;
  }()};
  return n;
}

}  // namespace

void set_num_threads(int n) {
  GRADLAB_CHECK(n >= 1, ValueError, "set_num_threads", "the thread count must be positive",
                "n >= 1", std::to_string(n));
  thread_count().store(n);
  set_runtime_threads(n);
}

int get_num_threads() { return thread_count().load(std::memory_order_relaxed); }

void init_num_threads() { cpu::detail::sync_runtime_threads(); }

namespace {
// The inter-op count: 0 until set or read; `interop_fixed` once set or read (LibTorch fixes it
// when its pool starts, at the first get or the first inter-op task).
std::mutex interop_mutex;
int interop_threads = 0;
bool interop_fixed = false;
}  // namespace

void set_num_interop_threads(int n) {
  GRADLAB_CHECK(n >= 1, ValueError, "set_num_interop_threads", "the thread count must be positive",
                "n >= 1", std::to_string(n));
  std::lock_guard<std::mutex> lock(interop_mutex);
  GRADLAB_CHECK(!interop_fixed, ValueError, "set_num_interop_threads",
                "the inter-op thread count is already fixed",
                "one call, before any get_num_interop_threads()",
                "a second call (the count is " + std::to_string(interop_threads) + ")",
                "set it once at the start of the program, as LibTorch requires");
  interop_threads = n;
  interop_fixed = true;
}

int get_num_interop_threads() {
  std::lock_guard<std::mutex> lock(interop_mutex);
  if (!interop_fixed) interop_threads = detail::available_cores();
  interop_fixed = true;
  return interop_threads;
}

namespace cpu {

namespace {

thread_local bool tl_in_region = false;

// Runs fn(0 .. nchunks-1) here, in order, as a region (nested calls inside stay serial).
void serial(int64_t nchunks, detail::ChunkFn fn) {
  const bool was = tl_in_region;
  tl_in_region = true;
  try {
    for (int64_t k = 0; k < nchunks; ++k) fn.call(fn.obj, k);
  } catch (...) {
    tl_in_region = was;
    throw;
  }
  tl_in_region = was;
}

#if GRADLAB_HAVE_OPENMP

// One OpenMP region per parallel_for: the team libgomp keeps (oneDNN's too, so the two never
// compete for cores). Its idle workers spin (GOMP_SPINCOUNT, 300000 pauses by default) before they
// sleep, so back-to-back ops start them without a futex call. Chunks go to whichever thread asks
// first (an atomic counter), so the caller runs a late worker's chunk itself. TRAP: the region
// still ends in OpenMP's barrier, which waits for every worker to arrive; on a machine with more
// runnable threads than cores a spinning worker that lost its core makes that wait milliseconds
// (README, Threads: OMP_WAIT_POLICY=passive, or GRADLAB_THREAD_RUNTIME=pool).
std::atomic_flag g_busy = ATOMIC_FLAG_INIT;

void run_openmp(int64_t nchunks, int threads, detail::ChunkFn fn) {
  // Busy (another thread's parallel_for: a second team would oversubscribe) or forked child
  // (libgomp's team did not survive the fork): run here, serially.
  if (forked_child() || g_busy.test_and_set(std::memory_order_acquire)) {
    serial(nchunks, fn);
    return;
  }
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  const int team = static_cast<int>(std::min<int64_t>(threads, nchunks));
#pragma omp parallel num_threads(team)
  {
    tl_in_region = true;
    for (int64_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < nchunks;) {
      if (failed.load(std::memory_order_relaxed)) continue;  // an earlier chunk threw
      try {
        fn.call(fn.obj, k);
      } catch (...) {  // an exception must not leave an OpenMP region: keep the first
        std::lock_guard<std::mutex> lk(error_mu);
        if (!error) error = std::current_exception();
        failed.store(true);
      }
    }
    tl_in_region = false;
  }
  g_busy.clear(std::memory_order_release);
  if (error) std::rethrow_exception(error);
}

#endif  // GRADLAB_HAVE_OPENMP

// The pool (GRADLAB_THREAD_RUNTIME=pool, or no OpenMP). It sleeps at once when idle: robust on a
// machine with more runnable threads than cores, but each region pays a condition-variable wake.

// Workers sleep on `wake_` until a new generation; the first `want_` of them take chunks from
// `next_` with the caller, and the caller waits on `done_` until all `want_` have finished.
class Pool {
 public:
  void run(int64_t nchunks, int threads, detail::ChunkFn fn) {
    // Busy (another thread's parallel_for) or forked child: run here, serially.
    if (forked_child() || busy_.test_and_set(std::memory_order_acquire)) {
      serial(nchunks, fn);
      return;
    }
    {
      std::lock_guard<std::mutex> lk(m_);
      while (static_cast<int>(workers_.size()) < threads - 1) {
        const int id = static_cast<int>(workers_.size());
        try {
          workers_.emplace_back([this, id] { worker(id); });
        } catch (const std::system_error&) {
          break;  // no more threads to be had: run with those there are
        }
        workers_.back().detach();  // lives as long as the process (the pool is never destroyed)
      }
      threads = std::min(threads, static_cast<int>(workers_.size()) + 1);
      fn_ = fn;
      nchunks_ = nchunks;
      next_.store(0);
      failed_.store(false);
      error_ = nullptr;
      want_ = static_cast<int>(std::min<int64_t>(threads - 1, nchunks - 1));
      running_ = want_;
      ++gen_;
    }
    wake_.notify_all();
    tl_in_region = true;
    work();
    tl_in_region = false;
    std::exception_ptr err;
    {
      std::unique_lock<std::mutex> lk(m_);
      done_.wait(lk, [&] { return running_ == 0; });
      err = error_;
      error_ = nullptr;
    }
    busy_.clear(std::memory_order_release);
    if (err) std::rethrow_exception(err);
  }

 private:
  void work() {
    for (int64_t k; (k = next_.fetch_add(1)) < nchunks_;) {
      if (failed_.load(std::memory_order_relaxed)) continue;  // an earlier chunk threw
      try {
        fn_.call(fn_.obj, k);
      } catch (...) {
        std::lock_guard<std::mutex> lk(m_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true);
      }
    }
  }

  void worker(int id) {
    tl_in_region = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      wake_.wait(lk, [&] { return gen_ != seen; });
      seen = gen_;
      if (id >= want_) continue;
      lk.unlock();
      work();
      lk.lock();
      if (--running_ == 0) done_.notify_one();
    }
  }

  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  uint64_t gen_ = 0;
  int want_ = 0, running_ = 0;
  detail::ChunkFn fn_{nullptr, nullptr};
  int64_t nchunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

// NOTE: never destroyed: a static destructor at exit would race with detached workers.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// Which runtime runs the chunks: OpenMP unless GRADLAB_THREAD_RUNTIME=pool (or no OpenMP).
std::atomic<bool>& use_openmp() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("GRADLAB_THREAD_RUNTIME");
    const std::string s = v ? v : "";
    if (!s.empty() && s != "openmp" && s != "pool")
      std::fprintf(stderr,
                   "gradlab: ignoring GRADLAB_THREAD_RUNTIME='%s'; expected openmp or pool\n", v);
    return GRADLAB_HAVE_OPENMP && s != "pool";
  }()};
  return on;
}

void run_team(int64_t nchunks, int threads, detail::ChunkFn fn) {
#if GRADLAB_HAVE_OPENMP
  if (use_openmp().load(std::memory_order_relaxed)) return run_openmp(nchunks, threads, fn);
#endif
  pool().run(nchunks, threads, fn);
}

}  // namespace

bool in_parallel_region() { return tl_in_region; }

namespace detail {
void run_chunks(int64_t nchunks, int threads, ChunkFn fn) { run_team(nchunks, threads, fn); }

void sync_runtime_threads() {
#if GRADLAB_HAVE_OPENMP
  const int want = forked_child() ? 1 : get_num_threads();
  if (omp_get_max_threads() != want) omp_set_num_threads(want);
#endif
}

int runtime_threads() {
#if GRADLAB_HAVE_OPENMP
  return omp_get_max_threads();
#else
  return get_num_threads();
#endif
}

const char* runtime_name() { return use_openmp().load() ? "openmp" : "pool"; }

bool set_runtime(const std::string& name) {
  GRADLAB_CHECK(name == "pool" || (name == "openmp" && GRADLAB_HAVE_OPENMP), ValueError,
                "set_runtime", "unknown or unavailable thread runtime",
                GRADLAB_HAVE_OPENMP ? "\"openmp\" or \"pool\"" : "\"pool\" (built without OpenMP)",
                name);
  return use_openmp().exchange(name == "openmp");
}
}  // namespace detail

}  // namespace cpu
}  // namespace gradlab
