#pragma once
// Diagnostics for the "forgot to register" traps:
//  - parameters_not_updated(before, after): trainable parameters that an optimizer step left
//    unchanged (no gradient reached them, lr 0, frozen by mistake...);
//  - find_unregistered_tensors(loss, model): tensors that require grad and feed the loss but are
//    not parameters of the model, so no optimizer built from model->parameters() updates them.

#include <string>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// Copies of a model's parameters at one moment.
struct ParameterSnapshot {
  struct Entry {
    std::string name;
    Tensor value;    ///< a detached copy
    bool trainable;  ///< requires_grad at snapshot time
  };
  std::vector<Entry> entries;
};

/// Copies every named parameter of `model`.
ParameterSnapshot snapshot_parameters(const Module& model);

/// Names of the trainable parameters whose values are identical in both snapshots (in
/// registration order). A name present in only one snapshot is reported too.
std::vector<std::string> parameters_not_updated(const ParameterSnapshot& before,
                                                const ParameterSnapshot& after);
/// Same, comparing with the model's current values.
std::vector<std::string> parameters_not_updated(const ParameterSnapshot& before,
                                                const Module& after);

/// A leaf that requires grad and reaches the loss without being a parameter of the model.
struct UnregisteredTensor {
  Tensor tensor;        ///< the tensor itself (compare with your members to find it)
  std::string used_by;  ///< the backward node that consumes it, e.g. "MulBackward0"
  Site used_at;         ///< where the forward op that used it was called
  /// "[1] float32 tensor used by MulBackward0 (forward called at lessons/...:42 (in forward))".
  std::string describe() const;
};

/// Walks the graph of `loss` (before or after backward) and lists the leaves that require grad
/// but are not among model.parameters(), in the order they are first met from the loss.
std::vector<UnregisteredTensor> find_unregistered_tensors(const Tensor& loss, const Module& model);

}  // namespace gradlab::nn
