#pragma once
// The sum / max / min kernels of one capability level (see vec/reduce.hpp for the summation
// order they all keep). Included at the end of vec_default.cpp, vec_avx2.cpp and vec_avx512.cpp,
// after vec/level.hpp, each defining GRADLAB_VEC_REDUCE_TABLE; compiled with that file's -m flags.
// NOTE: as in level.hpp, everything stays in an anonymous namespace and uses only intrinsics.

#include <immintrin.h>

#include "gradlab/backend/cpu/vec/reduce.hpp"

namespace gradlab::cpu::vec {
namespace {

// One register of double lanes at this level: kRW lanes, kRK registers make the 32 lanes.
#if defined(__AVX512F__)
using RV = __m512d;
constexpr int64_t kRW = 8;
inline RV r_zero() { return _mm512_setzero_pd(); }
inline RV r_set1(double v) { return _mm512_set1_pd(v); }
inline RV r_load(const double* p) { return _mm512_loadu_pd(p); }
inline RV r_load(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }  // exact widening
inline void r_store(double* p, RV v) { _mm512_storeu_pd(p, v); }
inline RV r_add(RV a, RV b) { return _mm512_add_pd(a, b); }
// reduce_combine(max / min): v replaces acc where v > acc (v < acc) or v is NaN.
inline RV r_combine(bool is_max, RV acc, RV v) {
  const __mmask8 m = (is_max ? _mm512_cmp_pd_mask(v, acc, _CMP_GT_OQ) : _mm512_cmp_pd_mask(v, acc, _CMP_LT_OQ)) |
                     _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_blend_pd(m, acc, v);
}
#elif defined(__AVX2__)
using RV = __m256d;
constexpr int64_t kRW = 4;
inline RV r_zero() { return _mm256_setzero_pd(); }
inline RV r_set1(double v) { return _mm256_set1_pd(v); }
inline RV r_load(const double* p) { return _mm256_loadu_pd(p); }
inline RV r_load(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
inline void r_store(double* p, RV v) { _mm256_storeu_pd(p, v); }
inline RV r_add(RV a, RV b) { return _mm256_add_pd(a, b); }
inline RV r_combine(bool is_max, RV acc, RV v) {
  const RV m = _mm256_or_pd(is_max ? _mm256_cmp_pd(v, acc, _CMP_GT_OQ) : _mm256_cmp_pd(v, acc, _CMP_LT_OQ),
                            _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_pd(acc, v, m);
}
#else
using RV = __m128d;
constexpr int64_t kRW = 2;
inline RV r_zero() { return _mm_setzero_pd(); }
inline RV r_set1(double v) { return _mm_set1_pd(v); }
inline RV r_load(const double* p) { return _mm_loadu_pd(p); }
inline RV r_load(const float* p) {  // 2 floats (8 bytes) -> 2 doubles
  return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline void r_store(double* p, RV v) { _mm_storeu_pd(p, v); }
inline RV r_add(RV a, RV b) { return _mm_add_pd(a, b); }
inline RV r_combine(bool is_max, RV acc, RV v) {  // SSE2 has no blendv
  const RV m = _mm_or_pd(is_max ? _mm_cmpgt_pd(v, acc) : _mm_cmplt_pd(v, acc), _mm_cmpunord_pd(v, v));
  return _mm_or_pd(_mm_and_pd(m, v), _mm_andnot_pd(m, acc));
}
#endif

constexpr int64_t kRK = kSumLanes / kRW;
static_assert(kRK * kRW == kSumLanes, "the 32 lanes must fill whole registers");

// Software prefetch distance of sum_body (and minmax_body), in bytes ahead of the element read.
// Why (perf on bench_vs_libtorch's sum_16M / sum_128K): the float32 loop (a widening and an add
// per 8 floats at AVX-512) runs well above DRAM speed on L2-resident data, yet on 16M floats it
// stayed below a plain read loop's bandwidth, its samples on the loads. The hardware prefetcher
// stops at each 4 KiB page, and the loop's uops per byte leave fewer misses in flight than a
// read loop's; a prefetch two pages ahead keeps the stream going. In a scratch loop test 4, 8
// and 16 KiB ahead did about equally well and 0.5-2 KiB ahead (inside the page the hardware
// already fetches) only cost time. It may run past p + n: a prefetch never faults
// (ReduceLevels.SumPrefetchPastTheEndNeverFaults), and a long row's next block comes next anyway.
constexpr int64_t kSumPrefetchBytes = 8192;

inline void prefetch_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kSumPrefetchBytes, _MM_HINT_T0);
}

// Lane l of the 32 is lane l % kRW of register l / kRW: element i of a chunk of 32 goes to lane i.
// The main loop takes two chunks per trip (chunk c, then chunk c + 1, into the same registers), so
// each lane still adds its elements one at a time in ascending i: only the loop overhead and the
// prefetches (one per 64-byte line) are shared by the two chunks.
template <class T>
double sum_body(const T* p, int64_t n) {
  RV acc[kRK];
  for (auto& a : acc) a = r_zero();
  int64_t i = 0;
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(T));  // elements per cache line
  for (; i + 2 * kSumLanes <= n; i += 2 * kSumLanes) {
    for (int64_t e = 0; e < 2 * kSumLanes; e += kLine) prefetch_ahead(p + i + e);
    for (int64_t k = 0; k < kRK; ++k) acc[k] = r_add(acc[k], r_load(p + i + k * kRW));
    for (int64_t k = 0; k < kRK; ++k) acc[k] = r_add(acc[k], r_load(p + i + kSumLanes + k * kRW));
  }
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int64_t k = 0; k < kRK; ++k) acc[k] = r_add(acc[k], r_load(p + i + k * kRW));
  double l[kSumLanes];
  for (int64_t k = 0; k < kRK; ++k) r_store(l + k * kRW, acc[k]);
  for (int64_t j = 0; i < n; ++i, ++j) l[j] += static_cast<double>(p[i]);  // the tail: lane i mod 32
  for (int64_t w = kSumLanes / 2; w >= 1; w /= 2)
    for (int64_t j = 0; j < w; ++j) l[j] += l[j + w];
  return l[0];
}

inline double combine1(bool is_max, double acc, double v) {  // math::reduce_combine on one number
  return (is_max ? v > acc : v < acc) || v != v ? v : acc;
}

template <class T>
double minmax_body(bool is_max, const T* p, int64_t n) {
  RV acc[kRK];
  for (auto& a : acc) a = r_set1(static_cast<double>(p[0]));
  int64_t i = 0;
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(T));
  for (; i + 2 * kSumLanes <= n; i += 2 * kSumLanes) {  // as sum_body: each lane still in order
    for (int64_t e = 0; e < 2 * kSumLanes; e += kLine) prefetch_ahead(p + i + e);
    for (int64_t k = 0; k < kRK; ++k) acc[k] = r_combine(is_max, acc[k], r_load(p + i + k * kRW));
    for (int64_t k = 0; k < kRK; ++k) acc[k] = r_combine(is_max, acc[k], r_load(p + i + kSumLanes + k * kRW));
  }
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int64_t k = 0; k < kRK; ++k) acc[k] = r_combine(is_max, acc[k], r_load(p + i + k * kRW));
  double l[kSumLanes];
  for (int64_t k = 0; k < kRK; ++k) r_store(l + k * kRW, acc[k]);
  for (int64_t j = 0; i < n; ++i, ++j) l[j] = combine1(is_max, l[j], static_cast<double>(p[i]));
  for (int64_t w = kSumLanes / 2; w >= 1; w /= 2)
    for (int64_t j = 0; j < w; ++j) l[j] = combine1(is_max, l[j], l[j + w]);
  return l[0];
}

template <class T>
void add_row_body(const T* row, double* acc, int64_t n) {
  int64_t j = 0;
  for (; j + kRW <= n; j += kRW) r_store(acc + j, r_add(r_load(acc + j), r_load(row + j)));
  for (; j < n; ++j) acc[j] += static_cast<double>(row[j]);
}

double sum_f32(const float* p, int64_t n) { return sum_body(p, n); }
double sum_f64(const double* p, int64_t n) { return sum_body(p, n); }
void add_row_f32(const float* row, double* acc, int64_t n) { add_row_body(row, acc, n); }
void add_row_f64(const double* row, double* acc, int64_t n) { add_row_body(row, acc, n); }
double minmax_f32(bool is_max, const float* p, int64_t n) { return minmax_body(is_max, p, n); }
double minmax_f64(bool is_max, const double* p, int64_t n) { return minmax_body(is_max, p, n); }

}  // namespace

extern const ReduceKernels GRADLAB_VEC_REDUCE_TABLE;
const ReduceKernels GRADLAB_VEC_REDUCE_TABLE = {
    GRADLAB_VEC_NAME, sum_f32, sum_f64, add_row_f32, add_row_f64, minmax_f32, minmax_f64,
};

}  // namespace gradlab::cpu::vec
