// The fused optimizer updates on the CPU (cpu/optim.hpp): whole batches through the level's
// kernels (vec/level.hpp), the tail of each chunk here, one element at a time, through the same
// formula (math/optim.hpp) on numbers.

#include "gradlab/backend/cpu/optim.hpp"

#include "gradlab/backend/cpu/loops.hpp"
#include "gradlab/backend/cpu/parallel.hpp"
#include "gradlab/backend/cpu/vec/vec.hpp"

namespace gradlab::cpu {

bool fused_step_operand(const Tensor& p, const Tensor& t) {
  return t.defined() && !t.is_cuda() && (t.dtype() == kFloat32 || t.dtype() == kFloat64) &&
         t.dtype() == p.dtype() && t.sizes() == p.sizes() && t.is_contiguous();
}

namespace {

// The tail of a chunk, one element at a time (no fma: see math/optim.hpp; this matters where
// the baseline has one, e.g. aarch64).
template <class T>
GRADLAB_NO_FP_CONTRACT void sgd_tail(const math::SgdHyper<T>& h, T* pp, const T* pg, T* pb, int64_t i, int64_t e) {
  const bool read_buf = h.use_mom && !h.first_step;
  for (; i < e; ++i) {
    T pv = pp[i], bv = read_buf ? pb[i] : T(0);
    math::sgd_update(h, pv, pg[i], bv);
    if (pb) pb[i] = bv;
    pp[i] = pv;
  }
}

template <class T>
GRADLAB_NO_FP_CONTRACT void adam_tail(const math::AdamHyper<T>& h, T* pp, const T* pg, T* pm, T* pv2, int64_t i,
                                      int64_t e) {
  for (; i < e; ++i) {
    T pv = pp[i], m = pm[i], v = pv2[i];
    math::adam_update(h, pv, pg[i], m, v);
    pm[i] = m;
    pv2[i] = v;
    pp[i] = pv;
  }
}

template <class T>
GRADLAB_NO_FP_CONTRACT void rmsprop_tail(const math::RmspropHyper<T>& h, T* pp, const T* pg, T* ps, T* pa, T* pb,
                                         int64_t i, int64_t e) {
  for (; i < e; ++i) {
    T pv = pp[i], s = ps[i], a = h.centered ? pa[i] : T(0), b = h.use_mom ? pb[i] : T(0);
    math::rmsprop_update(h, pv, pg[i], s, a, b);
    ps[i] = s;
    if (h.centered) pa[i] = a;
    if (h.use_mom) pb[i] = b;
    pp[i] = pv;
  }
}

template <class T>
GRADLAB_NO_FP_CONTRACT void adagrad_tail(const math::AdagradHyper<T>& h, T* pp, const T* pg, T* ps, int64_t i,
                                         int64_t e) {
  for (; i < e; ++i) {
    T pv = pp[i], s = ps[i];
    math::adagrad_update(h, pv, pg[i], s);
    ps[i] = s;
    pp[i] = pv;
  }
}

template <class T>
void sgd_t(const Tensor& p, const Tensor& grad, const Tensor& buf, const math::SgdHyper<T>& h,
           const vec::Kernels& k) {
  T* pp = ptr<T>(p);
  const T* pg = ptr<const T>(grad);
  T* pb = h.use_mom ? ptr<T>(buf) : nullptr;
  // Chunks start at multiples of kAlign: each element takes the same path for any thread count
  // (and both paths give the same bits anyway).
  parallel_elements(p.numel(), [&](int64_t b, int64_t e) {
    const int64_t i = b + vec::sgd(k, h, pp + b, pg + b, pb ? pb + b : nullptr, e - b);
    sgd_tail(h, pp, pg, pb, i, e);
  });
}

template <class T>
void adam_t(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
            const math::AdamHyper<T>& h, const vec::Kernels& k) {
  T* pp = ptr<T>(p);
  const T* pg = ptr<const T>(grad);
  T* pm = ptr<T>(exp_avg);
  T* pv2 = ptr<T>(exp_avg_sq);
  parallel_elements(p.numel(), [&](int64_t b, int64_t e) {
    const int64_t i = b + vec::adam(k, h, pp + b, pg + b, pm + b, pv2 + b, e - b);
    adam_tail(h, pp, pg, pm, pv2, i, e);
  });
}

template <class T>
void rmsprop_t(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
               const Tensor& buf, const math::RmspropHyper<T>& h, const vec::Kernels& k) {
  T* pp = ptr<T>(p);
  const T* pg = ptr<const T>(grad);
  T* ps = ptr<T>(square_avg);
  T* pa = h.centered ? ptr<T>(grad_avg) : nullptr;
  T* pb = h.use_mom ? ptr<T>(buf) : nullptr;
  parallel_elements(p.numel(), [&](int64_t b, int64_t e) {
    const int64_t i =
        b + vec::rmsprop(k, h, pp + b, pg + b, ps + b, pa ? pa + b : nullptr, pb ? pb + b : nullptr, e - b);
    rmsprop_tail(h, pp, pg, ps, pa, pb, i, e);
  });
}

template <class T>
void adagrad_t(const Tensor& p, const Tensor& grad, const Tensor& sum, const math::AdagradHyper<T>& h,
               const vec::Kernels& k) {
  T* pp = ptr<T>(p);
  const T* pg = ptr<const T>(grad);
  T* ps = ptr<T>(sum);
  parallel_elements(p.numel(), [&](int64_t b, int64_t e) {
    const int64_t i = b + vec::adagrad(k, h, pp + b, pg + b, ps + b, e - b);
    adagrad_tail(h, pp, pg, ps, i, e);
  });
}

}  // namespace

void sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, double lr, double momentum,
               double dampening, double weight_decay, bool nesterov, bool first_step, const vec::Kernels* level) {
  const vec::Kernels& k = level ? *level : vec::kernels();
  if (p.dtype() == kFloat32)
    sgd_t<float>(p, grad, momentum_buf,
                 math::sgd_hyper<float>(lr, momentum, dampening, weight_decay, nesterov, first_step), k);
  else
    sgd_t<double>(p, grad, momentum_buf,
                  math::sgd_hyper<double>(lr, momentum, dampening, weight_decay, nesterov, first_step), k);
}

void adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq, double lr,
                double beta1, double beta2, double eps, double weight_decay, double step, bool decoupled,
                const vec::Kernels* level) {
  const vec::Kernels& k = level ? *level : vec::kernels();
  if (p.dtype() == kFloat32)
    adam_t<float>(p, grad, exp_avg, exp_avg_sq,
                  math::adam_hyper<float>(lr, beta1, beta2, eps, weight_decay, step, decoupled), k);
  else
    adam_t<double>(p, grad, exp_avg, exp_avg_sq,
                   math::adam_hyper<double>(lr, beta1, beta2, eps, weight_decay, step, decoupled), k);
}

void rmsprop_step_(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                   const Tensor& momentum_buf, double lr, double alpha, double eps, double weight_decay,
                   double momentum, bool centered, const vec::Kernels* level) {
  const vec::Kernels& k = level ? *level : vec::kernels();
  if (p.dtype() == kFloat32)
    rmsprop_t<float>(p, grad, square_avg, grad_avg, momentum_buf,
                     math::rmsprop_hyper<float>(lr, alpha, eps, weight_decay, momentum, centered), k);
  else
    rmsprop_t<double>(p, grad, square_avg, grad_avg, momentum_buf,
                      math::rmsprop_hyper<double>(lr, alpha, eps, weight_decay, momentum, centered), k);
}

void adagrad_step_(const Tensor& p, const Tensor& grad, const Tensor& sum, double lr, double lr_decay,
                   double weight_decay, double eps, double step, const vec::Kernels* level) {
  const vec::Kernels& k = level ? *level : vec::kernels();
  if (p.dtype() == kFloat32)
    adagrad_t<float>(p, grad, sum, math::adagrad_hyper<float>(lr, lr_decay, weight_decay, eps, step), k);
  else
    adagrad_t<double>(p, grad, sum, math::adagrad_hyper<double>(lr, lr_decay, weight_decay, eps, step), k);
}

}  // namespace gradlab::cpu
