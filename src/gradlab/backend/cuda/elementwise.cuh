#pragma once
// Elementwise CUDA kernels: unary, binary (operands already broadcast by `expand`: stride 0),
// in-place binary, copy with dtype conversion, fill, where. CPU reference: cpu/elementwise.cpp.
// One thread per output element i; each operand's element offset comes from its Indexer, so any
// strides (transposed, sliced, expanded) work without a copy.

#include <limits>

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"

namespace gradlab::gpu::detail {

// y = f(x) for one element. p0/p1 as in cpu::unary (leaky slope, clamp bounds, exponent).
template <class T>
GRADLAB_HD inline T unary_value(Unary op, T x, double p0, double p1) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Unary::Neg: return -x;
      case Unary::Exp: return g_exp(x);
      case Unary::Log: return g_log(x);
      case Unary::Sqrt: return g_sqrt(x);
      case Unary::Abs: return g_fabs(x);
      case Unary::Sin: return g_sin(x);
      case Unary::Cos: return g_cos(x);
      case Unary::Tanh: return g_tanh(x);
      case Unary::Sigmoid: return T(1) / (T(1) + g_exp(-x));
      case Unary::Relu: return x < T(0) ? T(0) : x;  // NaN stays NaN
      case Unary::Sign: return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
      case Unary::Erf: return g_erf(x);
      case Unary::LeakyRelu: return x < T(0) ? x * T(p0) : x;
      case Unary::PowScalar: return p0 == 2.0 ? x * x : g_pow(x, T(p0));
      case Unary::Clamp: {
        const T lo = g_isfinite(p0) ? T(p0) : std::numeric_limits<T>::lowest();
        const T hi = g_isfinite(p1) ? T(p1) : std::numeric_limits<T>::max();
        return x < lo ? lo : (x > hi ? hi : x);
      }
      default: return x;
    }
  } else {  // int64: the ops unary_supported() lets through
    switch (op) {
      case Unary::Neg: return -x;
      case Unary::Abs: return x < 0 ? -x : x;
      case Unary::Sign: return x > 0 ? T(1) : (x < 0 ? T(-1) : T(0));
      case Unary::Clamp: {
        const T lo = g_isfinite(p0) ? static_cast<T>(p0) : std::numeric_limits<T>::lowest();
        const T hi = g_isfinite(p1) ? static_cast<T>(p1) : std::numeric_limits<T>::max();
        return x < lo ? lo : (x > hi ? hi : x);
      }
      default: return x;
    }
  }
}

template <class T>
GRADLAB_HD inline T binary_value(Binary op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case Binary::And: case Binary::Mul: return a && b;
      case Binary::Or: case Binary::Add: return a || b;
      default: return false;
    }
  } else {
    switch (op) {
      case Binary::Add: return a + b;
      case Binary::Sub: return a - b;
      case Binary::Mul: return a * b;
      case Binary::Div: return a / b;
      case Binary::Pow:
        if constexpr (std::is_floating_point_v<T>) return g_pow(a, b);
        else return static_cast<T>(g_pow(static_cast<double>(a), static_cast<double>(b)));
      // NaN propagates, as in PyTorch: pick a when a > b or a is NaN.
      case Binary::Maximum: return (a > b || g_isnan(a)) ? a : b;
      case Binary::Minimum: return (a < b || g_isnan(a)) ? a : b;
      default: return a;
    }
  }
}

template <class T>
GRADLAB_HD inline bool compare_value(Binary op, T a, T b) {
  switch (op) {
    case Binary::Gt: return a > b;
    case Binary::Lt: return a < b;
    case Binary::Ge: return a >= b;
    case Binary::Le: return a <= b;
    case Binary::Eq: return a == b;
    case Binary::Ne: return a != b;
    case Binary::And: return static_cast<bool>(a) && static_cast<bool>(b);
    case Binary::Or: return static_cast<bool>(a) || static_cast<bool>(b);
    default: return false;
  }
}

template <class T>
GRADLAB_HD inline bool finite_value(T x) {
  if constexpr (std::is_floating_point_v<T>) return g_isfinite(x);
  else return true;
}

