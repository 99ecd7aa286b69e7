#pragma once
// The fused optimizer updates, each written once: PyTorch's single-tensor SGD / Adam / AdamW /
// RMSprop / Adagrad for one element, term by term as optim/optimizers.cpp writes them with ops (the composite path),
// so every product and sum is the composite's, in T, in the same order. Run by the CPU loops
// (backend/cpu/optim.cpp on numbers, vec/level.hpp on xsimd batches) and by the CUDA kernels and
// the host emulator (backend/cuda/optim.cuh), one element per thread.
//
// V is T (float, double) or an xsimd batch of T; sqrt on a batch is xsimd's (found by
// argument-dependent lookup), as in math/elementwise.hpp. Every operation is one IEEE-rounded
// +, *, / or sqrt, so a batch lane and a number give the same bits, as the composite does.
// NOTE: no fma, on purpose: the composite rounds each product (add_(x, alpha) is mul then add,
// two kernels). But compilers contract a * b + c to an fma where the target has one: GCC by
// default in C++ (-ffp-contract=fast; only ISO C modes turn it off), on numbers and on xsimd
// batches alike; clang within one expression (-ffp-contract=on). So the CPU loops that run these
// lines carry GRADLAB_NO_FP_CONTRACT (GCC, per function: what is inlined into them follows), and
// the bodies below turn clang's off. nvcc contracts by default, hence "up to FMA" on a GPU.
//
// The hyperparameters are rounded to T once, on the host (sgd_hyper / adam_hyper / ...): the composite
// wraps each Python-style scalar as a T tensor before multiplying.

#include <cmath>

#include "gradlab/backend/math/elementwise.hpp"  // sqrt on numbers, GRADLAB_HD

#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define GRADLAB_NO_FP_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define GRADLAB_NO_FP_CONTRACT
#endif
#if defined(__clang__) && !defined(__CUDA__)
#define GRADLAB_FP_CONTRACT_OFF_ _Pragma("clang fp contract(off)")
#else
#define GRADLAB_FP_CONTRACT_OFF_
#endif

