// The intra-op thread pool behind parallel_for (parallel.hpp) and set_num_threads.

#include "gradlab/backend/cpu/parallel.hpp"

#include <cblas.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "gradlab/core/error.hpp"

namespace gradlab {

namespace {

std::atomic<int>& thread_count() {
  static std::atomic<int> n{[] {
    std::string warning;
    const int v = detail::num_threads_from_env(std::getenv("GRADLAB_NUM_THREADS"),
                                               std::getenv("OMP_NUM_THREADS"),
                                               detail::available_cores(), warning);
    if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
    return v;
  }()};
  return n;
}

}  // namespace

void set_num_threads(int n) {
  GRADLAB_CHECK(n >= 1, ValueError, "set_num_threads", "the thread count must be positive",
                "n >= 1", std::to_string(n));
  thread_count().store(n);
  openblas_set_num_threads(n);
}

int get_num_threads() { return thread_count().load(std::memory_order_relaxed); }

namespace cpu {

namespace {

thread_local bool tl_in_region = false;

// Workers sleep on `wake_` until a new generation; the first `want_` of them take chunks from
// `next_` with the caller, and the caller waits on `done_` until all `want_` have finished.
class Pool {
 public:
  void run(int64_t nchunks, int threads, detail::ChunkFn fn) {
    // Busy (another thread's parallel_for) or forked child: run here, serially.
    if (owner_ != ::getpid() || busy_.test_and_set(std::memory_order_acquire)) {
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
  static void serial(int64_t nchunks, detail::ChunkFn fn) {
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

  const pid_t owner_ = ::getpid();
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

}  // namespace

bool in_parallel_region() { return tl_in_region; }

namespace detail {
void run_chunks(int64_t nchunks, int threads, ChunkFn fn) { pool().run(nchunks, threads, fn); }
}  // namespace detail

}  // namespace cpu
}  // namespace gradlab
