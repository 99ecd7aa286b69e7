#pragma once
// float16 / bfloat16 storage: the 16-bit element types and their bit-exact conversions to and from
// float (round to nearest even), written once for the host and the device, so the CPU kernels and
// the CUDA kernels produce identical bits. Kernels never compute on half values directly: they
// widen them to float32 and round the result back (backend/kernels.cpp).

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gradlab/core/dtype.hpp"

/// Marks a function that runs on the host and, under nvcc, on the device too.
#if defined(__CUDACC__)
#define GRADLAB_HD __host__ __device__
#else
#define GRADLAB_HD
#endif

namespace gradlab {

/// IEEE binary16, as its 16 bits.
struct Half {
  uint16_t bits;
};
/// bfloat16 (the top 16 bits of a float32), as its 16 bits.
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
  const uint32_t m = h.bits & 0x3FFu;
  if (e == 0x1F) return f32_from_bits(sign | 0x7F800000u | (m << 13));  // inf / NaN
  if (e == 0) {
    // Zero or a subnormal half: m * 2^-24, exact in float (m < 2^10), without a normalizing
    // loop (up to 10 steps per value made subnormal-heavy float16 gradients slow to widen).
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // 2^-24
    return f32_from_bits(sign | f32_bits(v));
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

template <class T>
inline constexpr bool kHalfType = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// A float as int64, the same on every device: truncated toward zero; NaN gives 0, and values
/// past the range (±inf included) give the lowest / largest int64.
/// NOTE: a plain static_cast is undefined there. x86 returns INT64_MIN for all of them, a GPU
/// saturates; PyTorch inherits both, so one tensor converted on two devices differed.
GRADLAB_HD inline int64_t saturating_int64(double v) {
  constexpr double kTwo63 = 9223372036854775808.0;  // 2^63, exact in a double
  if (v != v) return 0;
  if (v >= kTwo63) return INT64_MAX;
  if (v <= -kTwo63) return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// One element converted from storage type S to D, as static_cast does (half types go through
/// float; a same-type copy is exact, int64 included), except float -> int64, which saturates
/// (saturating_int64).
template <class D, class S>
GRADLAB_HD inline D convert(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<D, int64_t> && !std::is_integral_v<S>) {
    return saturating_int64(Conv<S>::to_double(s));
  } else if constexpr (std::is_same_v<D, uint8_t> && !std::is_integral_v<S>) {
    // through int64 (saturating), then modulo 256 as PyTorch's x86 cast: 256.0 -> 0, -1.0 -> 255
    return static_cast<uint8_t>(saturating_int64(Conv<S>::to_double(s)));
  } else if constexpr (kHalfType<S> || kHalfType<D>) {
    return Conv<D>::from_double(Conv<S>::to_double(s));
  } else {
    return static_cast<D>(s);
  }
}

/// Calls `f.template operator()<T>()` with T the storage type of `dt` (all seven dtypes).
template <class F>
decltype(auto) visit_storage_dtype(ScalarType dt, F&& f) {
  switch (dt) {
    case kFloat32: return f.template operator()<float>();
    case kFloat64: return f.template operator()<double>();
    case kInt64: return f.template operator()<int64_t>();
    case kBool: return f.template operator()<bool>();
    case kFloat16: return f.template operator()<Half>();
    case kBFloat16: return f.template operator()<BFloat16>();
    case kUInt8: return f.template operator()<uint8_t>();
  }
  return f.template operator()<float>();
}

}  // namespace gradlab
