#pragma once
// Fused optimizer updates: one kernel per parameter and step instead of the ~6-10 elementwise
// ops (each a kernel launch plus a temporary) of the composite update in optim/optimizers.cpp.
// One thread per element does the whole update in registers. The formulas are PyTorch's
// single-tensor SGD / Adam / AdamW, written once in backend/math/optim.hpp term by term as
// optimizers.cpp writes them with ops (every hyperparameter rounded to T, every product and sum
// in T, in the same order), so under the emulator they reproduce the composite's values; on a
// GPU, up to FMA contraction. The CPU runs the same lines (backend/cpu/optim.cpp, vectorized per
// capability level); the composite optimizer stays the reference for both (checks/cuda,
// checks/optim/fused_step_test.cpp).

#include "gradlab/backend/cuda/exec.hpp"
#include "gradlab/backend/cuda/gpu.hpp"
#include "gradlab/backend/math/optim.hpp"

namespace gradlab::gpu::detail {

template <class X, class T>
void sgd_step_t(const Tensor& p, const Tensor& grad, const Tensor& buf, double lr, double momentum,
                double dampening, double weight_decay, bool nesterov, bool first_step) {
  const char* op = "SGD (fused)";
  const math::SgdHyper<T> h =
      math::sgd_hyper<T>(lr, momentum, dampening, weight_decay, nesterov, first_step);
  const bool use_mom = h.use_mom;
  const Indexer ip = make_indexer(p, op), ig = make_indexer(grad, op);
  const Indexer ib = use_mom ? make_indexer(buf, op) : Indexer{};
  T* pp = dptr<T>(p);
  const T* pg = dptr<const T>(grad);
  T* pb = use_mom ? dptr<T>(buf) : nullptr;
  X::for_each(
      p.numel(),
      [=] GRADLAB_HD(int64_t i) {
        const int64_t po = ip(i);
        T pv = pp[po], b = T(0);
        const int64_t bo = use_mom ? ib(i) : 0;
        if (use_mom && !h.first_step) b = pb[bo];
        math::sgd_update(h, pv, pg[ig(i)], b);
        if (use_mom) pb[bo] = b;
        pp[po] = pv;
      },
      op);
}

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
  const math::AdamHyper<T> h =
      math::adam_hyper<T>(lr, beta1, beta2, eps, weight_decay, step, decoupled);
  X::for_each(
      p.numel(),
      [=] GRADLAB_HD(int64_t i) {
        const int64_t po = ip(i), mo = im(i), vo = iv(i);
        T pv = pp[po], m = pm[mo], v = pv2[vo];
        math::adam_update(h, pv, pg[ig(i)], m, v);
        pm[mo] = m;
        pv2[vo] = v;
        pp[po] = pv;
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
