// Vector math on 1M elements: a scalar glibc loop (the baseline) against xsimd at each capability
// level (gradlab's kernels, vec/vec.hpp; float32 erf is gradlab's own polynomial there), SLEEF's
// u10 functions at AVX2 and AVX-512 (when libsleef-dev is found) and glibc's libmvec erf (4-ulp
// vector functions, glibc >= 2.35, when found), for exp, tanh, sigmoid, gelu, erf and log,
// float32 and float64; plus
// the public ops (gradlab::exp(x) ..., allocation included) and gelu composed of five ops, as it
// was; gelu_randn/*: float32 gelu on unit-normal inputs (its kernel is faster where all lanes of a
// vector have |x| <= 3). Also float32 <-> bfloat16 / float16 conversions, scalar vs vectorized.
//
//   build/release/bench/bench_vecmath --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   python3 tools/bench_ratios.py ... (or read the medians: ratio = scalar_glibc / row)
//
// NOTE: SLEEF's entry points take __m256 / __m512, so their wrappers carry target attributes and
// run only when the CPU has the ISA (skipped with a message otherwise): the bench itself is
// baseline x86-64 code.

#include <benchmark/benchmark.h>

#include <cmath>
#include <immintrin.h>
#include <numbers>
#include <random>
#include <vector>

#include "gradlab/backend/cpu/vec/vec.hpp"
#include "gradlab/gradlab.hpp"

#ifdef GRADLAB_HAVE_SLEEF
// SLEEF's AVX2 / AVX-512 entry points, declared here: sleef.h declares them only in a file built
// with -mavx2 / -mavx512f, and this bench stays baseline code (see the NOTE above).
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f")
extern "C" {
__m256 Sleef_expf8_u10avx2(__m256);
__m256d Sleef_expd4_u10avx2(__m256d);
__m512 Sleef_expf16_u10avx512f(__m512);
__m512d Sleef_expd8_u10avx512f(__m512d);
__m256 Sleef_tanhf8_u10avx2(__m256);
__m256d Sleef_tanhd4_u10avx2(__m256d);
__m512 Sleef_tanhf16_u10avx512f(__m512);
__m512d Sleef_tanhd8_u10avx512f(__m512d);
__m256 Sleef_erff8_u10avx2(__m256);
__m256d Sleef_erfd4_u10avx2(__m256d);
__m512 Sleef_erff16_u10avx512f(__m512);
__m512d Sleef_erfd8_u10avx512f(__m512d);
__m256 Sleef_logf8_u10avx2(__m256);
__m256d Sleef_logd4_u10avx2(__m256d);
__m512 Sleef_logf16_u10avx512f(__m512);
__m512d Sleef_logd8_u10avx512f(__m512d);
}
#pragma GCC pop_options
#endif

#ifdef GRADLAB_HAVE_LIBMVEC
// glibc's libmvec (part of libc6 on x86-64, glibc >= 2.35): the vector-ABI names of erf / erff.
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f")
extern "C" {
__m256 _ZGVdN8v_erff(__m256);
__m512 _ZGVeN16v_erff(__m512);
__m256d _ZGVdN4v_erf(__m256d);
__m512d _ZGVeN8v_erf(__m512d);
}
#pragma GCC pop_options
#endif

