#pragma once
// Intra-op threads (LibTorch's names). Large elementwise ops, copies, reductions and the per-row
// nn kernels split their work over this many threads (backend/cpu/parallel.hpp). Results are
// bit-identical for any count: reductions add fixed-size blocks in a fixed order.
//
// At start the count comes from GRADLAB_NUM_THREADS, else OMP_NUM_THREADS (its first entry when
// it is a list such as "4,2"), else the number of cores this process may run on
// (sched_getaffinity: taskset and container limits count), passed on to OpenBLAS and OpenMP. A
// value that is not a positive integer prints one warning line to stderr; the default is used.

#include <string>

namespace gradlab {

/// Sets the number of intra-op threads (n >= 1; else ValueError), OpenBLAS's count and OpenMP's
/// (oneDNN's), as LibTorch's at::set_num_threads sets OpenMP's and MKL's.
void set_num_threads(int n);
/// The number of intra-op threads in use (at least 1).
int get_num_threads();
/// LibTorch's init_num_threads: applies the intra-op count to the calling thread's OpenMP
/// setting (OpenMP keeps one per thread, and oneDNN reads it), for a thread the program started.
/// gradlab also does this itself before each oneDNN call, so calling it is never needed.
void init_num_threads();

/// Inter-op threads, LibTorch's names. LibTorch runs jit::fork and async ops on a pool of this
/// size; gradlab has neither and runs no inter-op work, so only the count is kept. As in
/// LibTorch: n >= 1, and only once, before the first get_num_interop_threads() (which fixes it);
/// otherwise ValueError. The default is the usable core count.
void set_num_interop_threads(int n);
/// The inter-op thread count (see set_num_interop_threads).
int get_num_interop_threads();

namespace detail {
/// What the start-up rule above gives for these variable values (nullptr: unset) and this core
/// count; `warning` receives the warning line (empty when the values are fine).
int num_threads_from_env(const char* gradlab_num_threads, const char* omp_num_threads, int cores,
                         std::string& warning);
/// The cores this process may run on (sched_getaffinity), at least 1.
int available_cores();
}  // namespace detail

}  // namespace gradlab
