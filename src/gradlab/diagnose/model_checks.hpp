#pragma once
// Model checks: one forward and backward on a batch, before any training. Each returns one
// Finding of stage Model (activation_stats returns the raw numbers per layer).
//
//   auto f = diagnose::check_loss_pairing(model, loss, xb, yb);
//   // [fail] model/loss_pairing: softmax (DivBackward0, called at net.cpp:14 (in forward)), the
//   //        output of module '3' (Softmax) is fed to cross_entropy (...), which applies
//   //        log_softmax itself ...

#include <cstdint>
#include <string>
#include <vector>

#include "gradlab/core/shape.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/diagnose/finding.hpp"
#include "gradlab/diagnose/model.hpp"
#include "gradlab/optim/optimizer.hpp"

namespace gradlab::diagnose {

/// The model's output shape on `inputs` against `expected` (the whole shape, batch dim
/// included, e.g. {64, 10}): fail on any difference, naming both shapes.
Finding check_output_shape(const Model& model, const Tensor& inputs, const Shape& expected);

/// One forward + loss + backward: fail for trainable parameters the loss never reaches (their
/// .grad stays undefined: a layer left out of forward, a detach, a branch not taken), for
/// tensors that require grad and reach the loss without being parameters of the model
/// (unregistered), and — when `optimizer` is given — for trainable parameters the optimizer does
/// not hold. The gradients are cleared afterwards. metrics "unreached", "unregistered",
/// "not_in_optimizer".
Finding check_gradient_flow(const Model& model, const Loss& loss, const Tensor& inputs,
                            const Tensor& targets, const optim::Optimizer* optimizer = nullptr);

/// Statistics of one layer's output on a batch: a leaf module's (from a forward hook) or a
/// functional relu / tanh / sigmoid's (from its node in the recorded graph).
struct LayerStats {
  /// Dotted module name, e.g. "1"; for a functional activation its op and call site, e.g.
  /// "relu at net.cpp:14 (in forward), inside a module called at main.cpp:30 (in main)".
  std::string name;
  std::string type;  ///< module type, e.g. "ReLU" (a functional relu is a "ReLU" too)
  /// Measured from a graph node (gl::relu(x) in a forward), not from a module.
  bool functional = false;
  Shape shape;
  double mean = 0, std = 0;
  /// ReLU: the fraction of units (positions of one sample's output, e.g. the 128 features of a
  /// [B, 128] output) that are 0 for every sample of the batch.
  double dead_fraction = 0;
  /// Tanh / Sigmoid: elements within 1% of the asymptotes (|tanh| > 0.99, sigmoid < 0.01 or
  /// > 0.99), where the gradient has almost vanished.
  double saturated_fraction = 0;
  /// The output's values in 24 bins between their min and max (for Report::html).
  Histogram histogram;
};

/// The statistics of one layer output `y` (any shape; type "ReLU", "Tanh" and "Sigmoid" add
/// their dead / saturated fraction): the one place a LayerStats is computed.
LayerStats layer_stats(std::string name, std::string type, const Tensor& y);

/// Thresholds of check_activations.
struct ActivationOptions {
  double max_dead_fraction = 0.5;       ///< dead ReLU units above this: fail (warn above half)
  double max_saturated_fraction = 0.5;  ///< saturated tanh/sigmoid outputs above this: fail
};

/// One forward with the graph recorded: forward hooks on every leaf module record its output
/// statistics, and relu / tanh / sigmoid called as functions (gl::relu(fc1(x)) in a custom
/// forward) are read from their graph nodes (a module's own activation is counted once). In
/// forward order.
std::vector<LayerStats> activation_stats(const Model& model, const Tensor& inputs);
/// activation_stats judged: fail when a ReLU layer has more dead units or a tanh/sigmoid layer
/// more saturated outputs than allowed; metrics per layer ("dead_<name>", "saturated_<name>").
Finding check_activations(const Model& model, const Tensor& inputs, const ActivationOptions& options = {});
/// The same judgement of statistics already taken (activation_stats' result).
Finding check_activations(const std::vector<LayerStats>& layers, const ActivationOptions& options = {});

/// Batch independence: backpropagates sample i's output alone and checks that the gradient
/// reaches no other sample's input (a model must not mix the samples of a batch: a reshape or
/// transpose across the batch dim, a reduction over dim 0, ...). When samples mix and the model
/// has a BatchNorm in training mode, that is named as the legitimate cause (ok, not a bug) and
/// the check is repeated in eval mode, which must be independent (else fail). metrics "leak" (max |grad| on other
/// samples / max |grad| on sample i).
Finding check_batch_independence(const Model& model, const Tensor& inputs, int64_t sample = 0);

/// The loss on a batch at initialization against its expected value: ln C for C-class
/// cross-entropy or NLL (the uniform guess), E[y²] (the target variance, for centred targets)
/// for MSE with outputs near 0, ln 2 for BCE with logits. ok within [expected / 1.5, 1.5 ×
/// expected], warn up to a factor 3, fail beyond (overconfident init, unnormalized inputs, wrong
/// targets). metrics "loss", "expected".
Finding check_initial_loss(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets);

/// Activation/loss pairing, read from the recorded graph of one forward: softmax fed to
/// CrossEntropyLoss (fail: it applies log_softmax itself, the gradients nearly vanish),
/// log_softmax fed to CrossEntropyLoss (warn: harmless but redundant), sigmoid fed to
/// BCEWithLogitsLoss (fail), raw logits (no log_softmax) fed to NLLLoss (fail). Each finding
/// names the op (its graph node) and the call site recorded for it, and the module when one of
/// the model's modules is that activation.
Finding check_loss_pairing(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets);

/// Gradient scale per layer, from one backward at init.
struct LayerGradient {
  std::string name;  ///< dotted module name, e.g. "0"
  std::string type;  ///< module type, e.g. "Linear"
  /// ||dL/dy||: the gradient reaching the layer's output y (what backprop hands to the layer).
  double output_grad_norm = 0;
  /// ||dL/dW|| over the layer's own trainable parameters (0 when none got a gradient).
  double param_grad_norm = 0;
};

/// Thresholds of check_layer_gradients, on r = ||dL/dy|| of the first layer / ||dL/dy|| of the
/// last (symmetric: r or 1/r).
struct LayerGradientOptions {
  double warn_ratio = 1e2;  ///< r > warn_ratio or r < 1 / warn_ratio: warn
  double fail_ratio = 1e4;  ///< r > fail_ratio or r < 1 / fail_ratio: fail
};

/// The gradient ||dL/dy|| that reaches the output y of every leaf module with trainable
/// parameters (a layer), in forward order, from one forward + backward at init.
std::vector<LayerGradient> layer_gradients(const Model& model, const Loss& loss, const Tensor& inputs,
                                           const Tensor& targets);
/// Vanishing or exploding gradients across depth: the ratio of the first layer's ||dL/dy|| to
/// the last layer's (each layer scales the backward signal by about ||W|| times the activation's
/// slope, so a deep stack multiplies it up or down geometrically) judged by `options`, and fail
/// for a non-finite layer gradient. Measured at init (model stage): it is a property of the
/// architecture and the init, before any optimizer step can blur it. Evidence lists the norms per
/// layer; metrics "ratio", "layers", "grad_<name>".
Finding check_layer_gradients(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets,
                              const LayerGradientOptions& options = {});

/// A loss floor set by the output activation, read from the recorded graph (as check_loss_pairing):
/// a sigmoid / tanh / relu / softmax at the model's output bounds it, so the loss cannot reach
/// its minimum. MSE: floor = mean over target elements of dist(y, range)^2 (regression targets
/// 5..50 with a sigmoid output, negative targets with a relu output); targets on the asymptotes
/// (one-hot 0/1 with sigmoid or softmax, ±1 with tanh) are reached only in the limit, with a
/// vanishing gradient (warn). CrossEntropy on bounded logits [lo, hi]: floor
/// ln(1 + (C - 1) e^-(hi - lo)) (sigmoid: 1.46 for 10 classes). BCEWithLogits on bounded logits:
/// mean excess of the best logit in range over the unbounded best. The floor relative to a
/// chance-level loss (Var(y) for MSE, ln C, ln 2): > 0.1 fail, > 0.01 warn. metrics "floor",
/// "relative_floor" (when computable), "target_min", "target_max" (MSE).
Finding check_loss_floor(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets);

/// Options of check_model.
struct ModelCheckOptions {
  /// Expected output shape for the batch (empty: not checked).
  Shape expected_output{};
  ActivationOptions activations{};
  LayerGradientOptions layer_gradients{};
  /// Which sample check_batch_independence backpropagates.
  int64_t sample = 0;
};

/// Every model check on one batch, in this order: output shape (when expected_output is given),
/// loss pairing, loss floor, gradient flow, layer gradients, initial loss, activations, batch
/// independence. `layers`, when given, receives the activation statistics the activations check
/// judged (left empty when it did not run).
std::vector<Finding> check_model(const Model& model, const Loss& loss, const Tensor& inputs,
                                 const Tensor& targets, const optim::Optimizer* optimizer = nullptr,
                                 const ModelCheckOptions& options = {},
                                 std::vector<LayerStats>* layers = nullptr);

}  // namespace gradlab::diagnose
