#pragma once
// CPU kernels. Internal to gradlab: no autograd here, no xtensor in this header. Kernels take
// tensors whose shapes the op layer has already checked and broadcast, and return new
// contiguous tensors (or write into `out`).

#include <utility>

#include "gradlab/backend/math/elementwise.hpp"
#include "gradlab/backend/math/reduce.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::cpu {

// The elementwise ops and their formulas: backend/math/elementwise.hpp.
using math::Binary;
using math::Unary;
/// y = f(x) elementwise; p0, p1 are the op's parameters (math::param converts them per dtype).
/// float32/float64 (the N-kind ops also int64); IsFinite gives bool, LogicalNot takes bool.
Tensor unary(Unary op, const Tensor& x, double p0 = 0, double p1 = 0);

using math::is_comparison;  // comparisons and And/Or give bool
/// c = f(a, b) elementwise; a and b have the same shape and dtype (any strides, stride 0 allowed).
Tensor binary(Binary op, const Tensor& a, const Tensor& b);
/// out = f(out, b) in place; b has out's shape (any strides) and dtype.
void binary_(Binary op, const Tensor& out, const Tensor& b);

/// dst[i] = src[i] for same-shaped tensors, any strides, converting dtype.
void copy(const Tensor& dst, const Tensor& src);
/// dst[i] = v for every element of a (possibly strided) tensor.
void fill(const Tensor& dst, const Scalar& v);
/// A contiguous copy (same dtype), or `x` itself when already contiguous.
Tensor contiguous(const Tensor& x);
/// A contiguous copy converted to `dtype`.
Tensor cast(const Tensor& x, ScalarType dtype);

using math::Reduce;
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

/// A 2-D sliding window: kernel, stride, padding, dilation (height, width).
struct Window2d {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t out_h(int64_t H) const;
  int64_t out_w(int64_t W) const;
};
/// cols [N, C*kh*kw, oh*ow] from x [N, C, H, W], zero padded (PyTorch's unfold layout).
Tensor im2col(const Tensor& x, const Window2d& w);
/// The adjoint of im2col: x [N, C, H, W] where overlapping window entries add up (fold).
Tensor col2im(const Tensor& cols, int64_t C, int64_t H, int64_t W, const Window2d& w);
/// (values [N, C, oh, ow], int64 index into H*W of each window's max); padding never wins.
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Window2d& w);
/// The same through math::max_pool_window window by window: the oracle of max_pool2d's checks.
std::pair<Tensor, Tensor> max_pool2d_reference(const Tensor& x, const Window2d& w);
/// dx [N, C, H, W] = dy [N, C, oh, ow] added at idx (max_pool2d's indices), in output order.
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& idx, int64_t H, int64_t W);

/// One grouped convolution: x [N, C, H, W], weight [O, C / groups, kh, kw], y [N, O, oh, ow].
/// oh, ow are given, not derived from H, W: a transposed convolution with output_padding >=
/// stride runs conv2d_backward_input onto an x larger than the windows y counts reach.
struct Conv2dGeom {
  int64_t N = 0, C = 0, H = 0, W = 0, O = 0, oh = 0, ow = 0, groups = 1;
  Window2d win;
};
// The fast path of conv2d / conv_transpose2d (conv_gemm.cpp: per image, im2col into a cached
// workspace, then one BLAS GEMM per group; float32 through oneDNN where conv_onednn.hpp says).
// CPU, float32 / float64, contiguous results.
/// y = conv(x, weight) (+ bias[o] when defined).
Tensor conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeom& g);
/// dx = the adjoint of conv in x, applied to dy (+ bias[c] when defined): conv_transpose2d.
Tensor conv2d_backward_input(const Tensor& dy, const Tensor& weight, const Tensor& bias,
                             const Conv2dGeom& g);
/// dweight = Σ_n dy[n] ⊗ im2col(x[n]), summed over the batch in order n = 0, 1, ...
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Conv2dGeom& g);
/// The bias gradient db [O] = sum over n, y, x of dy [N, O, oh, ow] (float32 / float64).
Tensor conv2d_backward_bias(const Tensor& dy);
/// totals[o] += Σ_n (the float sum of dy[n, o, :, :]) in n order: conv2d_backward_bias's sums,
/// continued over a batch passed in consecutive chunks of images (the kernels' half fallback).
void conv2d_bias_sums(const Tensor& dy, double* totals);

/// c = a @ b for 2-D a [M, K], b [K, N] (any strides), through bmm.
Tensor mm(const Tensor& a, const Tensor& b);
/// out[i, :] += bias for a contiguous [M, N] out and bias [N].
void add_bias_rows_(Tensor& out, const Tensor& bias);
/// dx = y > threshold ? grad : 0 (same shapes; y converted to grad's dtype). float32, float64, and
/// bfloat16 grad and y (widened and rounded element by element: the float32 result's bits).
Tensor threshold_backward(const Tensor& grad, const Tensor& y, double threshold);
/// relu(x) of a bfloat16 x: widened, math::ReluFn, rounded, element by element (the float32 bits).
Tensor relu_bf16(const Tensor& x);
/// Σ over rows of x [M, N] -> [N].
Tensor sum_rows(const Tensor& x);
/// Per-row cross-entropy of logits [N, C] (contiguous copy taken) with int64 targets [N]:
/// loss_i = (1 - ε)(lse_i - x[i, t_i]) + ε (lse_i - mean_c x[i, c]), 0 where t_i == ignore_index.
struct CrossEntropyForward {
  Tensor loss;        ///< [N]
  Tensor lse;         ///< [N] logsumexp of each row
  int64_t valid = 0;  ///< rows whose target is not ignore_index (-1 from CUDA: see valid_count)
  /// CUDA only: valid as a 0-d tensor of the logits' dtype, and 1 / valid, left on the device so
  /// that the host never waits for the count; undefined from the CPU.
  Tensor valid_count, inv_valid;
};
/// Throws ShapeError for a target outside [0, C) that is not ignore_index.
CrossEntropyForward cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                          int64_t ignore_index, double smoothing);
/// d loss_i / d logits scaled by row_scale ([N], or 0-d for every row):
/// (softmax(x_i) - (1 - ε) onehot(t_i) - ε / C) * scale_i, zero rows where t_i == ignore_index.
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& lse, const Tensor& target,
                              int64_t ignore_index, double smoothing, const Tensor& row_scale);

}  // namespace gradlab::cpu
