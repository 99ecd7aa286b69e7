// Matrix products through OpenBLAS's cblas interface (this file must not include xtensor-blas:
// the two headers declare the same enums).

#include <cblas.h>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"

namespace gradlab::cpu {

namespace {

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
  if (a.dtype() == kFloat32) {
    const float* pa = ptr<const float>(a);
    const float* pb = ptr<const float>(b);
    float* pc = ptr<float>(out);
    for (int64_t i = 0; i < B; ++i)
      cblas_sgemm(CblasRowMajor, la.trans, lb.trans, M, N, K, 1.0f, pa + i * sa, la.ld,
                  pb + i * sb, lb.ld, 0.0f, pc + i * M * N, N);
  } else if (a.dtype() == kFloat64) {
    const double* pa = ptr<const double>(a);
    const double* pb = ptr<const double>(b);
    double* pc = ptr<double>(out);
    for (int64_t i = 0; i < B; ++i)
      cblas_dgemm(CblasRowMajor, la.trans, lb.trans, M, N, K, 1.0, pa + i * sa, la.ld,
                  pb + i * sb, lb.ld, 0.0, pc + i * M * N, N);
  } else {
    throw DTypeError(error_message("matmul", "BLAS multiplies floating-point matrices only",
                                   "float32 or float64", to_string(a.dtype()),
                                   "convert with .to(kFloat32) first"));
  }
  return out;
}

}  // namespace gradlab::cpu
