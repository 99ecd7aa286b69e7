#pragma once
// The body of one capability level (see vec.hpp). Included only by vec_default.cpp,
// vec_avx2.cpp and vec_avx512.cpp, each defining GRADLAB_VEC_TABLE (the table's name) and each
// compiled with its own -m flags, so xsimd::default_arch is SSE2, FMA3<AVX2> or AVX512BW there.
// NOTE: everything here stays in an anonymous namespace (see vec.hpp: one copy per level).
// On a CPU other than x86 only vec_default.cpp includes this file (xsimd picks that CPU's SIMD,
// e.g. NEON on aarch64); the x86 intrinsics below are then left out and the half conversions run
// the scalar code.

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <limits>
#include <type_traits>

// NOTE: xsimd 8.1 has two non-template inline functions, detail::__kernel_rem_pio2 and
// __ieee754_rem_pio2 (sin / cos of huge arguments); every file that uses sin emits them, and the
// linker keeps one copy, maybe the AVX-512 one, for baseline callers too. Renamed per level here (ctest vec_levels_share_no_code
// lists what the level objects share with others).
#define GRADLAB_VEC_PASTE2_(a, b) a##b
#define GRADLAB_VEC_PASTE_(a, b) GRADLAB_VEC_PASTE2_(a, b)
#define __kernel_rem_pio2 GRADLAB_VEC_PASTE_(gradlab_kernel_rem_pio2_, GRADLAB_VEC_LEVEL)
#define __ieee754_rem_pio2 GRADLAB_VEC_PASTE_(gradlab_ieee754_rem_pio2_, GRADLAB_VEC_LEVEL)
#include <xsimd/xsimd.hpp>
#undef __kernel_rem_pio2
#undef __ieee754_rem_pio2

#include "gradlab/backend/cpu/vec/vec.hpp"
#include "gradlab/backend/math/nn.hpp"

// Two fixes to xsimd 8.1's float64 math, found by checks/ops/vec_test.cpp against glibc, and
// gradlab's own float32 erf. The formulas call log / erf on batches by argument-dependent lookup,
// so these overloads (exact matches, preferred over xsimd's templates; internal linkage) take
// their place in this file.
//   log(x), x subnormal: xsimd returned log(x) - 37 (-745.9 for 2e-308); scaled by 2^54 first.
//   erf(x), |x| >= 1e100: xsimd returned NaN; erf(±6) rounds to ±1 in float and double, and NaN
//   stays NaN through the clamp (its comparisons are false).
namespace xsimd {
static inline batch<double, default_arch> log(const batch<double, default_arch>& x) {
  using B = batch<double, default_arch>;
  const auto tiny = (x > B(0.0)) & (x < B(std::numeric_limits<double>::min()));
  if (none(tiny)) return kernel::log(x, default_arch{});
  const B scaled = select(tiny, x * B(18014398509481984.0), x);  // 2^54
  return kernel::log(scaled, default_arch{}) - select(tiny, B(54 * 0.693147180559945309417232121458), B(0.0));
}
static inline batch<double, default_arch> erf(const batch<double, default_arch>& x) {
  using B = batch<double, default_arch>;
  return kernel::erf(select(x > B(6), B(6), select(x < B(-6), B(-6), x)), default_arch{});
}

// float32 erf, one polynomial and no branch (xsimd's erf costs 3-4x exp: an exp, a division and
// two branches; gelu spends its time here):
//   erf(x) = c P(u),  c = x clamped to [-4, 4],  u = c²/8 - 1 in [-1, 1],
// P of degree 16 interpolating erf(x)/x at the 17 Chebyshev nodes of x² in [0, 16], the
// coefficients rounded to float one at a time from the top, each lower one refitted
// (tools/fit_erf.py prints them). Interpolation error 1e-8 relative; float rounding brings it to
// 4 ulps against glibc, 5 at the default level (SSE2 has no FMA: each step rounds twice; checks/
// ops/vec_test.cpp, every level).
// |x| >= 3.92 rounds to ±1 in float, so erf(±4) = ±1 serves every |x| > 4 and ±inf. The result
// is clamped to [-1, 1]: rounding could give 1 + 1 ulp, and 1 + erf(x) < 0 would turn gelu's
// sign for x < -5.5. NaN: min / max return their SECOND operand when one is NaN (x86 minps /
// maxps; NEON propagates NaN), so the constant comes first and NaN goes through. -0 gives -0.
static inline batch<float, default_arch> erf(const batch<float, default_arch>& x) {
  using B = batch<float, default_arch>;
  const B c = max(B(-4.0f), min(B(4.0f), x));
  const B u = fma(c * c, B(0.125f), B(-1.0f));
  // highest degree first
  static constexpr float k[17] = {
      5.720870686e-04f,  -1.311137923e-03f, 7.078782073e-04f,  -1.292812172e-03f, 5.438941531e-03f,
      -9.785231203e-03f, 1.401690580e-02f,  -2.187454700e-02f, 3.316994384e-02f,  -4.593481496e-02f,
      5.986696854e-02f,  -7.470265031e-02f, 9.021080285e-02f,  -1.077121571e-01f, 1.316750497e-01f,
      -1.765761971e-01f, 3.535310030e-01f};
  B p(k[0]);
  // NOTE: the pragma unrolls it (GCC 12 -O2 kept the loop: a compare and branch per coefficient,
  // 1.4x slower)
#pragma GCC unroll 17
  for (int i = 1; i < 17; ++i) p = fma(p, u, B(k[i]));
  return max(B(-1.0f), min(B(1.0f), c * p));
}
}  // namespace xsimd

