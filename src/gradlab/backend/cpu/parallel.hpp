#pragma once
// parallel_for: the one way a CPU kernel uses more than one thread. With OpenMP (CMake found it:
// GRADLAB_HAVE_OPENMP, GCC's libgomp) each call is one OpenMP region, as in ATen, so it shares
// one team of threads with oneDNN (Debian's libdnnl runs on libgomp) instead of competing with
// it for the cores. Without OpenMP, or with GRADLAB_THREAD_RUNTIME=pool, a small pool of
// std::threads that sleeps at once when idle (libgomp's workers spin first: fast back-to-back
// regions on an idle machine, a collapse on an oversubscribed one). Either way: the caller runs
// chunks too, nested calls and calls from a second thread while a region is running run
// serially (no oversubscription, no deadlock), an exception thrown in a chunk reaches the
// caller, and a forked child (an MPI relaunch) runs serially instead of waiting on threads it
// does not have. bench/bench_threads.cpp measures the overhead.
//
// set_num_threads(n) sets gradlab's count and OpenMP's (omp_set_num_threads, which oneDNN reads)
// to n, and OpenBLAS's to 1 (openblas_set_num_threads(1)) for every n. OpenMP's count belongs to
// each thread, so code that calls oneDNN calls detail::sync_runtime_threads() first
// (conv_onednn.cpp).
//
// BLAS: matrix products run on this same team: gemm() (gemm.hpp) splits a big product's C into
// blocks over parallel_for, each block one single-threaded OpenBLAS call. OpenBLAS's own threads
// (Debian's libopenblas0-pthread) stay idle: a second runtime on the same cores took turns with
// the spinning OpenMP workers (README, Threads). A product inside a chunk is one call on that
// thread (nested regions are serial).
//
// Bits: parallel_for only decides who runs which chunk. A kernel whose result could depend on
// where the chunks split (a sum) must fix its blocks itself (reduce.cpp); elementwise kernels
// split at multiples of kAlign so every element takes the same SIMD or scalar path for any count.

#include <algorithm>
#include <cstdint>
#include <string>

#include "gradlab/core/parallel.hpp"

namespace gradlab::cpu {

/// Elements below which an elementwise op stays on one thread (PyTorch's GRAIN_SIZE).
inline constexpr int64_t kGrain = 32768;
/// Chunk boundaries of elementwise ops are multiples of this (any SIMD width up to 64 lanes).
inline constexpr int64_t kAlign = 64;

/// True on a thread that is running a chunk of parallel_for (there, parallel_for is serial).
bool in_parallel_region();

namespace detail {
/// A non-owning reference to a callable f(chunk_index).
struct ChunkFn {
  void* obj;
  void (*call)(void*, int64_t);
};
/// Runs fn(0 .. nchunks-1) on up to `threads` threads (the caller one of them); rethrows the
/// first exception a chunk threw.
void run_chunks(int64_t nchunks, int threads, ChunkFn fn);
/// Sets the calling thread's OpenMP count to get_num_threads() (1 in a forked child) when it
/// differs: call before oneDNN, which sizes its regions by omp_get_max_threads().
void sync_runtime_threads();
/// The calling thread's OpenMP count (omp_get_max_threads()); get_num_threads() without OpenMP.
int runtime_threads();
/// "openmp" or "pool": what runs parallel_for's chunks now (GRADLAB_THREAD_RUNTIME at start).
const char* runtime_name();
/// Runs later regions on "openmp" or "pool" (ValueError for another name, or "openmp" in a build
/// without it); returns whether OpenMP was in use. For checks and benches: call it while no
/// parallel_for runs.
bool set_runtime(const std::string& name);
}  // namespace detail

/// f(chunk_begin, chunk_end) over [begin, end) split into at most get_num_threads() chunks of at
/// least `grain` items each (one chunk, on the calling thread, when the range is that small, when
/// one thread is set, or inside another parallel_for).
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int threads = get_num_threads();
  const int64_t want = std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (want <= 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  // Chunk k: [begin + k n / want, begin + (k + 1) n / want): sizes differ by at most one.
  auto chunk = [&](int64_t k) { f(begin + k * n / want, begin + (k + 1) * n / want); };
  detail::run_chunks(want, threads,
                     {&chunk, [](void* o, int64_t k) { (*static_cast<decltype(chunk)*>(o))(k); }});
}

/// parallel_for over the elements [0, n) of an elementwise op: grain kGrain, boundaries at
/// multiples of kAlign.
template <class F>
void parallel_elements(int64_t n, F&& f) {
  const int64_t blocks = (n + kAlign - 1) / kAlign;
  parallel_for(0, blocks, kGrain / kAlign,
               [&](int64_t b0, int64_t b1) { f(b0 * kAlign, std::min(n, b1 * kAlign)); });
}

}  // namespace gradlab::cpu
