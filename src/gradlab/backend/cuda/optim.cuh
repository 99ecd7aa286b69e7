#pragma once
// Fused optimizer updates: one kernel per parameter and step instead of the ~6-10 elementwise
// ops (each a kernel launch plus a temporary) of the composite update in optim/optimizers.cpp.
// One thread per element does the whole update in registers. The formulas are PyTorch's
// single-tensor SGD / Adam / AdamW, written term by term as optimizers.cpp writes them with ops
// (every hyperparameter rounded to T, every product and sum in T, in the same order), so under
// the emulator they reproduce the composite's values; on a GPU, up to FMA contraction.
// No CPU reference kernel: the composite optimizer *is* the reference (checks/cuda).

#include <cmath>

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"

namespace gradlab::gpu::detail {

// d = g + wd p                       (weight_decay != 0)
// buf = d  (first step)  |  buf = momentum buf + (1 - dampening) d
// d = d + momentum buf (nesterov)  |  d = buf                      (momentum != 0)
// p = p - lr d
template <class X, class T>
void sgd_step_t(const Tensor& p, const Tensor& grad, const Tensor& buf, double lr, double momentum,
                double dampening, double weight_decay, bool nesterov, bool first_step) {
  const char* op = "SGD (fused)";
  const bool use_wd = weight_decay != 0, use_mom = momentum != 0;
  const Indexer ip = make_indexer(p, op), ig = make_indexer(grad, op);
  const Indexer ib = use_mom ? make_indexer(buf, op) : Indexer{};
  T* pp = dptr<T>(p);
  const T* pg = dptr<const T>(grad);
  T* pb = use_mom ? dptr<T>(buf) : nullptr;
  const T wd = static_cast<T>(weight_decay), mom = static_cast<T>(momentum),
          one_minus_damp = static_cast<T>(1.0 - dampening), neg_lr = static_cast<T>(-lr);
  X::for_each(
      p.numel(),
      [=] GRADLAB_HD(int64_t i) {
        const int64_t po = ip(i);
        const T pv = pp[po];
        T d = pg[ig(i)];
        if (use_wd) d = d + pv * wd;
        if (use_mom) {
          const int64_t bo = ib(i);
          const T b = first_step ? d : pb[bo] * mom + d * one_minus_damp;
          pb[bo] = b;
          d = nesterov ? d + b * mom : b;
        }
        pp[po] = pv + d * neg_lr;
      },
      op);
}

// g = g + wd p  (Adam, weight_decay != 0)   |   p = (1 - lr wd) p  (AdamW: decoupled)
// m = β1 m + (1 - β1) g,   v = β2 v + (1 - β2) g²
// p = p - (lr / (1 - β1^t)) m / (sqrt(v) / sqrt(1 - β2^t) + eps)
template <class X, class T>
void adam_step_t(const Tensor& p, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                 double weight_decay, double step, bool decoupled) {
  const char* op = decoupled ? "AdamW (fused)" : "Adam (fused)";
  const Indexer ip = make_indexer(p, op), ig = make_indexer(grad, op),
                im = make_indexer(exp_avg, op), iv = make_indexer(exp_avg_sq, op);
  T* pp = dptr<T>(p);
  const T* pg = dptr<const T>(grad);
  T* pm = dptr<T>(exp_avg);
  T* pv2 = dptr<T>(exp_avg_sq);
  // Host-side scalars in double, exactly as optimizers.cpp computes them.
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  const bool coupled_wd = !decoupled && weight_decay != 0;
  const T wd = static_cast<T>(weight_decay), decay = static_cast<T>(1.0 - lr * weight_decay),
          b1 = static_cast<T>(beta1), one_minus_b1 = static_cast<T>(1.0 - beta1),
          b2 = static_cast<T>(beta2), one_minus_b2 = static_cast<T>(1.0 - beta2),
          bc2_sqrt = static_cast<T>(bias_correction2_sqrt), eps_t = static_cast<T>(eps),
          neg_step = static_cast<T>(-step_size);
  X::for_each(
      p.numel(),
      [=] GRADLAB_HD(int64_t i) {
        const int64_t po = ip(i), mo = im(i), vo = iv(i);
        T pv = pp[po];
        T g = pg[ig(i)];
        if (coupled_wd) g = g + pv * wd;
        if (decoupled) pv = pv * decay;
        const T m = pm[mo] * b1 + g * one_minus_b1;
        const T v = pv2[vo] * b2 + (g * g) * one_minus_b2;
        pm[mo] = m;
        pv2[vo] = v;
        const T denom = math::sqrt(v) / bc2_sqrt + eps_t;
        pp[po] = pv + (m / denom) * neg_step;
      },
      op);
}

}  // namespace gradlab::gpu::detail

namespace gradlab::gpu {

template <class X>
void Optim<X>::sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, double lr,
                         double momentum, double dampening, double weight_decay, bool nesterov,
                         bool first_step) {
  if (p.dtype() == kFloat32)
    detail::sgd_step_t<X, float>(p, grad, momentum_buf, lr, momentum, dampening, weight_decay,
                                 nesterov, first_step);
  else
    detail::sgd_step_t<X, double>(p, grad, momentum_buf, lr, momentum, dampening, weight_decay,
                                  nesterov, first_step);
}

template <class X>
void Optim<X>::adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg,
                          const Tensor& exp_avg_sq, double lr, double beta1, double beta2,
                          double eps, double weight_decay, double step, bool decoupled) {
  if (p.dtype() == kFloat32)
    detail::adam_step_t<X, float>(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay,
                                  step, decoupled);
  else
    detail::adam_step_t<X, double>(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps,
                                   weight_decay, step, decoupled);
}

}  // namespace gradlab::gpu
