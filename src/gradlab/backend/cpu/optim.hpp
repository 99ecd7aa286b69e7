#pragma once
// The fused optimizer updates on the CPU (internal; reached through kern::sgd_step_ /
// kern::adam_step_ / kern::rmsprop_step_ / kern::adagrad_step_): math/optim.hpp's lines in one pass
// over the parameter, vectorized at the capability level in use (vec/vec.hpp), split over the
// intra-op threads at multiples of kAlign. Every operation is one IEEE rounding, so the result is
// the composite update's, bit for bit, at every level and for any thread count
// (checks/optim/fused_step_test.cpp).

#include "gradlab/core/tensor.hpp"

namespace gradlab::cpu {
namespace vec {
struct Kernels;
}

/// Whether the fused CPU update takes t beside p: float32 / float64, contiguous, on the CPU, of
/// p's dtype and shape (p itself: pass it twice).
bool fused_step_operand(const Tensor& p, const Tensor& t);

/// SGD in place: p, and momentum_buf when momentum != 0 (read unless first_step). Every tensor
/// passes fused_step_operand. `level`: a level's table (the checks), nullptr: the one in use.
void sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, double lr, double momentum,
               double dampening, double weight_decay, bool nesterov, bool first_step,
               const vec::Kernels* level = nullptr);
/// Adam (decoupled = false) / AdamW (true) in place: p, exp_avg, exp_avg_sq; `step` is the
/// incremented step count.
void adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq, double lr,
                double beta1, double beta2, double eps, double weight_decay, double step, bool decoupled,
                const vec::Kernels* level = nullptr);
/// RMSprop in place: p, square_avg, grad_avg (read and written only when centered; else may be
/// undefined), momentum_buf (only when momentum > 0).
void rmsprop_step_(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                   const Tensor& momentum_buf, double lr, double alpha, double eps, double weight_decay,
                   double momentum, bool centered, const vec::Kernels* level = nullptr);
/// Adagrad in place: p, sum; `step` is the incremented step count.
void adagrad_step_(const Tensor& p, const Tensor& grad, const Tensor& sum, double lr, double lr_decay,
                   double weight_decay, double eps, double step, const vec::Kernels* level = nullptr);

}  // namespace gradlab::cpu