namespace gradlab::cpu::vec {
namespace {

using Arch = xsimd::default_arch;

// float32 gelu and its backward share one shape: where every lane of a vector has |x| <= 3
// (99.7% of a unit normal's lanes, 96% of 16-lane vectors) one polynomial does the whole of it,
//   lead · (1/2 + x P(u)),  s = x²,  u = s 2/9 - 1 in [-1, 1] (2/9 rounded to float),
// P of degree N-1 interpolating at the N Chebyshev nodes of u, coefficients k (highest degree
// first) rounded to float from the top (tools/fit_erf.py); elsewhere the formula line `formula()`.
// A vector with no central lane runs the formula alone, one with both kinds runs both.
// NOTE: a lane's result is one function of that lane: the polynomial where x² <= 9, the formula
// elsewhere. A vector holding both kinds computes both and selects per lane, so no lane depends
// on its neighbours or on the SIMD width (VecMath.Float32GeluLanesIndependentOfNeighbours).
template <int N, class B, class Formula>
B central_poly_or(const float (&k)[N], const B& x, const B& lead, Formula formula) {
  const B s = x * x;
  const auto central = s <= B(9.0f);  // false for NaN
  if (xsimd::none(central)) return formula();
  const B u = xsimd::fma(s, B(2.222222239e-01f), B(-1.0f));
  B p(k[0]);
#pragma GCC unroll 12
  for (int i = 1; i < N; ++i) p = xsimd::fma(p, u, B(k[i]));
  const B c = lead * xsimd::fma(x, p, B(0.5f));
  if (xsimd::all(central)) return c;
  return xsimd::select(central, c, formula());
}

// float32 gelu (the formula: math/elementwise.hpp with the erf above), lead = x:
//   gelu(x) = x h,  h = Φ(x) = 1/2 + x R(s),  R(s) = erf(√(s/2)) / (2√s) = P(u), degree 10
// (tools/fit_erf.py --gelu). 16 operations instead of the formula's 27; h stays in
// (0.0013, 0.9987) there, so no clamp. The error stays within the formula's bound
// (VecMath.Float32GeluTailsAndSpecialsAtEveryLevel: 0.27 of it with FMA, 0.32 without, from the
// fit script's simulation).
template <class B>
B gelu_f32(const B& x, const B& formula_p, const B& formula_q) {
  static constexpr float k[11] = {2.473860150e-06f,  -1.249171055e-05f, 5.215818601e-05f, -2.172352542e-04f,
                                  8.179775323e-04f,  -2.729523228e-03f, 8.021468297e-03f, -2.057105303e-02f,
                                  4.597224668e-02f,  -9.283248335e-02f, 2.277131677e-01f};
  return central_poly_or(k, x, x, [&] { return math::GeluFn{}(x, formula_p, formula_q); });
}

// float32 gelu backward, dx = dy (Φ(x) + x φ(x)), lead = dy:
//   Φ(x) + x φ(x) = 1/2 + x Q(s),  Q(s) = R(s) + exp(-s/2) / √(2π) = P(u), degree 11
// (tools/fit_erf.py --gelu-backward): 17 operations instead of the formula's erf and exp (about
// 50); elsewhere the formula line GeluBackward. Error: 0.24 of
// VecMath.GeluBackwardAgainstReferenceAtEveryLevel's bound with FMA, 0.31 without (fit script).
template <class B>
B gelu_backward_f32(const B& dy, const B& x) {
  static constexpr float k[12] = {-9.135682376e-06f, 4.527251804e-05f,  -1.816779841e-04f, 7.327173953e-04f,
                                  -2.654300071e-03f, 8.397286758e-03f,  -2.293492109e-02f, 5.292309821e-02f,
                                  -1.003970206e-01f, 1.524067968e-01f,  -1.874409467e-01f, 2.697613835e-01f};
  return central_poly_or(k, x, dy, [&] { return math::GeluBackwardFn{}(dy, x); });
}

// Stores of large outputs bypass the caches. A plain store first reads the line it writes (to own
// it), so an op over arrays larger than the caches moves 3 bytes per byte written; a streaming
// (non-temporal) store moves 2, as glibc's memcpy does at these sizes. bench_vs_libtorch, 1
// thread, interleaved rounds: exp on 16M floats 3.2-4.3 -> 2.5-2.6 ms (one round 3.9), relu(x*2+1) 10.5-13.2 ->
// 7.1-8.0 ms (memcpy 3.1-3.7 ms); at 2 threads the gain is smaller and varies with the host's
// bandwidth. Only for a call (one thread's chunk) writing at least kStreamBytes, half this
// machine's 32 MiB L3 (glibc streams memcpy from 3/4 of it): an output the next op may still read
// from the caches keeps plain stores. And only to a batch-aligned address (streaming stores need
// one: a misaligned view takes plain stores). The values are the same bits either way
// (Binary.LargeOutputsStreamedGiveTheBitsOfSmallCalls); _mm_sfence orders the streamed stores
// before the caller's next reads.
constexpr int64_t kStreamBytes = int64_t{16} << 20;

template <class B, class T>
inline void store_batch(const B& r, T* y, bool stream) {
#if defined(__SSE2__)
  if (stream) {
    if constexpr (sizeof(B) == 64 && std::is_same_v<T, float>) return _mm512_stream_ps(y, r);
    else if constexpr (sizeof(B) == 64 && std::is_same_v<T, double>) return _mm512_stream_pd(y, r);
    else if constexpr (sizeof(B) == 32 && std::is_same_v<T, float>) return _mm256_stream_ps(y, r);
    else if constexpr (sizeof(B) == 32 && std::is_same_v<T, double>) return _mm256_stream_pd(y, r);
    else if constexpr (sizeof(B) == 16 && std::is_same_v<T, float>) return _mm_stream_ps(y, r);
    else if constexpr (sizeof(B) == 16 && std::is_same_v<T, double>) return _mm_stream_pd(y, r);
  }
#endif
  r.store_unaligned(y);
}
template <class B, class T>
inline bool want_stream(const T* y, int64_t n) {
  return n * static_cast<int64_t>(sizeof(T)) >= kStreamBytes && reinterpret_cast<uintptr_t>(y) % sizeof(B) == 0;
}

// y[i] = f(x[i], p, q) over whole batches; the formula is math/elementwise.hpp's, on batches
// (float32 gelu: gelu_f32 above).
template <class F, class T>
int64_t unary_body(const T* x, T* y, int64_t n, T p, T q) {
  using B = xsimd::batch<T, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  constexpr F f{};
  const B bp(p), bq(q);
  int64_t i = 0;
  const bool st = want_stream<B>(y, n);
  if constexpr (std::is_same_v<F, math::GeluFn> && std::is_same_v<T, float>) {
    for (; i + W <= n; i += W) store_batch(gelu_f32(B::load_unaligned(x + i), bp, bq), y + i, st);
  } else {
    for (; i + W <= n; i += W) store_batch(f(B::load_unaligned(x + i), bp, bq), y + i, st);
  }
#if defined(__SSE2__)
  if (st) _mm_sfence();
#endif
  return i;
}

template <class F, class T>
int64_t binary_body(const T* a, bool sa, const T* b, bool sb, T* out, int64_t n) {
  using B = xsimd::batch<T, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  constexpr F f{};
  const B va = sa ? B(*a) : B(T(0)), vb = sb ? B(*b) : B(T(0));
  int64_t i = 0;
  const bool st = want_stream<B>(out, n);
  if constexpr (std::is_same_v<F, math::GeluBackwardFn> && std::is_same_v<T, float>) {
    for (; i + W <= n; i += W)
      store_batch(gelu_backward_f32(sa ? va : B::load_unaligned(a + i), sb ? vb : B::load_unaligned(b + i)), out + i,
                  st);
  } else {
    for (; i + W <= n; i += W)
      store_batch(f(sa ? va : B::load_unaligned(a + i), sb ? vb : B::load_unaligned(b + i)), out + i, st);
  }
#if defined(__SSE2__)
  if (st) _mm_sfence();
#endif
  return i;
}

template <class T>
int64_t unary_any(math::Unary op, const T* x, T* y, int64_t n, T p, T q) {
  int64_t m = 0;
  math::visit_unary(op, [&]<class F>() {
    if constexpr (math::vectorizable(F::kKind)) m = unary_body<F, T>(x, y, n, p, q);
  });
  return m;
}

template <class T>
int64_t binary_any(math::Binary op, const T* a, bool sa, const T* b, bool sb, T* out, int64_t n) {
  int64_t m = 0;
  math::visit_binary(op, [&]<class F>() {
    if constexpr (math::vectorizable(F::kKind) && !math::is_comparison(F::kOp))
      m = binary_body<F, T>(a, sa, b, sb, out, n);
  });
  return m;
}

// ---- half types: 16-bit lanes <-> 32-bit lanes ---------------------------------------------------
// bfloat16 = the top 16 bits of a float, rounded to nearest even: (x + 0x7FFF + bit16(x)) >> 16;
// a NaN keeps its top bits with the quiet bit (0x40) set. Done on 32-bit integer lanes, then
// narrowed. float16 uses F16C (vcvtps2ph / vcvtph2ps, round to nearest even); the one place the
// hardware differs from core/half.hpp is NaN (it keeps the payload and quiets sNaN), so NaN lanes
// are redone with the scalar rule. The AVX-512 level converts bfloat16 16 lanes at a time (the
// autocast fallback converts blocks in cache, where the width shows), float16 with the 8-lane code.
#if defined(__AVX2__)
#define GRADLAB_VEC_HALF 1
constexpr int64_t kHalfW = 8;
inline __m256i bf16_round(__m256i x) {
  const __m256i absx = _mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i nan = _mm256_cmpgt_epi32(absx, _mm256_set1_epi32(0x7F800000));
  const __m256i hi = _mm256_srli_epi32(x, 16);
  const __m256i rounding = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, rounding), 16);
  return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}