namespace gradlab::math {

// d = g + wd p                       (weight_decay != 0)
// buf = d  (first step)  |  buf = momentum buf + (1 - dampening) d
// d = d + momentum buf (nesterov)  |  d = buf                      (momentum != 0)
// p = p - lr d
template <class T>
struct SgdHyper {
  T wd, mom, one_minus_damp, neg_lr;
  bool use_wd, use_mom, nesterov, first_step;
};

template <class T>
inline SgdHyper<T> sgd_hyper(double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                             bool first_step) {
  return {static_cast<T>(weight_decay), static_cast<T>(momentum), static_cast<T>(1.0 - dampening),
          static_cast<T>(-lr),          weight_decay != 0,          momentum != 0,
          nesterov,                     first_step};
}

/// One element (or batch) of the SGD update: p and buf in place (buf only when use_mom).
template <class V, class T>
GRADLAB_HD inline void sgd_update(const SgdHyper<T>& h, V& p, V g, V& buf) {
  GRADLAB_FP_CONTRACT_OFF_
  V d = g;
  if (h.use_wd) d = d + p * V(h.wd);
  if (h.use_mom) {
    buf = h.first_step ? d : buf * V(h.mom) + d * V(h.one_minus_damp);
    d = h.nesterov ? d + buf * V(h.mom) : buf;
  }
  p = p + d * V(h.neg_lr);
}

// g = g + wd p  (Adam, weight_decay != 0)   |   p = (1 - lr wd) p  (AdamW: decoupled)
// m = β1 m + (1 - β1) g,   v = β2 v + (1 - β2) g²
// p = p - (lr / (1 - β1^t)) m / (sqrt(v) / sqrt(1 - β2^t) + eps)
template <class T>
struct AdamHyper {
  T wd, decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step;
  bool coupled_wd, decoupled;
};

/// `step` is the incremented step count t. The bias corrections in double, as optimizers.cpp.
template <class T>
inline AdamHyper<T> adam_hyper(double lr, double beta1, double beta2, double eps, double weight_decay, double step,
                               bool decoupled) {
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  return {static_cast<T>(weight_decay),
          static_cast<T>(1.0 - lr * weight_decay),
          static_cast<T>(beta1),
          static_cast<T>(1.0 - beta1),
          static_cast<T>(beta2),
          static_cast<T>(1.0 - beta2),
          static_cast<T>(bias_correction2_sqrt),
          static_cast<T>(eps),
          static_cast<T>(-step_size),
          !decoupled && weight_decay != 0,
          decoupled};
}

/// One element (or batch) of the Adam / AdamW update: p, m (exp_avg), v (exp_avg_sq) in place.
template <class V, class T>
GRADLAB_HD inline void adam_update(const AdamHyper<T>& h, V& p, V g, V& m, V& v) {
  GRADLAB_FP_CONTRACT_OFF_
  if (h.coupled_wd) g = g + p * V(h.wd);
  if (h.decoupled) p = p * V(h.decay);
  m = m * V(h.b1) + g * V(h.one_minus_b1);
  v = v * V(h.b2) + (g * g) * V(h.one_minus_b2);
  const V denom = sqrt(v) / V(h.bc2_sqrt) + V(h.eps);
  p = p + (m / denom) * V(h.neg_step);
}

// g = g + wd p                                           (weight_decay != 0)
// s = α s + (1 - α) g²
// centered: a = α a + (1 - α) g;  d = sqrt(s - a a) + eps      else d = sqrt(s) + eps
// momentum > 0: buf = momentum buf + g / d;  p = p - lr buf       else p = p - lr (g / d)
// (maximize stays on the composite path, as for SGD / Adam: optimizers.cpp.)
template <class T>
struct RmspropHyper {
  T wd, alpha, one_minus_alpha, eps, mom, neg_lr;
  bool use_wd, centered, use_mom;
};

template <class T>
inline RmspropHyper<T> rmsprop_hyper(double lr, double alpha, double eps, double weight_decay, double momentum,
                                     bool centered) {
  return {static_cast<T>(weight_decay), static_cast<T>(alpha), static_cast<T>(1.0 - alpha),
          static_cast<T>(eps),          static_cast<T>(momentum), static_cast<T>(-lr),
          weight_decay != 0,            centered,                 momentum > 0};
}

/// One element (or batch) of the RMSprop update: p, s (square_avg), a (grad_avg, only when
/// centered), buf (momentum_buffer, only when use_mom) in place.
template <class V, class T>
GRADLAB_HD inline void rmsprop_update(const RmspropHyper<T>& h, V& p, V g, V& s, V& a, V& buf) {
  GRADLAB_FP_CONTRACT_OFF_
  if (h.use_wd) g = g + p * V(h.wd);
  s = s * V(h.alpha) + (g * g) * V(h.one_minus_alpha);
  V d;
  if (h.centered) {
    a = a * V(h.alpha) + g * V(h.one_minus_alpha);
    d = sqrt(s - a * a) + V(h.eps);
  } else {
    d = sqrt(s) + V(h.eps);
  }
  if (h.use_mom) {
    buf = buf * V(h.mom) + g / d;
    p = p + buf * V(h.neg_lr);
  } else {
    p = p + (g / d) * V(h.neg_lr);
  }
}

// g = g + wd p   (weight_decay != 0);   clr = lr / (1 + (t - 1) lr_decay)   (in double)
// sum = sum + g²;   p = p - clr g / (sqrt(sum) + eps)
// initial_accumulator_value is sum's starting value (optimizers.cpp fills the state).
template <class T>
struct AdagradHyper {
  T wd, eps, neg_clr;
  bool use_wd;
};

/// `step` is the incremented step count t; clr in double, as optimizers.cpp.
template <class T>
inline AdagradHyper<T> adagrad_hyper(double lr, double lr_decay, double weight_decay, double eps, double step) {
  const double clr = lr / (1.0 + (step - 1.0) * lr_decay);
  return {static_cast<T>(weight_decay), static_cast<T>(eps), static_cast<T>(-clr), weight_decay != 0};
}

/// One element (or batch) of the Adagrad update: p and sum in place.
template <class V, class T>
GRADLAB_HD inline void adagrad_update(const AdagradHyper<T>& h, V& p, V g, V& sum) {
  GRADLAB_FP_CONTRACT_OFF_
  if (h.use_wd) g = g + p * V(h.wd);
  sum = sum + g * g;
  p = p + (g / (sqrt(sum) + V(h.eps))) * V(h.neg_clr);
}

}  // namespace gradlab::math

#undef GRADLAB_FP_CONTRACT_OFF_