// R = bool for comparisons (and the logical ops on bool), else R = T.
template <class T, class R>
GRADLAB_HD inline R binary_elem(Binary op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>)
    return (op == Binary::Eq || op == Binary::Ne) ? compare_value<T>(op, a, b) : binary_value<T>(op, a, b);
  else if constexpr (std::is_same_v<R, bool>) return compare_value<T>(op, a, b);
  else return binary_value<T>(op, a, b);
}

inline bool unary_supported(Unary op, ScalarType dt) {
  if (dt == kFloat32 || dt == kFloat64) return op != Unary::LogicalNot;
  if (dt == kInt64) return op == Unary::Neg || op == Unary::Abs || op == Unary::Sign || op == Unary::Clamp;
  return false;
}

inline bool binary_supported(Binary op, ScalarType dt) {
  if (dt == kBool)
    return op == Binary::And || op == Binary::Mul || op == Binary::Or || op == Binary::Add ||
           op == Binary::Eq || op == Binary::Ne;
  if (op == Binary::And || op == Binary::Or) return false;  // logical ops need bool
  return dt == kFloat32 || dt == kFloat64 || dt == kInt64;
}

template <class X, class T>
void unary_t(Unary op, const Tensor& x, const Tensor& y, double p0, double p1) {
  const Indexer ix = make_indexer(x, "unary kernel");
  const T* px = dptr<const T>(x);
  T* py = dptr<T>(y);
  X::for_each(y.numel(), [=] GRADLAB_HD(int64_t i) { py[i] = unary_value<T>(op, px[ix(i)], p0, p1); },
              "unary kernel");
}

template <class X, class T>
void isfinite_t(const Tensor& x, const Tensor& y) {
  const Indexer ix = make_indexer(x, "isfinite");
  const T* px = dptr<const T>(x);
  bool* py = dptr<bool>(y);
  X::for_each(y.numel(), [=] GRADLAB_HD(int64_t i) { py[i] = finite_value<T>(px[ix(i)]); }, "isfinite");
}

template <class X>
void logical_not(const Tensor& x, const Tensor& y) {
  const Indexer ix = make_indexer(x, "logical_not");
  const bool* px = dptr<const bool>(x);
  bool* py = dptr<bool>(y);
  X::for_each(y.numel(), [=] GRADLAB_HD(int64_t i) { py[i] = !px[ix(i)]; }, "logical_not");
}

// out[io(i)] = f(a[ia(i)], b[ib(i)]); R = T, or bool for comparisons.
template <class X, class T, class R>
void binary_t(Binary op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Indexer ia = make_indexer(a, "binary kernel"), ib = make_indexer(b, "binary kernel"),
                io = make_indexer(out, "binary kernel");
  const T* pa = dptr<const T>(a);
  const T* pb = dptr<const T>(b);
  R* po = dptr<R>(out);
  X::for_each(out.numel(), [=] GRADLAB_HD(int64_t i) { po[io(i)] = binary_elem<T, R>(op, pa[ia(i)], pb[ib(i)]); },
              "binary kernel");
}

template <class X, class D, class S>
void copy_t(const Tensor& dst, const Tensor& src) {
  const Indexer id = make_indexer(dst, "copy"), is = make_indexer(src, "copy");
  D* pd = dptr<D>(dst);
  const S* ps = dptr<const S>(src);
  X::for_each(dst.numel(), [=] GRADLAB_HD(int64_t i) { pd[id(i)] = convert<D, S>(ps[is(i)]); }, "copy");
}

template <class X, class T>
void fill_t(const Tensor& dst, T value) {
  const Indexer id = make_indexer(dst, "fill_");
  T* pd = dptr<T>(dst);
  X::for_each(dst.numel(), [=] GRADLAB_HD(int64_t i) { pd[id(i)] = value; }, "fill_");
}