// 8 x 32-bit lanes holding values < 2^16 -> 8 x 16-bit (packs saturates: values fit as int16
// after sign extension of the low 16 bits)
inline __m128i narrow16(__m256i v) {
  v = _mm256_srai_epi32(_mm256_slli_epi32(v, 16), 16);
  return _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}
#elif defined(__SSE2__)
#define GRADLAB_VEC_HALF 1
constexpr int64_t kHalfW = 4;
inline __m128i bf16_round(__m128i x) {
  const __m128i absx = _mm_and_si128(x, _mm_set1_epi32(0x7FFFFFFF));
  const __m128i nan = _mm_cmpgt_epi32(absx, _mm_set1_epi32(0x7F800000));
  const __m128i hi = _mm_srli_epi32(x, 16);
  const __m128i rounding = _mm_add_epi32(_mm_set1_epi32(0x7FFF), _mm_and_si128(hi, _mm_set1_epi32(1)));
  const __m128i r = _mm_srli_epi32(_mm_add_epi32(x, rounding), 16);
  const __m128i q = _mm_or_si128(hi, _mm_set1_epi32(0x40));
  return _mm_or_si128(_mm_and_si128(nan, q), _mm_andnot_si128(nan, r));  // SSE2 has no blendv
}
inline __m128i narrow16(__m128i v) {
  v = _mm_srai_epi32(_mm_slli_epi32(v, 16), 16);
  return _mm_packs_epi32(v, v);  // low 64 bits: the 4 values
}
#endif

