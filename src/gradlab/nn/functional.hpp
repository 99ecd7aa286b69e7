#pragma once
// nn::functional, where a LibTorch user looks for it (torch/nn/functional.h): losses
// (cross_entropy, nll_loss, mse_loss, ...), activations, linear, conv2d, max_pool2d, dropout, batch
// / layer norm, with their option structs (CrossEntropyFuncOptions, ...).
//
//   namespace F = gradlab::nn::functional;
//   Tensor loss = F::cross_entropy(logits, target,
//   F::CrossEntropyFuncOptions().label_smoothing(0.1));
//
// NOTE: the declarations themselves stay in ops/ops.hpp and ops/nn_ops.hpp for now: the op table
// (testing/, the same rank as nn/) tests them there, and the fused cross-entropy op struct uses
// their Reduction (docs: README "Layers point one way").

#include "gradlab/ops/nn_ops.hpp"
#include "gradlab/ops/ops.hpp"
