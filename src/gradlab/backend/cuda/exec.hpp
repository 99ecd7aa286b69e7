#pragma once
// How a CUDA kernel of gradlab is written (internal).
//
// A kernel is the body of one GPU thread: a __host__ __device__ lambda `f(i)` for i in [0, n),
// handed to `X::for_each(n, f, op)`. X is the executor:
//   DeviceExec (exec.cuh, nvcc only): launches f as a grid-stride CUDA kernel, checks the launch;
//   HostExec   (this file):           runs f(0), f(1), ... on the CPU: the host emulator.
// Kernel families are class templates over X (gpu.hpp), defined in <family>.cuh, instantiated
// for DeviceExec in <family>.cu and for HostExec in emulate.cpp. So the index math of every
// kernel runs in CI, on a machine without a GPU, against the CPU reference (checks/cuda).
//
// NOTE: a kernel body reads and writes device memory only. Host code around it may look at a
// tensor's shape but never dereference its data: values cross with cuda_rt::copy_to_host.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gradlab/core/tensor_impl.hpp"

#if defined(__CUDACC__)
#define GRADLAB_HD __host__ __device__
#else
#define GRADLAB_HD
#endif

namespace gradlab::gpu {

/// The most dims a CUDA kernel indexes (a bigger rank is an error that says to reshape).
inline constexpr int kMaxDims = 10;

/// Maps a linear index over `size` (row-major) to an element offset through `stride`.
/// Offsets are in elements from the tensor's first element.
struct Indexer {
  int rank = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};
  GRADLAB_HD int64_t operator()(int64_t i) const {
    if (rank == 1) return i * stride[0];  // the common case after make_indexer merges dims
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t s = size[d];
      off += (i % s) * stride[d];
      i /= s;
    }
    return off;
  }
};

/// An Indexer over `shape` with `strides`; throws ShapeError naming `op` when the rank is too big.
/// Size-1 dims are dropped and neighbours that step like one dim are merged (a contiguous tensor
/// becomes rank 1), so most kernels pay no 64-bit division per element.
Indexer make_indexer(const Shape& shape, const Strides& strides, const char* op);
inline Indexer make_indexer(const Tensor& t, const char* op) { return make_indexer(t.sizes(), t.strides(), op); }

/// Typed pointer to element 0 of t (a device address: only kernels dereference it).
template <class T>
T* dptr(const Tensor& t) {
  return reinterpret_cast<T*>(t.impl()->data());
}

/// Runs kernels on the CPU, one "thread" after another (the host emulator).
struct HostExec {
  static constexpr bool kOnDevice = false;
  template <class F>
  static void for_each(int64_t n, const F& f, const char* /*op*/) {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
};

// ---- math that reads the same on host and device --------------------------------------------
GRADLAB_HD inline float g_exp(float x) { return ::expf(x); }
GRADLAB_HD inline double g_exp(double x) { return ::exp(x); }
GRADLAB_HD inline float g_log(float x) { return ::logf(x); }
GRADLAB_HD inline double g_log(double x) { return ::log(x); }
GRADLAB_HD inline float g_sqrt(float x) { return ::sqrtf(x); }
GRADLAB_HD inline double g_sqrt(double x) { return ::sqrt(x); }
GRADLAB_HD inline float g_sin(float x) { return ::sinf(x); }
GRADLAB_HD inline double g_sin(double x) { return ::sin(x); }
GRADLAB_HD inline float g_cos(float x) { return ::cosf(x); }
GRADLAB_HD inline double g_cos(double x) { return ::cos(x); }
GRADLAB_HD inline float g_tanh(float x) { return ::tanhf(x); }
GRADLAB_HD inline double g_tanh(double x) { return ::tanh(x); }
GRADLAB_HD inline float g_erf(float x) { return ::erff(x); }
GRADLAB_HD inline double g_erf(double x) { return ::erf(x); }
GRADLAB_HD inline float g_pow(float x, float y) { return ::powf(x, y); }
GRADLAB_HD inline double g_pow(double x, double y) { return ::pow(x, y); }
GRADLAB_HD inline float g_fabs(float x) { return ::fabsf(x); }
GRADLAB_HD inline double g_fabs(double x) { return ::fabs(x); }
template <class T>
GRADLAB_HD inline bool g_isnan(T x) {
  return x != x;
}
template <class T>
GRADLAB_HD inline bool g_isfinite(T x) {
  return x == x && x - x == x - x;  // inf - inf is NaN
}

// ---- float16 / bfloat16 storage ----------------------------------------------------------------
// Bit-level conversions (round to nearest even), the same code on host and device, so the CPU
// reference and the CUDA kernel give identical bits.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

GRADLAB_HD inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
GRADLAB_HD inline float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/// float -> IEEE binary16, round to nearest even; overflow -> inf, NaN stays NaN (quiet).
GRADLAB_HD inline Half half_from_float(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u)  // inf or NaN
    return Half{static_cast<uint16_t>(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u))};
  if (absx >= 0x477FF000u)  // rounds to >= 65520: overflow
    return Half{static_cast<uint16_t>(sign | 0x7C00u)};
  if (absx < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
    // value = absf * 2^24 half-ulps; round the float to an integer count of 2^-24 steps.
    const uint32_t e = absx >> 23;
    if (e < 102) return Half{static_cast<uint16_t>(sign)};  // < 2^-25: rounds to zero
    const uint32_t m = (absx & 0x7FFFFFu) | 0x800000u;     // 24-bit significand
    const uint32_t shift = 126 - e;                         // m * 2^(e-150) / 2^-24 = m >> (126-e)
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return Half{static_cast<uint16_t>(sign | q)};
  }
  // normal: rebias exponent (127 -> 15), keep 10 mantissa bits, round to nearest even
  uint32_t h = ((absx - 0x38000000u) >> 13);
  const uint32_t rem = absx & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return Half{static_cast<uint16_t>(sign | h)};
}