#if defined(GRADLAB_VEC_HALF)
int64_t bf16_from_f32(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  // 16 lanes, the same rule; vpmovdw truncates each lane (all < 2^16 here) to 16 bits
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(v, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    const __m512i hi = _mm512_srli_epi32(v, 16);
    const __m512i rounding = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
    const __m512i r = _mm512_mask_mov_epi32(_mm512_srli_epi32(_mm512_add_epi32(v, rounding), 16), nan,
                                            _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(r));
  }
#endif
  for (; i + kHalfW <= n; i += kHalfW) {
#if defined(__AVX2__)
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), narrow16(bf16_round(v)));
#else
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), narrow16(bf16_round(v)));
#endif
  }
  return i;
}

int64_t bf16_to_f32(const uint16_t* x, float* y, int64_t n) {  // exact: the bits << 16
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(v, 16));
  }
#endif
  for (; i + kHalfW <= n; i += kHalfW) {
#if defined(__AVX2__)
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_slli_epi32(v, 16));
#else
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_unpacklo_epi16(_mm_setzero_si128(), v));
#endif
  }
  return i;
}

// bfloat16 in and out through float32 lanes, one batch of the level at a time (16 / 8 / 4
// lanes): widened (exact), math's formula on the batch, rounded by the rule above. So each lane
// is bf16_from_float(formula(bf16_to_float(x))), what the fallback's widen / float32 kernel /
// round passes give, in one pass over the 16-bit data and in registers.
using FloatB = xsimd::batch<float, Arch>;
constexpr int64_t kFloatW = static_cast<int64_t>(FloatB::size);
inline FloatB load_bf16(const uint16_t* p) {
#if defined(__AVX512F__)
  return FloatB(_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16)));
