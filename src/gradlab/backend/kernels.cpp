// Device dispatch: each kernel runs where its tensors live. On "cuda", the CUDA backend runs on
// the GPU (DeviceExec) or, when the host emulator is on, on the CPU (HostExec).

#include "gradlab/backend/kernels.hpp"

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"
#include "gradlab/backend/cuda/runtime.hpp"
#include "gradlab/core/dispatch.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::kern {

namespace {
// Calls f.template operator()<X>() with the executor that serves CUDA tensors now.
template <class F>
decltype(auto) on_cuda(F&& f) {
#if GRADLAB_HAVE_CUDA
  if (cuda_rt::backend() == cuda_rt::Backend::Device) return f.template operator()<gpu::DeviceExec>();
#endif
  GRADLAB_CHECK(cuda_rt::backend() == cuda_rt::Backend::Emulator, DeviceError, "kernel",
                "a CUDA tensor exists but no CUDA backend is active", "a GPU or the host emulator",
                "none", "do not switch the emulator off while CUDA tensors are alive");
  return f.template operator()<gpu::HostExec>();
}
}  // namespace

#define GRADLAB_ON(dev_tensor, FAMILY, CALL)                                      \
  do {                                                                            \
    if ((dev_tensor).is_cuda())                                                   \
      return on_cuda([&]<class X>() { return gpu::FAMILY<X>::CALL; });            \
    return cpu::CALL;                                                             \
  } while (0)

Tensor unary(Unary op, const Tensor& x, double p0, double p1) { GRADLAB_ON(x, Elementwise, unary(op, x, p0, p1)); }
Tensor binary(Binary op, const Tensor& a, const Tensor& b) { GRADLAB_ON(a, Elementwise, binary(op, a, b)); }
void binary_(Binary op, Tensor& out, const Tensor& b) { GRADLAB_ON(out, Elementwise, binary_(op, out, b)); }
void fill(const Tensor& dst, const Scalar& v) { GRADLAB_ON(dst, Elementwise, fill(dst, v)); }
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) { GRADLAB_ON(a, Elementwise, where(c, a, b)); }

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.device() == src.device()) GRADLAB_ON(dst, Elementwise, copy(dst, src));
  // Across devices: move src's elements, densely and in src's dtype, to dst's device; then a
  // same-device copy does the strides and the dtype conversion there.
  Tensor moved = make_tensor(src.sizes(), src.dtype(), dst.device());
  if (src.is_cuda()) {
    Tensor dense = contiguous(src);
    cuda_rt::copy_to_host(moved.impl()->data(), dense.impl()->data(), static_cast<size_t>(dense.numel()) * element_size(dense.dtype()), "copy (cuda -> cpu)");
  } else {
    Tensor dense = cpu::contiguous(src);
    cuda_rt::copy_from_host(moved.impl()->data(), dense.impl()->data(), static_cast<size_t>(dense.numel()) * element_size(dense.dtype()), "copy (cpu -> cuda)");
  }
  copy(dst, moved);
}

Tensor contiguous(const Tensor& x) {
  if (!x.is_cuda()) return cpu::contiguous(x);
  if (x.is_contiguous()) return x;
  Tensor out = make_tensor(x.sizes(), x.dtype(), x.device());
  copy(out, x);
  return out;
}

Tensor cast(const Tensor& x, ScalarType dtype) {
  if (!x.is_cuda()) return cpu::cast(x, dtype);
  Tensor out = make_tensor(x.sizes(), dtype, x.device());
  copy(out, x);
  return out;
}

Tensor reduce(Reduce op, const Tensor& x, const Dims& dims, bool keepdim) {
  GRADLAB_ON(x, Reductions, reduce(op, x, dims, keepdim));
}
std::pair<Tensor, Tensor> reduce_index(Reduce op, const Tensor& x, int64_t dim, bool keepdim) {
  GRADLAB_ON(x, Reductions, reduce_index(op, x, dim, keepdim));
}
Tensor sum_rows(const Tensor& x) { GRADLAB_ON(x, Reductions, sum_rows(x)); }

