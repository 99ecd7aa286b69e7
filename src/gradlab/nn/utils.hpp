#pragma once
// nn::utils: gradient clipping, as torch::nn::utils.

#include <vector>

#include "gradlab/core/tensor.hpp"

namespace gradlab::nn::utils {

/// The norm of all gradients together, as if concatenated into one vector (parameters without a
/// gradient are skipped; 0 when none has one). norm_type may be INFINITY (largest |g|).
double grad_norm(const std::vector<Tensor>& parameters, double norm_type = 2.0);

/// Scales every gradient by min(1, max_norm / (total_norm + 1e-6)) and returns total_norm (the
/// norm before clipping). error_if_nonfinite: a NaN or infinite total norm is a ValueError
/// instead of scaling every gradient by it.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

/// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace gradlab::nn::utils
