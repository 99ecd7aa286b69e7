#pragma once
// Activation checkpointing, as torch.utils.checkpoint.checkpoint (its reentrant form): forward
// runs `fn` with grad mode off, so none of its intermediate activations are kept; only the
// inputs are. backward runs `fn` again with grad mode on (same RNG state and autocast state as
// the first time, so dropout masks and dtypes repeat) and backpropagates through that fresh graph.
// Memory: the activations inside fn exist only while one checkpoint's backward runs. Compute: fn's
// forward runs twice.
//
//   Tensor h = gradlab::checkpoint([&](const TensorList& in) { return block->forward(in[0]); }, {x});
//
// Parameters that fn uses (captured module weights) get their gradients too: the recomputed graph
// reaches them and the inner backward adds into their .grad.
// NOTE: named gradlab::checkpoint (torch.utils.checkpoint.checkpoint); io::Checkpoint and
// io::save_checkpoint are the unrelated training-state files.
// NOTE: fn must be deterministic apart from the default generator (restored for the rerun) and
// must not modify its inputs in place; a modified input makes backward fail (version check).

#include <functional>

#include "gradlab/core/tensor.hpp"

namespace gradlab {

/// fn(inputs) without saving its activations; they are recomputed during backward.
Tensor checkpoint(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs,
                  Site site = Site::current());

}  // namespace gradlab