#elif defined(__AVX2__)
  return FloatB(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16)));
#else
  return FloatB(_mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))));
#endif
}
inline void store_bf16(uint16_t* p, const FloatB& v) {
#if defined(__AVX512F__)
  const __m512i x = _mm512_castps_si512(v);
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  const __m512i hi = _mm512_srli_epi32(x, 16);
  const __m512i rounding = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
  const __m512i r = _mm512_mask_mov_epi32(_mm512_srli_epi32(_mm512_add_epi32(x, rounding), 16), nan,
                                          _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
#elif defined(__AVX2__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow16(bf16_round(_mm256_castps_si256(v))));
#else
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), narrow16(bf16_round(_mm_castps_si128(v))));
#endif
}
int64_t bf16_relu(const uint16_t* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kFloatW <= n; i += kFloatW)
    store_bf16(y + i, math::ReluFn{}(load_bf16(x + i), FloatB(0.0f), FloatB(0.0f)));
  return i;
}
int64_t bf16_threshold_grad(const uint16_t* g, const uint16_t* y, uint16_t* out, int64_t n, float threshold) {
  int64_t i = 0;
  for (; i + kFloatW <= n; i += kFloatW)
    store_bf16(out + i, math::threshold_grad(load_bf16(g + i), load_bf16(y + i), FloatB(threshold)));
  return i;
}
#else  // not x86: the scalar conversions (core/half.hpp) do every element
int64_t bf16_from_f32(const float*, uint16_t*, int64_t) { return 0; }
int64_t bf16_to_f32(const uint16_t*, float*, int64_t) { return 0; }
int64_t bf16_relu(const uint16_t*, uint16_t*, int64_t) { return 0; }
int64_t bf16_threshold_grad(const uint16_t*, const uint16_t*, uint16_t*, int64_t, float) { return 0; }
#endif
#undef GRADLAB_VEC_HALF

#if defined(__F16C__) && defined(__AVX2__)
int64_t f16_from_f32(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (!_mm256_testz_ps(nan, nan)) {  // NaN: sign | 0x7E00, as half_from_float
      const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 16), _mm256_set1_epi32(0x8000));
      const __m128i q = narrow16(_mm256_or_si256(sign, _mm256_set1_epi32(0x7E00)));
      h = _mm_blendv_epi8(h, q, narrow16(_mm256_castps_si256(nan)));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  return i;
}

