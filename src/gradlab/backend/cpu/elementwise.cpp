// Elementwise kernels: the formulas of backend/math/elementwise.hpp run over contiguous data,
// in xsimd batches at the CPU's level where the op allows it (vec/vec.hpp: exp, tanh ...
// vectorized) and one element at a time otherwise. Strided operands are made contiguous
// first, except a broadcast single value (all strides 0), which is read once.

#include <algorithm>

#include "gradlab/backend/cpu/cpu.hpp"
#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/backend/cpu/vec/vec.hpp"
#include "gradlab/core/half.hpp"

namespace gradlab::cpu {

namespace {

// y[i] = f(x[i], p, q) for i in [0, n): whole batches through the level's kernels (vec/vec.hpp:
// SSE2, AVX2 or AVX-512, picked once by cpuid), the tail (and so every tensor smaller than a
// batch) one element at a time through libm, the functions the CUDA kernels and the host
// emulator call. NOTE: xsimd's exp, tanh, erf ... differ from libm by a few ulps (README's table),
// so body and tail elements of one tensor can differ by that much; small tensors match the
// emulator exactly. Callable on a sub-range: map_unary<F>(x + k, y + k, m, p, q).
template <class F, class T>
void map_unary(const T* x, T* y, int64_t n, T p, T q) {
  constexpr F f{};
  int64_t i = 0;
  if constexpr (math::vectorizable(F::kKind) && std::is_floating_point_v<T>)
    i = vec::unary(vec::kernels(), F::kOp, x, y, n, p, q);
  for (; i < n; ++i) y[i] = f(x[i], p, q);
}

// out[i] = f(a[i], b[i]); a broadcast single value (sa / sb: all strides 0) is read once. out
// may be a (in place). R = T, or bool for comparisons.
template <class F, class T, class R>
void map_binary(const T* a, bool sa, const T* b, bool sb, R* out, int64_t n) {
  constexpr F f{};
  if constexpr (math::vectorizable(F::kKind) && std::is_floating_point_v<T> && std::is_same_v<R, T>) {
    int64_t i = vec::binary(vec::kernels(), F::kOp, a, sa, b, sb, out, n);
    // The tail one element at a time: the vectorized binary formulas are single IEEE operations
    // and selects, which give the same bits in a batch and on a number; but GeluBackward calls erf
    // and exp, whose batch versions differ from libm's by ulps, as the unary ones do.
    for (; i < n; ++i) out[i] = f(a[sa ? 0 : i], b[sb ? 0 : i]);
  } else if (sb) {
    const T s = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(a[sa ? 0 : i], s));
  } else if (sa) {
    const T s = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(s, b[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(a[i], b[i]));
  }
}

[[noreturn]] void unsupported(const char* kernel, ScalarType dt, const char* expected, const char* hint = "") {
  throw DTypeError(error_message(kernel, "op not defined for this dtype", expected, to_string(dt), hint));
}

}  // namespace

Tensor unary(Unary op, const Tensor& x_in, double p0, double p1) {
  Tensor x = contiguous(x_in);
  const int64_t n = x.numel();
  if (op == Unary::IsFinite || op == Unary::LogicalNot) {
    Tensor y = make_tensor(x.sizes(), kBool);
    bool* py = ptr<bool>(y);
    if (op == Unary::LogicalNot) {
      GRADLAB_CHECK(x.dtype() == kBool, DTypeError, "logical_not", "needs a bool tensor", "bool",
                    to_string(x.dtype()));
      const bool* px = ptr<const bool>(x);
      parallel_elements(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = !px[i];
      });
    } else {
      visit_dtype(x.dtype(), "isfinite", [&]<class T>() {
        const T* px = ptr<const T>(x);
        parallel_elements(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) py[i] = math::isfinite(px[i]);
        });
      });
    }
    return y;
  }
  if (x.dtype() == kBool)
    throw DTypeError(error_message("unary kernel", "bool tensors have no arithmetic", "a number dtype", "bool"));
  if (!math::supported(op, x.dtype())) unsupported("unary kernel", x.dtype(), "float32 or float64");
  Tensor y = make_tensor(x.sizes(), x.dtype());
  visit_dtype(x.dtype(), "unary kernel", [&]<class T>() {
    math::visit_unary(op, [&]<class F>() {
      if constexpr (math::accepts<T>(F::kKind)) {
        const T* px = ptr<const T>(x);
        T* py = ptr<T>(y);
        const T q0 = math::param<T>(p0), q1 = math::param<T>(p1);
        parallel_elements(
            n, [&](int64_t b, int64_t e) { map_unary<F, T>(px + b, py + b, e - b, q0, q1); });
      }
    });
  });
  return y;
}

