// Matrix products through OpenBLAS's cblas interface, split over gradlab's threads (gemm.hpp);
// this file must not include xtensor-blas: the two headers declare the same enums.

#include <cblas.h>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/gemm.hpp"
#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"

namespace gradlab::cpu {

namespace {

// The one place that calls cblas_?gemm: one product on the calling thread.
void blas_call(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
void blas_call(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
               const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

double flops(int64_t M, int64_t N, int64_t K) {
  return 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
}

// True when products may be split now: more than one thread, not inside a region (nested calls
// are serial anyway), and OpenBLAS at 1 thread (someone who set OpenBLAS's own count above 1
// after set_num_threads gets each product handed to OpenBLAS whole, as they asked).
bool may_split() {
  return get_num_threads() > 1 && !in_parallel_region() && openblas_get_num_threads() == 1;
}

template <class T>
void gemm_split(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const detail::GemmPlan plan = detail::gemm_plan(M, N, K);
  if (plan.how == 'S') return blas_call(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
  // Units of kGemmAlign rows (or columns); parallel_for gives each thread a run of units.
  const int64_t dim = plan.how == 'M' ? M : N;
  const int64_t units = (dim + kGemmAlign - 1) / kGemmAlign;
  parallel_for(0, units, units / plan.blocks, [&](int64_t u0, int64_t u1) {
    const int64_t lo = u0 * kGemmAlign, hi = std::min(dim, u1 * kGemmAlign);
    if (plan.how == 'M')  // op(A) rows lo..hi: A's rows (no transpose) or A's columns (transposed)
      blas_call(ta, tb, hi - lo, N, K, A + (ta ? lo : lo * lda), lda, B, ldb, beta, C + lo * ldc,
                ldc);
    else  // op(B) columns lo..hi: B's columns (no transpose) or B's rows (transposed)
      blas_call(ta, tb, M, hi - lo, K, A, lda, B + (tb ? lo * ldb : lo), ldb, beta, C + lo, ldc);
  });
}

template <class T>
void gemm_batched_impl(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                       const T* A, int64_t lda, int64_t sa, const T* B, int64_t ldb, int64_t sb,
                       T* C, int64_t ldc, int64_t sc) {
  const int threads = get_num_threads();
  if (batch >= threads && may_split() &&
      flops(M, N, K) * static_cast<double>(batch) >= static_cast<double>(kGemmGrain)) {
    // One whole product per item: no packing is repeated.
    parallel_for(0, batch, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        blas_call(ta, tb, M, N, K, A + i * sa, lda, B + i * sb, ldb, T(0), C + i * sc, ldc);
    });
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm_split(ta, tb, M, N, K, A + i * sa, lda, B + i * sb, ldb, T(0), C + i * sc, ldc);
}

// How a [rows, cols] matrix with strides (rs, cs) can be handed to BLAS without a copy.
struct Layout {
  bool ok = false;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 0;
};

Layout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  // NOTE: the stride of a size-1 dim is arbitrary (a strided view of [1, 1] may have strides
  // [2, 2]) and is_contiguous() ignores it, so contiguous() would not fix it: normalize here, or
  // BLAS gets ld = 0, refuses the call and leaves the output uninitialized.
  if (cols == 1) cs = 1;
  if (rows == 1) rs = std::max<int64_t>(cols, 1);
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1)) return {true, CblasNoTrans, std::max(rs, std::max<int64_t>(cols, 1))};
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1)) return {true, CblasTrans, std::max(cs, std::max<int64_t>(rows, 1))};
  return {};
}

}  // namespace

Tensor bmm(const Tensor& a_in, const Tensor& b_in) {
  const int64_t B = a_in.size(0), M = a_in.size(1), K = a_in.size(2), N = b_in.size(2);
  Tensor out = make_tensor({B, M, N}, a_in.dtype());
  if (out.numel() == 0) return out;
  if (K == 0) {
    fill(out, 0);
    return out;
  }
  Tensor a = a_in, b = b_in;
  Layout la = blas_layout(M, K, a.stride(1), a.stride(2));
  if (!la.ok) {
    a = contiguous(a);
    la = blas_layout(M, K, a.stride(1), a.stride(2));
  }
  Layout lb = blas_layout(K, N, b.stride(1), b.stride(2));
  if (!lb.ok) {
    b = contiguous(b);
    lb = blas_layout(K, N, b.stride(1), b.stride(2));
  }
  const int64_t sa = a.stride(0), sb = b.stride(0);
  const bool ta = la.trans == CblasTrans, tb = lb.trans == CblasTrans;
  if (a.dtype() == kFloat32) {
    gemm_batched(B, ta, tb, M, N, K, ptr<const float>(a), la.ld, sa, ptr<const float>(b), lb.ld,
                 sb, ptr<float>(out), N, M * N);
  } else if (a.dtype() == kFloat64) {
    gemm_batched(B, ta, tb, M, N, K, ptr<const double>(a), la.ld, sa, ptr<const double>(b),
                 lb.ld, sb, ptr<double>(out), N, M * N);
  } else {
    throw DTypeError(error_message("matmul", "BLAS multiplies floating-point matrices only",
                                   "float32 or float64", to_string(a.dtype()),
                                   "convert with .to(kFloat32) first"));
  }
  return out;
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_split(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_split(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                  const float* A, int64_t lda, int64_t sa, const float* B, int64_t ldb,
                  int64_t sb, float* C, int64_t ldc, int64_t sc) {
  gemm_batched_impl(batch, ta, tb, M, N, K, A, lda, sa, B, ldb, sb, C, ldc, sc);
}
void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                  const double* A, int64_t lda, int64_t sa, const double* B, int64_t ldb,
                  int64_t sb, double* C, int64_t ldc, int64_t sc) {
  gemm_batched_impl(batch, ta, tb, M, N, K, A, lda, sa, B, ldb, sb, C, ldc, sc);
}

namespace detail {
GemmPlan gemm_plan(int64_t M, int64_t N, int64_t K) {
  if (!may_split() || flops(M, N, K) < static_cast<double>(kGemmGrain)) return {'S', 1};
  const char how = M >= N ? 'M' : 'N';  // split the longer side: the shorter one's operand is
                                        // the one every block packs again
  const int64_t units = ((how == 'M' ? M : N) + kGemmAlign - 1) / kGemmAlign;
  const int64_t blocks = std::min<int64_t>(get_num_threads(), units);
  if (blocks <= 1) return {'S', 1};
  return {how, blocks};
}
int blas_threads() { return openblas_get_num_threads(); }
void set_blas_threads(int n) { openblas_set_num_threads(n); }
}  // namespace detail

}  // namespace gradlab::cpu