Tensor bmm(const Tensor& a, const Tensor& b) { GRADLAB_ON(a, Blas, bmm(a, b)); }
Tensor mm(const Tensor& a, const Tensor& b) {
  if (!a.is_cuda()) return cpu::mm(a, b);
  // [M, K] @ [K, N] as a batch of one (views, no copy)
  Tensor a3 = make_view(a, {1, a.size(0), a.size(1)}, {0, a.stride(0), a.stride(1)}, a.impl()->offset);
  Tensor b3 = make_view(b, {1, b.size(0), b.size(1)}, {0, b.stride(0), b.stride(1)}, b.impl()->offset);
  Tensor c = bmm(a3, b3);
  Tensor r = make_view(c, {a.size(0), b.size(1)}, {c.stride(1), c.stride(2)}, c.impl()->offset);
  // NOTE: c is private to this call: the result is a new tensor, not a view (an in-place op on a
  // view under autograd goes through CopySlices, which an op's output should not).
  r.impl()->view_base = nullptr;
  return r;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { GRADLAB_ON(x, Indexing, gather(x, dim, index)); }
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  GRADLAB_ON(self, Indexing, scatter_add(self, dim, index, src));
}
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  GRADLAB_ON(x, Indexing, index_select(x, dim, index));
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  GRADLAB_ON(self, Indexing, index_add(self, dim, index, src));
}
void check_indices(const Tensor& index, int64_t size, const char* op) {
  GRADLAB_ON(index, Indexing, check_indices(index, size, op));
}

Tensor im2col(const Tensor& x, const Window2d& w) { GRADLAB_ON(x, NN, im2col(x, w)); }
Tensor col2im(const Tensor& cols, int64_t C, int64_t H, int64_t W, const Window2d& w) {
  GRADLAB_ON(cols, NN, col2im(cols, C, H, W, w));
}
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const Window2d& w) { GRADLAB_ON(x, NN, max_pool2d(x, w)); }
void add_bias_rows_(Tensor& out, const Tensor& bias) { GRADLAB_ON(out, NN, add_bias_rows_(out, bias)); }
Tensor threshold_backward(const Tensor& grad, const Tensor& y, double threshold) {
  GRADLAB_ON(grad, NN, threshold_backward(grad, y, threshold));
}
CrossEntropyForward cross_entropy_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                                          double smoothing) {
  GRADLAB_ON(logits, NN, cross_entropy_forward(logits, target, ignore_index, smoothing));
}
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& lse, const Tensor& target, int64_t ignore_index,
                              double smoothing, const Tensor& row_scale) {
  GRADLAB_ON(logits, NN, cross_entropy_backward(logits, lse, target, ignore_index, smoothing, row_scale));
}

#undef GRADLAB_ON

// core's own functions (factories, to_vector) reach copy and fill through core/dispatch.hpp.
const bool kCoreKernelsRegistered = (dispatch::set_core_kernels({&copy, &fill}), true);

}  // namespace gradlab::kern

// ---- fused optimizer updates (CUDA only) ---------------------------------------------------------

namespace gradlab::kern {

namespace {
bool same_float_cuda(const Tensor& p, const Tensor& t) {
  return t.defined() && t.is_cuda() && t.device() == p.device() && t.dtype() == p.dtype() && t.sizes() == p.sizes();
}
}  // namespace

bool fused_step_supported(const Tensor& p, const Tensor& grad) {
  return p.defined() && p.is_cuda() && (p.dtype() == kFloat32 || p.dtype() == kFloat64) && same_float_cuda(p, grad);
}

bool sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, double lr, double momentum,
               double dampening, double weight_decay, bool nesterov, bool first_step) {
  if (!fused_step_supported(p, grad)) return false;
  if (momentum != 0 && !same_float_cuda(p, momentum_buf)) return false;
  on_cuda([&]<class X>() {
    gpu::Optim<X>::sgd_step_(p, grad, momentum_buf, lr, momentum, dampening, weight_decay, nesterov, first_step);
  });
  return true;
}

bool adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq, double lr,
                double beta1, double beta2, double eps, double weight_decay, double step, bool decoupled) {
  if (!fused_step_supported(p, grad) || !same_float_cuda(p, exp_avg) || !same_float_cuda(p, exp_avg_sq)) return false;
  on_cuda([&]<class X>() {
    gpu::Optim<X>::adam_step_(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled);
  });
  return true;
}

}  // namespace gradlab::kern