namespace {

using gradlab::cpu::vec::Capability;
using gradlab::math::Unary;
constexpr int64_t kN = 1 << 20;

enum Fn { kExp, kTanh, kSigmoid, kGelu, kLog, kErf };
constexpr int kFns = 6;
const char* const kFnNames[] = {"exp", "tanh", "sigmoid", "gelu", "log", "erf"};
const Unary kOps[] = {Unary::Exp, Unary::Tanh, Unary::Sigmoid, Unary::Gelu, Unary::Log, Unary::Erf};

template <class T>
std::vector<T> inputs(Fn fn) {
  std::vector<T> x(kN);
  for (int64_t i = 0; i < kN; ++i) {
    const double u = static_cast<double>(i) / kN;  // [0, 1)
    x[i] = static_cast<T>(fn == kLog ? 1e-3 + 100 * u : fn == kErf ? -4 + 8 * u : -8 + 16 * u);
  }
  return x;
}

template <class T>
void scalar(benchmark::State& st, Fn fn) {
  auto x = inputs<T>(fn);
  std::vector<T> y(kN);
  for (auto _ : st) {
    switch (fn) {
      case kExp: for (int64_t i = 0; i < kN; ++i) y[i] = std::exp(x[i]); break;
      case kTanh: for (int64_t i = 0; i < kN; ++i) y[i] = std::tanh(x[i]); break;
      case kSigmoid: for (int64_t i = 0; i < kN; ++i) y[i] = T(1) / (T(1) + std::exp(-x[i])); break;
      case kGelu:
        for (int64_t i = 0; i < kN; ++i) y[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * T(std::numbers::sqrt2 / 2)));
        break;
      case kLog: for (int64_t i = 0; i < kN; ++i) y[i] = std::log(x[i]); break;
      case kErf: for (int64_t i = 0; i < kN; ++i) y[i] = std::erf(x[i]); break;
    }
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
}

template <class T>
void xsimd_level(benchmark::State& st, Fn fn, Capability c) {
  const auto* k = gradlab::cpu::vec::kernels_for(c);
  if (!k) return st.SkipWithError("this CPU does not run the level");
  auto x = inputs<T>(fn);
  std::vector<T> y(kN);
  for (auto _ : st) {
    gradlab::cpu::vec::unary(*k, kOps[fn], x.data(), y.data(), kN, T(0), T(0));
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
}

// The public op: allocation and dispatch included (the rows).
template <class T>
void op(benchmark::State& st, Fn fn) {
  auto v = inputs<T>(fn);
  auto x = gradlab::from_blob(v.data(), {kN}, sizeof(T) == 4 ? gradlab::kFloat32 : gradlab::kFloat64).clone();
  for (auto _ : st) {
    gradlab::Tensor y;
    switch (fn) {
      case kExp: y = gradlab::exp(x); break;
      case kTanh: y = gradlab::tanh(x); break;
      case kSigmoid: y = gradlab::sigmoid(x); break;
      case kGelu: y = gradlab::gelu(x); break;
      case kLog: y = gradlab::log(x); break;
      case kErf: y = gradlab::erf(x); break;
    }
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * kN);
}

// gelu as it was: five ops, each a pass over memory and an allocation.
template <class T>
void gelu_composed(benchmark::State& st) {
  auto v = inputs<T>(kGelu);
  auto x = gradlab::from_blob(v.data(), {kN}, sizeof(T) == 4 ? gradlab::kFloat32 : gradlab::kFloat64).clone();
  for (auto _ : st) {
    auto y = 0.5 * gradlab::mul(x, 1 + gradlab::erf(gradlab::mul(x, 1.0 / std::numbers::sqrt2)));
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * kN);
}

// float32 gelu on unit-normal inputs, as activations are (the rows above take a ramp over [-8, 8]):
// the level's kernel takes its degree-10 polynomial on vectors whose lanes all have |x| <= 3
// (vec/level.hpp gelu_f32), so its speed depends on the data.
std::vector<float> normal_inputs() {
  std::vector<float> x(kN);
  std::mt19937_64 rng(28);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  return x;
}
void gelu_randn_level(benchmark::State& st, Capability c) {
  const auto* k = gradlab::cpu::vec::kernels_for(c);
  if (!k) return st.SkipWithError("this CPU does not run the level");
  auto x = normal_inputs();
  std::vector<float> y(kN);
  for (auto _ : st) {
    gradlab::cpu::vec::unary(*k, Unary::Gelu, x.data(), y.data(), kN, 0.0f, 0.0f);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
}
void gelu_randn_op(benchmark::State& st) {
  auto v = normal_inputs();
  auto x = gradlab::from_blob(v.data(), {kN}, gradlab::kFloat32).clone();
  for (auto _ : st) {
    auto y = gradlab::gelu(x);
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * kN);
}

#ifdef GRADLAB_HAVE_SLEEF
// SLEEF u10 (1.0-ulp) functions; sigmoid and gelu are composed in registers, as a kernel would.
__attribute__((target("avx2,fma"))) void sleef_avx2_f32(Fn fn, const float* x, float* y) {
  const __m256 one = _mm256_set1_ps(1), half = _mm256_set1_ps(0.5f), c = _mm256_set1_ps(0.70710678f);
  for (int64_t i = 0; i < kN; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    __m256 r;
    switch (fn) {
      case kExp: r = Sleef_expf8_u10avx2(v); break;
      case kTanh: r = Sleef_tanhf8_u10avx2(v); break;
      case kSigmoid: r = _mm256_div_ps(one, _mm256_add_ps(one, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), v)))); break;
      case kGelu: r = _mm256_mul_ps(half, _mm256_mul_ps(v, _mm256_add_ps(one, Sleef_erff8_u10avx2(_mm256_mul_ps(v, c))))); break;
      case kErf: r = Sleef_erff8_u10avx2(v); break;
      default: r = Sleef_logf8_u10avx2(v); break;
    }
    _mm256_storeu_ps(y + i, r);
  }
}
__attribute__((target("avx512f"))) void sleef_avx512_f32(Fn fn, const float* x, float* y) {
  const __m512 one = _mm512_set1_ps(1), half = _mm512_set1_ps(0.5f), c = _mm512_set1_ps(0.70710678f);
  for (int64_t i = 0; i < kN; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    __m512 r;
    switch (fn) {
      case kExp: r = Sleef_expf16_u10avx512f(v); break;
      case kTanh: r = Sleef_tanhf16_u10avx512f(v); break;
      case kSigmoid: r = _mm512_div_ps(one, _mm512_add_ps(one, Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), v)))); break;
      case kGelu: r = _mm512_mul_ps(half, _mm512_mul_ps(v, _mm512_add_ps(one, Sleef_erff16_u10avx512f(_mm512_mul_ps(v, c))))); break;
      case kErf: r = Sleef_erff16_u10avx512f(v); break;
      default: r = Sleef_logf16_u10avx512f(v); break;
    }
    _mm512_storeu_ps(y + i, r);
  }
}
__attribute__((target("avx512f"))) void sleef_avx512_f64(Fn fn, const double* x, double* y) {
  const __m512d one = _mm512_set1_pd(1), half = _mm512_set1_pd(0.5), c = _mm512_set1_pd(0.70710678118654752);
  for (int64_t i = 0; i < kN; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    __m512d r;
    switch (fn) {
      case kExp: r = Sleef_expd8_u10avx512f(v); break;
      case kTanh: r = Sleef_tanhd8_u10avx512f(v); break;
      case kSigmoid: r = _mm512_div_pd(one, _mm512_add_pd(one, Sleef_expd8_u10avx512f(_mm512_sub_pd(_mm512_setzero_pd(), v)))); break;
      case kGelu: r = _mm512_mul_pd(half, _mm512_mul_pd(v, _mm512_add_pd(one, Sleef_erfd8_u10avx512f(_mm512_mul_pd(v, c))))); break;
      case kErf: r = Sleef_erfd8_u10avx512f(v); break;
      default: r = Sleef_logd8_u10avx512f(v); break;
    }
    _mm512_storeu_pd(y + i, r);
  }
}
__attribute__((target("avx2,fma"))) void sleef_avx2_f64(Fn fn, const double* x, double* y) {
  const __m256d one = _mm256_set1_pd(1), half = _mm256_set1_pd(0.5), c = _mm256_set1_pd(0.70710678118654752);
  for (int64_t i = 0; i < kN; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    __m256d r;
    switch (fn) {
      case kExp: r = Sleef_expd4_u10avx2(v); break;
      case kTanh: r = Sleef_tanhd4_u10avx2(v); break;
      case kSigmoid: r = _mm256_div_pd(one, _mm256_add_pd(one, Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_setzero_pd(), v)))); break;
      case kGelu: r = _mm256_mul_pd(half, _mm256_mul_pd(v, _mm256_add_pd(one, Sleef_erfd4_u10avx2(_mm256_mul_pd(v, c))))); break;
      case kErf: r = Sleef_erfd4_u10avx2(v); break;
      default: r = Sleef_logd4_u10avx2(v); break;
    }
    _mm256_storeu_pd(y + i, r);
  }
}