int64_t f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    __m256 f = _mm256_cvtph_ps(h);
    // inf / NaN halves (exponent 0x1F): sign | 0x7F800000 | m << 13, as half_to_float (the
    // hardware would set the quiet bit of a signalling NaN)
    const __m128i special = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7C00)), _mm_set1_epi16(0x7C00));
    if (!_mm_testz_si128(special, special)) {
      const __m256i w = _mm256_cvtepu16_epi32(h);
      const __m256i bits = _mm256_or_si256(
          _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x8000)), 16),
                          _mm256_set1_epi32(0x7F800000)),
          _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x3FF)), 13));
      f = _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), _mm256_castsi256_ps(_mm256_cvtepi16_epi32(special)));
    }
    _mm256_storeu_ps(y + i, f);
  }
  return i;
}
#else
int64_t f16_from_f32(const float*, uint16_t*, int64_t) { return 0; }  // scalar (core/half.hpp)
int64_t f16_to_f32(const uint16_t*, float*, int64_t) { return 0; }
#endif

// ---- fused optimizer updates: math/optim.hpp's lines on batches ------------------------------
// Only +, *, / and sqrt (each one IEEE rounding, no fma: see math/optim.hpp), so a lane gives
// the bits the scalar tail (backend/cpu/optim.cpp) and the composite update give.
// NOTE: GCC contracts a * b + c to an fma by default, xsimd batches included, and the level files
// have -mfma: without GRADLAB_NO_FP_CONTRACT, 45 of 65537 float64 SGD updates came out 1 ulp off
// the composite (prop_optim caught it).
template <class T>
GRADLAB_NO_FP_CONTRACT int64_t sgd_body(const math::SgdHyper<T>& h, T* p, const T* g, T* buf, int64_t n) {
  using B = xsimd::batch<T, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  const bool read_buf = h.use_mom && !h.first_step;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    B pv = B::load_unaligned(p + i);
    B b = read_buf ? B::load_unaligned(buf + i) : B(T(0));
    math::sgd_update(h, pv, B::load_unaligned(g + i), b);
    if (h.use_mom) b.store_unaligned(buf + i);
    pv.store_unaligned(p + i);
  }
  return i;
}

template <class T>
GRADLAB_NO_FP_CONTRACT int64_t adam_body(const math::AdamHyper<T>& h, T* p, const T* g, T* m, T* v, int64_t n) {
  using B = xsimd::batch<T, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    B pv = B::load_unaligned(p + i), mv = B::load_unaligned(m + i), vv = B::load_unaligned(v + i);
    math::adam_update(h, pv, B::load_unaligned(g + i), mv, vv);
    mv.store_unaligned(m + i);
    vv.store_unaligned(v + i);
    pv.store_unaligned(p + i);
  }
  return i;
}

template <class T>
GRADLAB_NO_FP_CONTRACT int64_t rmsprop_body(const math::RmspropHyper<T>& h, T* p, const T* g, T* s, T* a, T* buf,
                                            int64_t n) {
  using B = xsimd::batch<T, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    B pv = B::load_unaligned(p + i), sv = B::load_unaligned(s + i);
    B av = h.centered ? B::load_unaligned(a + i) : B(T(0));
    B bv = h.use_mom ? B::load_unaligned(buf + i) : B(T(0));
    math::rmsprop_update(h, pv, B::load_unaligned(g + i), sv, av, bv);
    sv.store_unaligned(s + i);
    if (h.centered) av.store_unaligned(a + i);
    if (h.use_mom) bv.store_unaligned(buf + i);
    pv.store_unaligned(p + i);
  }
  return i;
}

template <class T>
GRADLAB_NO_FP_CONTRACT int64_t adagrad_body(const math::AdagradHyper<T>& h, T* p, const T* g, T* sum, int64_t n) {
  using B = xsimd::batch<T, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    B pv = B::load_unaligned(p + i), sv = B::load_unaligned(sum + i);
    math::adagrad_update(h, pv, B::load_unaligned(g + i), sv);
    sv.store_unaligned(sum + i);
    pv.store_unaligned(p + i);
  }
  return i;
}

}  // namespace

extern const Kernels GRADLAB_VEC_TABLE;
const Kernels GRADLAB_VEC_TABLE = {
    GRADLAB_VEC_NAME, unary_any<float>, unary_any<double>, binary_any<float>, binary_any<double>,
    bf16_from_f32,    bf16_to_f32,      f16_from_f32,      f16_to_f32,
    sgd_body<float>,  sgd_body<double>, adam_body<float>,  adam_body<double>,
    rmsprop_body<float>, rmsprop_body<double>, adagrad_body<float>, adagrad_body<double>,
    bf16_relu,        bf16_threshold_grad,
};

}  // namespace gradlab::cpu::vec
