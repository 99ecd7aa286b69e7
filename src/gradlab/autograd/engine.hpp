#pragma once
// The backward engine: walks the graph from the roots in dependency order (a node runs once every
// node that feeds it a gradient has run) and adds into leaf .grad. autograd::grad returns the
// gradients instead of storing them.

#include <optional>

#include "gradlab/core/tensor.hpp"

namespace gradlab::autograd {

/// Backpropagates from `tensors` with `grad_tensors` (empty entries mean 1 for one-element
/// tensors). Gradients accumulate into leaves that require grad.
/// retain_graph defaults to create_graph; with create_graph the backward pass is recorded.
/// An error raised during the pass ends with "; backward called at <site>" (the caller's line).
void backward(const TensorList& tensors, const TensorList& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              Site site = {});

/// d(outputs)/d(inputs), contracted with `grad_outputs`; nothing is stored in .grad.
/// allow_unused=false makes an input that the outputs do not depend on an error. Errors end with
/// "; autograd::grad called at <site>".
TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, bool allow_unused = false, Site site = {});

}  // namespace gradlab::autograd
