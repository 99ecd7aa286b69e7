#pragma once
// The kernels the op layer calls (internal): each runs on the device of its (first) tensor
// argument, on the CPU reference (backend/cpu) or the CUDA backend (backend/cuda). Signatures and
// contracts are those of backend/cpu/cpu.hpp; the op layer has already checked that every tensor
// argument is on one device.

#include <utility>

#include "gradlab/backend/cpu/cpu.hpp"

namespace gradlab::kern {

using cpu::Binary;
using cpu::Conv2dGeom;
using cpu::CrossEntropyForward;
using cpu::is_comparison;
using cpu::Reduce;
using cpu::Unary;
using cpu::Window2d;

Tensor unary(Unary op, const Tensor& x, double p0 = 0, double p1 = 0);
Tensor binary(Binary op, const Tensor& a, const Tensor& b);
void binary_(Binary op, const Tensor& out, const Tensor& b);
/// dst[i] = src[i]; dst and src may be on different devices (and of any dtype, half included).
void copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, const Scalar& v);
Tensor contiguous(const Tensor& x);
/// A contiguous copy converted to `dtype` (float16/bfloat16 included).
Tensor cast(const Tensor& x, ScalarType dtype);
Tensor reduce(Reduce op, const Tensor& x, const Dims& dims, bool keepdim);
std::pair<Tensor, Tensor> reduce_index(Reduce op, const Tensor& x, int64_t dim, bool keepdim);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
void check_indices(const Tensor& index, int64_t size, const char* op);
Tensor im2col(const Tensor& x, const Window2d& w);
Tensor col2im(const Tensor& cols, int64_t C, int64_t H, int64_t W, const Window2d& w);
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Window2d& w);
// max_pool2d's backward in one pass (CPU only; CUDA takes scatter_add): dx [N, C, H, W].
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& idx, int64_t H, int64_t W);
// The fast convolution (backend/cpu/conv_gemm.cpp, conv_onednn.cpp): CPU float32 / float64
// only; the op layer sends every other case to the reference (unfold + matmul + fold).
Tensor conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeom& g);
Tensor conv2d_backward_input(const Tensor& dy, const Tensor& weight, const Tensor& bias,
                             const Conv2dGeom& g);
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& dy, const Conv2dGeom& g);
Tensor conv2d_backward_bias(const Tensor& dy);
/// dx, dW, db of conv2d from one dy (CPU): dx when weight is defined, dW when x is, db when
/// need_bias; each the bits of conv2d_backward_input / _weight / _bias. A half dy on the float32
/// fallback is widened once for the three.
struct Conv2dGrads {
  Tensor dx, dw, db;
};
Conv2dGrads conv2d_backward(const Tensor& x, const Tensor& weight, const Tensor& dy, const Conv2dGeom& g,
                            bool need_bias);
void add_bias_rows_(Tensor& out, const Tensor& bias);
Tensor threshold_backward(const Tensor& grad, const Tensor& y, double threshold);
Tensor sum_rows(const Tensor& x);
CrossEntropyForward cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                          int64_t ignore_index, double smoothing);
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& lse, const Tensor& target,
                              int64_t ignore_index, double smoothing, const Tensor& row_scale);

}  // namespace gradlab::kern

namespace gradlab::kern {

/// True when the fused optimizer kernels below take this parameter: a float32/float64 p with a
/// gradient of the same dtype, shape and device; on the CPU both contiguous (and the CPU switch
/// below on). Otherwise optim/optimizers.cpp runs its composite update (the reference).
bool fused_step_supported(const Tensor& p, const Tensor& grad);
/// Turns the fused update of CPU parameters on or off (on by default) and returns the previous
/// setting: off, every CPU parameter takes the composite update, the oracle the checks compare
/// the fused one to (checks/optim/fused_step_test.cpp, checks/cuda). CUDA parameters keep theirs.
bool set_cpu_fused_step(bool on);
/// Fused SGD update, in place (gpu::Optim::sgd_step_, cpu::sgd_step_); momentum_buf (same dtype,
/// shape and device; contiguous on the CPU) may be undefined when momentum == 0. Returns false, touching nothing, when
/// fused_step_supported is false: the caller then runs the composite update.
bool sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, double lr, double momentum,
               double dampening, double weight_decay, bool nesterov, bool first_step);
/// Fused Adam (decoupled = false) / AdamW (decoupled = true) update, in place; `step` is the
/// incremented step count. No amsgrad. Returns false, touching nothing, when not supported
/// (exp_avg / exp_avg_sq as momentum_buf above).
bool adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq, double lr,
                double beta1, double beta2, double eps, double weight_decay, double step, bool decoupled);
/// Fused RMSprop update (CPU only: a CUDA parameter gets false and keeps the composite ops),
/// in place: p, square_avg, grad_avg (used only when centered), momentum_buf (only when
/// momentum > 0). Returns false, touching nothing, when not supported.
bool rmsprop_step_(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                   const Tensor& momentum_buf, double lr, double alpha, double eps, double weight_decay,
                   double momentum, bool centered);
/// Fused Adagrad update (CPU only, as rmsprop_step_), in place: p, sum; `step` is the
/// incremented step count. Returns false, touching nothing, when not supported.
bool adagrad_step_(const Tensor& p, const Tensor& grad, const Tensor& sum, double lr, double lr_decay,
                   double weight_decay, double eps, double step);

}  // namespace gradlab::kern
