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

namespace detail {
/// What the start-up rule above gives for these variable values (nullptr: unset) and this core
/// count; `warning` receives the warning line (empty when the values are fine).
int num_threads_from_env(const char* gradlab_num_threads, const char* omp_num_threads, int cores,
                         std::string& warning);
/// The cores this process may run on (sched_getaffinity), at least 1.
int available_cores();
}  // namespace detail

}  // namespace gradlab
