#pragma once
// CPU kernels. Internal to gradlab: no autograd here, no xtensor in this header. Kernels take
// tensors whose shapes the op layer has already checked and broadcast, and return new
// contiguous tensors (or write into `out`).

#include <utility>

#include "gradlab/core/tensor.hpp"

namespace gradlab::cpu {

enum class Unary {
  Neg, Exp, Log, Sqrt, Abs, Sin, Cos, Tanh, Sigmoid, Relu, Sign, Erf,
  LeakyRelu,  // p0 = negative slope
  Clamp,      // p0 = min, p1 = max (±inf for none); NaN stays NaN
  PowScalar,  // p0 = exponent
  IsFinite,   // -> bool
  LogicalNot  // bool -> bool
};
/// y = f(x) elementwise; float32/float64 (Neg, Abs, Sign, Clamp also int64).
Tensor unary(Unary op, const Tensor& x, double p0 = 0, double p1 = 0);

enum class Binary { Add, Sub, Mul, Div, Pow, Maximum, Minimum, Gt, Lt, Ge, Le, Eq, Ne, And, Or };
/// Comparisons and And/Or give bool.
bool is_comparison(Binary op);
/// c = f(a, b) elementwise; a and b have the same shape and dtype (any strides, stride 0 allowed).
Tensor binary(Binary op, const Tensor& a, const Tensor& b);
/// out = f(out, b) in place; b has out's shape (any strides) and dtype.
void binary_(Binary op, Tensor& out, const Tensor& b);

/// dst[i] = src[i] for same-shaped tensors, any strides, converting dtype.
void copy(const Tensor& dst, const Tensor& src);
/// dst[i] = v for every element of a (possibly strided) tensor.
void fill(const Tensor& dst, const Scalar& v);
/// A contiguous copy (same dtype), or `x` itself when already contiguous.
Tensor contiguous(const Tensor& x);
/// A contiguous copy converted to `dtype`.
Tensor cast(const Tensor& x, ScalarType dtype);

enum class Reduce { Sum, Max, Min, Prod };
/// Reduces `dims` (already wrapped, sorted, unique); keepdim keeps them as size 1.
Tensor reduce(Reduce op, const Tensor& x, const Dims& dims, bool keepdim);
/// (values, int64 indices) of the max or min along one dim; first index wins on ties.
std::pair<Tensor, Tensor> reduce_index(Reduce op, const Tensor& x, int64_t dim, bool keepdim);

/// c[b] = a[b] @ b[b]: a [B, M, K], b [B, K, N] -> [B, M, N] (float32/float64, via BLAS).
/// Row-major or transposed operands go to BLAS without a copy; a batch stride may be 0.
Tensor bmm(const Tensor& a, const Tensor& b);

/// out[..i..] = x[..index[..i..]..] along dim (index int64, same rank as x).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// out = self; out[..index[..i..]..] += src[..i..] along dim.
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// out = x restricted to positions `index` (1-D int64) along dim.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// out = self; out[.., index[i], ..] += src[.., i, ..] along dim.
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// out = cond ? a : b, all the same shape.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// Throws ShapeError naming `op` unless every index is in [0, size).
void check_indices(const Tensor& index, int64_t size, const char* op);

}  // namespace gradlab::cpu