namespace {

// out = f(a, b) for same-shaped a, b (any strides) and a contiguous out of a's shape.
void binary_into(Binary op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!math::supported(op, a.dtype()))
    unsupported("binary kernel", a.dtype(), a.dtype() == kBool ? "float32, float64 or int64" : "bool",
                a.dtype() == kBool ? "convert with .to(kFloat32) first" : "");
  if (a.dtype() == kBool) {  // bool: + is or, * is and (as in PyTorch)
    if (op == Binary::Add) op = Binary::Or;
    if (op == Binary::Mul) op = Binary::And;
  }
  const int64_t n = out.numel();
  const bool sa = is_broadcast_scalar(a) && n > 1, sb = is_broadcast_scalar(b) && n > 1;
  Tensor ac = sa ? a : contiguous(a), bc = sb ? b : contiguous(b);
  visit_dtype(a.dtype(), "binary kernel", [&]<class T>() {
    const T* pa = ptr<const T>(ac);
    const T* pb = ptr<const T>(bc);
    // Chunk [b, e): a broadcast single value stays at its one element.
    auto chunks = [&]<class R>(R* po, auto&& map) {
      parallel_elements(n, [&](int64_t b, int64_t e) {
        map(pa + (sa ? 0 : b), pb + (sb ? 0 : b), po + b, e - b);
      });
    };
    math::visit_binary(op, [&]<class F>() {
      if constexpr (math::is_comparison(F::kOp))
        chunks(ptr<bool>(out), [&](const T* ca, const T* cb, bool* co, int64_t m) {
          map_binary<F, T, bool>(ca, sa, cb, sb, co, m);
        });
      else if constexpr (math::accepts<T>(F::kKind))
        chunks(ptr<T>(out), [&](const T* ca, const T* cb, T* co, int64_t m) {
          map_binary<F, T, T>(ca, sa, cb, sb, co, m);
        });
    });
  });
}

}  // namespace

Tensor binary(Binary op, const Tensor& a, const Tensor& b) {
  Tensor out = make_tensor(a.sizes(), is_comparison(op) ? kBool : a.dtype());
  binary_into(op, a, b, out);
  return out;
}

void binary_(Binary op, const Tensor& out, const Tensor& b) {
  GRADLAB_CHECK(!is_comparison(op), DTypeError, "binary kernel", "a comparison cannot run in place",
                "an arithmetic op", "a comparison");
  if (out.is_contiguous()) {
    binary_into(op, out, b, out);
  } else {
    Tensor r = binary(op, out, b);
    copy(out, r);
  }
}

// ---- copies ---------------------------------------------------------------------------------

namespace {

// for_each_row split over threads: element ranges of one flat row when every operand is
// contiguous (flat), else whole rows per chunk.
template <size_t K, class F>
void parallel_rows(const Shape& shape, const std::array<const Strides*, K>& st, bool flat, F&& f) {
  if (flat && !shape.empty()) {
    std::array<int64_t, K> ones;
    ones.fill(1);
    parallel_elements(numel_of(shape), [&](int64_t b, int64_t e) {
      std::array<int64_t, K> off;
      off.fill(b);
      f(off, e - b, ones);
    });
    return;
  }
  const int64_t n = shape.empty() ? 1 : std::max<int64_t>(shape.back(), 1);
  parallel_for(0, rows_of(shape), std::max<int64_t>(1, kGrain / n),
               [&](int64_t r0, int64_t r1) { for_each_row_in<K>(shape, st, r0, r1, f); });
}

// The storage-only dtypes: float16 / bfloat16 and uint8 (no compute kernels, but copies).
bool is_half(ScalarType t) { return t == kFloat16 || t == kBFloat16 || t == kUInt8; }

// float <-> float16 / bfloat16 over a contiguous row: the level's vector conversions, bit-exact
// with core/half.hpp's; returns how many elements it did (0: other pairs of types).
template <class D, class S>
int64_t convert_vec(D* d, const S* s, int64_t n) {
  static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);
  const vec::Kernels& k = vec::kernels();
  // NOTE: Half / BFloat16 are structs of one uint16_t: their arrays are arrays of uint16_t.
  if constexpr (std::is_same_v<S, float> && std::is_same_v<D, BFloat16>)
    return k.bf16_from_f32(s, reinterpret_cast<uint16_t*>(d), n);
  else if constexpr (std::is_same_v<S, BFloat16> && std::is_same_v<D, float>)
    return k.bf16_to_f32(reinterpret_cast<const uint16_t*>(s), d, n);
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, Half>)
    return k.f16_from_f32(s, reinterpret_cast<uint16_t*>(d), n);
  else if constexpr (std::is_same_v<S, Half> && std::is_same_v<D, float>)
    return k.f16_to_f32(reinterpret_cast<const uint16_t*>(s), d, n);
  else
    return 0;
}

