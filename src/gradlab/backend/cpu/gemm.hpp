#pragma once
// Every matrix product of the CPU backend (blas.cpp's bmm, conv_gemm.cpp) goes through gemm()
// here: one single-threaded OpenBLAS call per block of C, the blocks split over parallel_for, so
// matrix products run on gradlab's one thread team (OpenMP's, shared with oneDNN) and no second
// thread runtime exists. OpenBLAS itself is kept at 1 thread (set_num_threads, parallel.cpp).
//
// TRAP (why): Debian's libopenblas0-pthread starts its own threads; at 2 threads on 2 cores the
// OpenMP workers still spinning from the last parallel_for and OpenBLAS's threads took turns on
// the cores (README, Threads): an MLP step took 4.4 ms at 2 threads, 2.0 ms at 1.
//
// Split of C [M, N] = op(A) [M, K] @ op(B) [K, N] + beta C (row major, lda/ldb/ldc as cblas):
//   serial            get_num_threads() == 1, 2 M N K < kGemmGrain, or inside parallel_for
//   rows of M         M >= N: block [m0, m1) reads op(A)'s rows m0.. and all of op(B)
//   columns of N      N > M:  block [n0, n1) reads all of op(A) and op(B)'s columns n0..
//   batch (gemm_batched)  batch >= get_num_threads(): one whole product per chunk
// Block edges are multiples of kGemmAlign (16: a multiple of the register tiles of OpenBLAS's x86
// sgemm/dgemm kernels), so only the last block has a ragged edge. Each element of C is one dot
// product over K computed by one OpenBLAS call, so split and unsplit results both lie within
// GEMM's rounding bound (checks/core/gemm_split_test.cpp) and do not depend on which thread ran
// which block; they are not always the same bits: OpenBLAS's Haswell kernels round some elements
// of a block differently from the whole call (its Prescott and SkylakeX kernels did not, in a
// one-off check), so a product's last bits may depend on the thread count (README,
// Reproducibility).
//
// Safety: OpenBLAS called at 1 thread from several threads at once is safe in Debian's pthread
// build (USE_THREAD=1 implies locking around memory.c's buffer table; at 1 thread a call runs on
// the caller and takes one buffer from that table). NOTE: the openmp build would be too; the
// single-threaded build (libopenblas0-serial, USE_THREAD=0 without USE_LOCKING) would NOT.

#include <cstdint>

namespace gradlab::cpu {

/// Flops (2 M N K, summed over a batch) below which a product stays one call on the calling
/// thread: ~40 µs of one core's sgemm here, where a region's start and end cost a few µs.
inline constexpr int64_t kGemmGrain = int64_t{1} << 22;
/// Block edges of a split product are multiples of this many rows / columns.
inline constexpr int64_t kGemmAlign = 16;

/// C [M, N] = op(A) @ op(B) + beta C, row major (op = transpose when ta / tb); M, N, K >= 1.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

/// C_i = op(A_i) @ op(B_i) (beta 0) for i < batch, A_i = A + i sa, B_i = B + i sb, C_i = C + i sc.
void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                  const float* A, int64_t lda, int64_t sa, const float* B, int64_t ldb,
                  int64_t sb, float* C, int64_t ldc, int64_t sc);
void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                  const double* A, int64_t lda, int64_t sa, const double* B, int64_t ldb,
                  int64_t sb, double* C, int64_t ldc, int64_t sc);

namespace detail {
/// How gemm() would split a product of these sizes now: 'S' serial, 'M' rows, 'N' columns, and
/// the number of blocks. For checks.
struct GemmPlan {
  char how;
  int64_t blocks;
};
GemmPlan gemm_plan(int64_t M, int64_t N, int64_t K);
/// OpenBLAS's own thread count (openblas_get_num_threads): 1 unless someone set it after
/// set_num_threads. For checks, which do not link OpenBLAS themselves.
int blas_threads();
/// openblas_set_num_threads(n), for checks of the rule above.
void set_blas_threads(int n);
}  // namespace detail

}  // namespace gradlab::cpu