/// IEEE binary16 -> float (exact).
GRADLAB_HD inline float half_to_float(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t e = (h.bits >> 10) & 0x1Fu;
  uint32_t m = h.bits & 0x3FFu;
  if (e == 0x1F) return f32_from_bits(sign | 0x7F800000u | (m << 13));  // inf / NaN
  if (e == 0) {
    if (m == 0) return f32_from_bits(sign);
    int ex = -1;  // subnormal: normalize
    do {
      m <<= 1;
      ++ex;
    } while ((m & 0x400u) == 0);
    return f32_from_bits(sign | static_cast<uint32_t>(112 - ex) << 23 | (m & 0x3FFu) << 13);
  }
  return f32_from_bits(sign | (e + 112) << 23 | m << 13);
}

/// float -> bfloat16 (the top 16 bits), round to nearest even; NaN stays NaN.
GRADLAB_HD inline BFloat16 bf16_from_float(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return BFloat16{static_cast<uint16_t>((x >> 16) | 0x40u)};
  const uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>((x + rounding) >> 16)};
}
GRADLAB_HD inline float bf16_to_float(BFloat16 b) { return f32_from_bits(static_cast<uint32_t>(b.bits) << 16); }

/// Storage type -> value type conversions used by copy/cast kernels.
template <class T>
struct Conv {
  GRADLAB_HD static double to_double(T v) { return static_cast<double>(v); }
  GRADLAB_HD static T from_double(double v) { return static_cast<T>(v); }
};
template <>
struct Conv<bool> {
  GRADLAB_HD static double to_double(bool v) { return v ? 1.0 : 0.0; }
  GRADLAB_HD static bool from_double(double v) { return v != 0.0; }
};
template <>
struct Conv<Half> {
  GRADLAB_HD static double to_double(Half v) { return half_to_float(v); }
  GRADLAB_HD static Half from_double(double v) { return half_from_float(static_cast<float>(v)); }
};
template <>
struct Conv<BFloat16> {
  GRADLAB_HD static double to_double(BFloat16 v) { return bf16_to_float(v); }
  GRADLAB_HD static BFloat16 from_double(double v) { return bf16_from_float(static_cast<float>(v)); }
};

/// Calls `f.template operator()<T>()` with T the storage type of `dt` (all six dtypes).
template <class F>
decltype(auto) visit_storage_dtype(ScalarType dt, F&& f) {
  switch (dt) {
    case kFloat32: return f.template operator()<float>();
    case kFloat64: return f.template operator()<double>();
    case kInt64: return f.template operator()<int64_t>();
    case kBool: return f.template operator()<bool>();
    case kFloat16: return f.template operator()<Half>();
    case kBFloat16: return f.template operator()<BFloat16>();
  }
  return f.template operator()<float>();
}

/// As visit_storage_dtype, but only the four compute dtypes; others throw DTypeError naming `op`.
template <class F>
decltype(auto) visit_dtype(ScalarType dt, const char* op, F&& f) {
  switch (dt) {
    case kFloat32: return f.template operator()<float>();
    case kFloat64: return f.template operator()<double>();
    case kInt64: return f.template operator()<int64_t>();
    case kBool: return f.template operator()<bool>();
    default:
      throw DTypeError(error_message(op, "dtype " + to_string(dt) + " has no CUDA compute kernel",
                                    "float32, float64, int64 or bool", to_string(dt),
                                    "convert with .to(kFloat32) first (half types are storage only)"));
  }
}

}  // namespace gradlab::gpu

namespace gradlab::gpu {

template <class T>
inline constexpr bool kHalfType = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// One element converted from storage type S to D, as static_cast does on the CPU (half types go
/// through float; a same-type copy is exact, int64 included).
template <class D, class S>
GRADLAB_HD inline D convert(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (kHalfType<S> || kHalfType<D>) {
    return Conv<D>::from_double(Conv<S>::to_double(s));
  } else {
    return static_cast<D>(s);
  }
}

}  // namespace gradlab::gpu

namespace gradlab::gpu {

/// *p += v, atomically on the GPU, so threads that hit the same element (scatter_add / index_add
/// with a repeated index) all land; a plain += under the host emulator (one thread at a time).
/// NOTE: float results then depend on the order the threads happen to run in (not bitwise
/// reproducible, and not the CPU's index order): compare them with a tolerance.
/// int64 goes through the unsigned long long overload: two's complement wraps the same way.
template <class T>
GRADLAB_HD inline void atomic_add(T* p, T v) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, int64_t>) {
    static_assert(sizeof(int64_t) == sizeof(unsigned long long));
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "atomic_add: float, double or int64");
    atomicAdd(p, v);  // double: sm_60 and newer
  }
#else
  *p += v;
#endif
}

}  // namespace gradlab::gpu