// A copy where either side is float16/bfloat16 or uint8: with the bit-exact conversions the CUDA
// kernels use (core/half.hpp), float <-> half rows vectorized (convert_vec).
void copy_half(const Tensor& dst, const Tensor& src) {
  visit_storage_dtype(dst.dtype(), [&]<class D>() {
    visit_storage_dtype(src.dtype(), [&]<class S>() {
      D* d = ptr<D>(dst);
      const S* s = ptr<const S>(src);
      std::array<const Strides*, 2> st{&dst.strides(), &src.strides()};
      const bool flat = dst.is_contiguous() && src.is_contiguous();
      parallel_rows<2>(
          dst.sizes(), st, flat,
          [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& inner) {
            int64_t i = 0;
            if (inner[0] == 1 && inner[1] == 1) i = convert_vec(d + off[0], s + off[1], n);
            for (; i < n; ++i) d[off[0] + i * inner[0]] = convert<D, S>(s[off[1] + i * inner[1]]);
          });
    });
  });
}
}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  if (is_half(dst.dtype()) || is_half(src.dtype())) return copy_half(dst, src);
  visit_dtype(dst.dtype(), "copy", [&]<class D>() {
    visit_dtype(src.dtype(), "copy", [&]<class S>() {
      D* d = ptr<D>(dst);
      const S* s = ptr<const S>(src);
      std::array<const Strides*, 2> st{&dst.strides(), &src.strides()};
      const bool flat = dst.is_contiguous() && src.is_contiguous();
      parallel_rows<2>(
          dst.sizes(), st, flat,
          [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& inner) {
            D* dp = d + off[0];
            const S* sp = s + off[1];
            if (inner[0] == 1 && inner[1] == 1) {
              for (int64_t i = 0; i < n; ++i) dp[i] = convert<D, S>(sp[i]);
            } else {
              for (int64_t i = 0; i < n; ++i) dp[i * inner[0]] = convert<D, S>(sp[i * inner[1]]);
            }
          });
    });
  });
}

void fill(const Tensor& dst, const Scalar& v) {
  if (dst.dtype() == kUInt8) {  // through a one-element int64 tensor: the same wrap as copy
    Tensor one = make_tensor({}, kInt64);
    *ptr<int64_t>(one) = v.to_long();
    return copy_half(dst, one.expand(dst.sizes()));
  }
  if (is_half(dst.dtype())) {  // through a one-element float tensor: the same rounding as copy
    Tensor one = make_tensor({}, kFloat32);
    *ptr<float>(one) = static_cast<float>(v.to_double());
    return copy_half(dst, one.expand(dst.sizes()));
  }
  visit_dtype(dst.dtype(), "fill_", [&]<class T>() {
    const T value = std::is_floating_point_v<T> ? static_cast<T>(v.to_double()) : static_cast<T>(v.to_long());
    T* d = ptr<T>(dst);
    std::array<const Strides*, 1> st{&dst.strides()};
    parallel_rows<1>(
        dst.sizes(), st, dst.is_contiguous(),
        [&](const std::array<int64_t, 1>& off, int64_t n, const std::array<int64_t, 1>& inner) {
          for (int64_t i = 0; i < n; ++i) d[off[0] + i * inner[0]] = value;
        });
  });
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor y = make_tensor(x.sizes(), x.dtype());
  copy(y, x);
  return y;
}

Tensor cast(const Tensor& x, ScalarType dtype) {
  Tensor y = make_tensor(x.sizes(), dtype);
  copy(y, x);
  return y;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out = make_tensor(a.sizes(), a.dtype());
  Tensor c = contiguous(cond), ac = contiguous(a), bc = contiguous(b);
  const int64_t n = out.numel();
  // A plain loop: xsimd has no batch of bool that selects between float batches here.
  visit_dtype(a.dtype(), "where", [&]<class T>() {
    const bool* pc = ptr<const bool>(c);
    const T* pa = ptr<const T>(ac);
    const T* pb = ptr<const T>(bc);
    T* po = ptr<T>(out);
    parallel_elements(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) po[i] = pc[i] ? pa[i] : pb[i];
    });
  });
  return out;
}

}  // namespace gradlab::cpu