template <class T>
void sleef(benchmark::State& st, Fn fn, Capability c) {
  if (!gradlab::cpu::vec::kernels_for(c)) return st.SkipWithError("this CPU does not run the level");
  auto x = inputs<T>(fn);
  std::vector<T> y(kN);
  for (auto _ : st) {
    if constexpr (sizeof(T) == 4) (c == Capability::Avx512 ? sleef_avx512_f32 : sleef_avx2_f32)(fn, x.data(), y.data());
    else (c == Capability::Avx512 ? sleef_avx512_f64 : sleef_avx2_f64)(fn, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
}
#endif

#ifdef GRADLAB_HAVE_LIBMVEC
// libmvec's erf, and gelu composed around it in registers (exp, log ... are not measured here).
__attribute__((target("avx2,fma"))) void mvec_avx2_f32(Fn fn, const float* x, float* y) {
  const __m256 one = _mm256_set1_ps(1), half = _mm256_set1_ps(0.5f), c = _mm256_set1_ps(0.70710678f);
  for (int64_t i = 0; i < kN; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, fn == kErf ? _ZGVdN8v_erff(v)
                                       : _mm256_mul_ps(half, _mm256_mul_ps(v, _mm256_add_ps(one, _ZGVdN8v_erff(_mm256_mul_ps(v, c))))));
  }
}
__attribute__((target("avx512f"))) void mvec_avx512_f32(Fn fn, const float* x, float* y) {
  const __m512 one = _mm512_set1_ps(1), half = _mm512_set1_ps(0.5f), c = _mm512_set1_ps(0.70710678f);
  for (int64_t i = 0; i < kN; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_ps(y + i, fn == kErf ? _ZGVeN16v_erff(v)
                                       : _mm512_mul_ps(half, _mm512_mul_ps(v, _mm512_add_ps(one, _ZGVeN16v_erff(_mm512_mul_ps(v, c))))));
  }
}
__attribute__((target("avx2,fma"))) void mvec_avx2_f64(Fn fn, const double* x, double* y) {
  const __m256d one = _mm256_set1_pd(1), half = _mm256_set1_pd(0.5), c = _mm256_set1_pd(0.70710678118654752);
  for (int64_t i = 0; i < kN; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    _mm256_storeu_pd(y + i, fn == kErf ? _ZGVdN4v_erf(v)
                                       : _mm256_mul_pd(half, _mm256_mul_pd(v, _mm256_add_pd(one, _ZGVdN4v_erf(_mm256_mul_pd(v, c))))));
  }
}
__attribute__((target("avx512f"))) void mvec_avx512_f64(Fn fn, const double* x, double* y) {
  const __m512d one = _mm512_set1_pd(1), half = _mm512_set1_pd(0.5), c = _mm512_set1_pd(0.70710678118654752);
  for (int64_t i = 0; i < kN; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    _mm512_storeu_pd(y + i, fn == kErf ? _ZGVeN8v_erf(v)
                                       : _mm512_mul_pd(half, _mm512_mul_pd(v, _mm512_add_pd(one, _ZGVeN8v_erf(_mm512_mul_pd(v, c))))));
  }
}
template <class T>
void mvec(benchmark::State& st, Fn fn, Capability c) {
  if (!gradlab::cpu::vec::kernels_for(c)) return st.SkipWithError("this CPU does not run the level");
  auto x = inputs<T>(fn);
  std::vector<T> y(kN);
  for (auto _ : st) {
    if constexpr (sizeof(T) == 4) (c == Capability::Avx512 ? mvec_avx512_f32 : mvec_avx2_f32)(fn, x.data(), y.data());
    else (c == Capability::Avx512 ? mvec_avx512_f64 : mvec_avx2_f64)(fn, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
}
#endif

// float32 -> bfloat16 / float16 and back over 1M elements: the tensor copy (vectorized) and the
// scalar conversions of core/half.hpp.
void half_copy(benchmark::State& st, gradlab::ScalarType dt, bool to_half) {
  auto x = gradlab::randn({kN});
  auto h = x.to(dt);
  for (auto _ : st) {
    auto y = to_half ? x.to(dt) : h.to(gradlab::kFloat32);
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * kN);
}
void half_scalar(benchmark::State& st, bool f16, bool to_half) {
  std::vector<float> x(kN, 1.2345f), y(kN);
  std::vector<uint16_t> h(kN, 0x3C00);
  for (auto _ : st) {
    if (to_half)
      for (int64_t i = 0; i < kN; ++i) h[i] = f16 ? gradlab::half_from_float(x[i]).bits : gradlab::bf16_from_float(x[i]).bits;
    else
      for (int64_t i = 0; i < kN; ++i) y[i] = f16 ? gradlab::half_to_float({h[i]}) : gradlab::bf16_to_float({h[i]});
    benchmark::DoNotOptimize(h.data());
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
}

int register_all() {
  for (int f = 0; f < kFns; ++f) {
    const Fn fn = static_cast<Fn>(f);
    const std::string name = kFnNames[f];
    for (const char* t : {"f32", "f64"}) {
      const bool f32 = std::string(t) == "f32";
      auto reg = [&](const std::string& row, auto fn_f32, auto fn_f64) {
        if (f32) benchmark::RegisterBenchmark((name + "/" + t + "/" + row).c_str(), fn_f32)->Unit(benchmark::kMicrosecond);
        else benchmark::RegisterBenchmark((name + "/" + t + "/" + row).c_str(), fn_f64)->Unit(benchmark::kMicrosecond);
      };
      reg("scalar_glibc", [fn](benchmark::State& s) { scalar<float>(s, fn); },
          [fn](benchmark::State& s) { scalar<double>(s, fn); });
      for (Capability c : {Capability::Default, Capability::Avx2, Capability::Avx512}) {
        const char* lv = c == Capability::Avx512 ? "xsimd_avx512" : c == Capability::Avx2 ? "xsimd_avx2" : "xsimd_sse2";
        reg(lv, [fn, c](benchmark::State& s) { xsimd_level<float>(s, fn, c); },
            [fn, c](benchmark::State& s) { xsimd_level<double>(s, fn, c); });
      }
#ifdef GRADLAB_HAVE_SLEEF
      reg("sleef_avx2", [fn](benchmark::State& s) { sleef<float>(s, fn, Capability::Avx2); },
          [fn](benchmark::State& s) { sleef<double>(s, fn, Capability::Avx2); });
      reg("sleef_avx512", [fn](benchmark::State& s) { sleef<float>(s, fn, Capability::Avx512); },
          [fn](benchmark::State& s) { sleef<double>(s, fn, Capability::Avx512); });
#endif
#ifdef GRADLAB_HAVE_LIBMVEC
      if (fn == kGelu || fn == kErf) {
        reg("libmvec_avx2", [fn](benchmark::State& s) { mvec<float>(s, fn, Capability::Avx2); },
            [fn](benchmark::State& s) { mvec<double>(s, fn, Capability::Avx2); });
        reg("libmvec_avx512", [fn](benchmark::State& s) { mvec<float>(s, fn, Capability::Avx512); },
            [fn](benchmark::State& s) { mvec<double>(s, fn, Capability::Avx512); });
      }
#endif
      reg("gradlab_op", [fn](benchmark::State& s) { op<float>(s, fn); }, [fn](benchmark::State& s) { op<double>(s, fn); });
      if (fn == kGelu)
        reg("gradlab_composed_5_ops", [](benchmark::State& s) { gelu_composed<float>(s); },
            [](benchmark::State& s) { gelu_composed<double>(s); });
    }
    if (fn == kGelu) {
      for (Capability c : {Capability::Default, Capability::Avx2, Capability::Avx512}) {
        const std::string lv = c == Capability::Avx512 ? "xsimd_avx512" : c == Capability::Avx2 ? "xsimd_avx2" : "xsimd_sse2";
        benchmark::RegisterBenchmark(("gelu_randn/f32/" + lv).c_str(), [c](benchmark::State& s) { gelu_randn_level(s, c); })
            ->Unit(benchmark::kMicrosecond);
      }
      benchmark::RegisterBenchmark("gelu_randn/f32/gradlab_op", gelu_randn_op)->Unit(benchmark::kMicrosecond);
    }
  }
  for (bool to_half : {true, false}) {
    const std::string dir = to_half ? "from_f32" : "to_f32";
    benchmark::RegisterBenchmark(("bf16_" + dir + "/scalar").c_str(), [to_half](benchmark::State& s) { half_scalar(s, false, to_half); })->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("bf16_" + dir + "/tensor_to").c_str(), [to_half](benchmark::State& s) { half_copy(s, gradlab::kBFloat16, to_half); })->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("f16_" + dir + "/scalar").c_str(), [to_half](benchmark::State& s) { half_scalar(s, true, to_half); })->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("f16_" + dir + "/tensor_to").c_str(), [to_half](benchmark::State& s) { half_copy(s, gradlab::kFloat16, to_half); })->Unit(benchmark::kMicrosecond);
  }
  return 0;
}
const int kRegistered = register_all();

}  // namespace
