#pragma once
// nn::utils, as torch::nn::utils: gradient clipping, parameters <-> one flat vector.

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

/// Every parameter flattened and concatenated, in order, into one 1-D tensor (as
/// torch.nn.utils.parameters_to_vector). Differentiable: it is cat of views, so a loss computed
/// from the vector sends its gradient back to the parameters. All parameters must be on one
/// device (DeviceError); an empty list is a ValueError, as torch.cat's.
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);

/// Copies consecutive slices of the 1-D `vec` into the parameters, in order (as
/// torch.nn.utils.vector_to_parameters): parameter i gets vec[offset_i : offset_i + numel_i]
/// viewed as its shape, cast to its dtype. The copy is in place under NoGradGuard, so the
/// parameters stay the same tensors (optimizers keep seeing them) and keep requires_grad.
/// NOTE: PyTorch assigns param.data = a view of vec, so there the parameters alias vec
/// afterwards; here they keep their own storage and changing vec later does not change them.
/// Checked before anything is copied: vec defined and 1-D, all parameters on one device, and
/// vec.numel() equal to their total number of elements (ShapeError naming both).
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace gradlab::nn::utils