template <class X, class T>
void where_t(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Indexer ic = make_indexer(cond, "where"), ia = make_indexer(a, "where"), ib = make_indexer(b, "where");
  const bool* pc = dptr<const bool>(cond);
  const T* pa = dptr<const T>(a);
  const T* pb = dptr<const T>(b);
  T* po = dptr<T>(out);
  X::for_each(out.numel(), [=] GRADLAB_HD(int64_t i) { po[i] = pc[ic(i)] ? pa[ia(i)] : pb[ib(i)]; }, "where");
}

}  // namespace gradlab::gpu::detail

namespace gradlab::gpu {

template <class X>
Tensor Elementwise<X>::unary(Unary op, const Tensor& x, double p0, double p1) {
  if (op == Unary::LogicalNot) {
    GRADLAB_CHECK(x.dtype() == kBool, DTypeError, "logical_not", "needs a bool tensor", "bool", to_string(x.dtype()));
    Tensor y = make_tensor(x.sizes(), kBool, x.device());
    detail::logical_not<X>(x, y);
    return y;
  }
  if (op == Unary::IsFinite) {
    Tensor y = make_tensor(x.sizes(), kBool, x.device());
    visit_dtype(x.dtype(), "isfinite", [&]<class T>() { detail::isfinite_t<X, T>(x, y); });
    return y;
  }
  GRADLAB_CHECK(detail::unary_supported(op, x.dtype()), DTypeError, "unary kernel",
                "op not defined for this dtype", "float32 or float64", to_string(x.dtype()));
  Tensor y = make_tensor(x.sizes(), x.dtype(), x.device());
  visit_dtype(x.dtype(), "unary kernel", [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) detail::unary_t<X, T>(op, x, y, p0, p1);
  });
  return y;
}

template <class X>
Tensor Elementwise<X>::binary(Binary op, const Tensor& a, const Tensor& b) {
  GRADLAB_CHECK(detail::binary_supported(op, a.dtype()), DTypeError, "binary kernel", "op not defined for this dtype", "float32, float64 or int64",
                to_string(a.dtype()), "convert with .to(kFloat32) first");
  const bool cmp = cpu::is_comparison(op);
  Tensor out = make_tensor(a.sizes(), cmp ? kBool : a.dtype(), a.device());
  visit_dtype(a.dtype(), "binary kernel", [&]<class T>() {
    if (cmp) detail::binary_t<X, T, bool>(op, a, b, out);
    else detail::binary_t<X, T, T>(op, a, b, out);
  });
  return out;
}

template <class X>
void Elementwise<X>::binary_(Binary op, Tensor& out, const Tensor& b) {
  GRADLAB_CHECK(detail::binary_supported(op, out.dtype()) && !cpu::is_comparison(op), DTypeError,
                "binary kernel", "op not defined in place for this dtype", "float32, float64 or int64",
                to_string(out.dtype()));
  visit_dtype(out.dtype(), "binary kernel", [&]<class T>() { detail::binary_t<X, T, T>(op, out, b, out); });
}

template <class X>
void Elementwise<X>::copy(const Tensor& dst, const Tensor& src) {
  visit_storage_dtype(dst.dtype(), [&]<class D>() {
    visit_storage_dtype(src.dtype(), [&]<class S>() { detail::copy_t<X, D, S>(dst, src); });
  });
}

template <class X>
void Elementwise<X>::fill(const Tensor& dst, const Scalar& v) {
  visit_storage_dtype(dst.dtype(), [&]<class T>() {
    if constexpr (kHalfType<T>) detail::fill_t<X, T>(dst, Conv<T>::from_double(v.to_double()));
    else if constexpr (std::is_floating_point_v<T>) detail::fill_t<X, T>(dst, static_cast<T>(v.to_double()));
    else detail::fill_t<X, T>(dst, static_cast<T>(v.to_long()));
  });
}

template <class X>
Tensor Elementwise<X>::where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out = make_tensor(a.sizes(), a.dtype(), a.device());
  visit_dtype(a.dtype(), "where", [&]<class T>() { detail::where_t<X, T>(cond, a, b, out); });
  return out;
}

}  // namespace gradlab::gpu
