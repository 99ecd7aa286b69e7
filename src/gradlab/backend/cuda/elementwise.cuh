#pragma once
// Elementwise CUDA kernels: unary, binary (operands already broadcast by `expand`: stride 0),
// in-place binary, copy with dtype conversion, fill, where. The formulas are those of the CPU
// kernels (backend/math/elementwise.hpp), picked at run time inside one kernel per dtype.
// One thread per output element i; each operand's element offset comes from its Indexer, so any
// strides (transposed, sliced, expanded) work without a copy.

#include <limits>

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"

namespace gradlab::gpu::detail {

template <class T>
GRADLAB_HD inline bool finite_value(T x) {
  if constexpr (std::is_floating_point_v<T>) return math::isfinite(x);
  else return true;
}

template <class X, class T>
void unary_t(Unary op, const Tensor& x, const Tensor& y, double p0, double p1) {
  const Indexer ix = make_indexer(x, "unary kernel");
  const T* px = dptr<const T>(x);
  T* py = dptr<T>(y);
  const T p = math::param<T>(p0), q = math::param<T>(p1);
  X::for_each(y.numel(), [=] GRADLAB_HD(int64_t i) { py[i] = math::unary_value<T>(op, px[ix(i)], p, q); },
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
  X::for_each(out.numel(), [=] GRADLAB_HD(int64_t i) { po[io(i)] = math::binary_value<T, R>(op, pa[ia(i)], pb[ib(i)]); },
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
  GRADLAB_CHECK(math::supported(op, x.dtype()), DTypeError, "unary kernel",
                "op not defined for this dtype", "float32 or float64", to_string(x.dtype()));
  Tensor y = make_tensor(x.sizes(), x.dtype(), x.device());
  visit_dtype(x.dtype(), "unary kernel", [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) detail::unary_t<X, T>(op, x, y, p0, p1);
  });
  return y;
}

template <class X>
Tensor Elementwise<X>::binary(Binary op, const Tensor& a, const Tensor& b) {
  GRADLAB_CHECK(math::supported(op, a.dtype()), DTypeError, "binary kernel", "op not defined for this dtype", "float32, float64 or int64",
                to_string(a.dtype()), "convert with .to(kFloat32) first");
  const bool cmp = math::is_comparison(op);
  Tensor out = make_tensor(a.sizes(), cmp ? kBool : a.dtype(), a.device());
  visit_dtype(a.dtype(), "binary kernel", [&]<class T>() {
    if (cmp) detail::binary_t<X, T, bool>(op, a, b, out);
    else detail::binary_t<X, T, T>(op, a, b, out);
  });
  return out;
}

template <class X>
void Elementwise<X>::binary_(Binary op, const Tensor& out, const Tensor& b) {
  GRADLAB_CHECK(math::supported(op, out.dtype()) && !math::is_comparison(op), DTypeError,
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
