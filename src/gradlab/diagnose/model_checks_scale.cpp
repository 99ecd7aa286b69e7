// Model checks about scale: the gradient across depth (vanishing / exploding) and the output's
// range against the targets (a loss floor set by the output activation). One forward (and
// backward) on a batch at init, read through forward hooks and the recorded graph.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/diagnose/internal.hpp"
#include "gradlab/diagnose/model_checks.hpp"
#include "gradlab/ops/internal/elementwise.hpp"
#include "gradlab/ops/internal/shape.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::diagnose {
using autograd::Node;
using detail::check_batch;
using detail::HookScope;
using detail::input_node;
using detail::is;
using detail::make;
using detail::num;
using detail::plural;

namespace {

constexpr Stage kModel = Stage::Model;
constexpr double kInf = std::numeric_limits<double>::infinity();

double norm_of(const Tensor& g) { return g.defined() ? norm(g.detach().to(kFloat64)).item<double>() : 0.0; }

bool has_trainable(const nn::Module& m) {
  for (const Tensor& p : m.parameters())
    if (p.requires_grad()) return true;
  return false;
}

}  // namespace

// ---- gradients across depth ----------------------------------------------------------------------

std::vector<LayerGradient> layer_gradients(const Model& model, const Loss& loss, const Tensor& inputs,
                                           const Tensor& targets) {
  check_batch("diagnose::layer_gradients", inputs);
  EnableGradGuard grad;
  // The first call of every leaf module with trainable parameters, in forward order.
  std::vector<std::pair<nn::Module*, Tensor>> calls;
  std::vector<LayerGradient> layers;
  Tensor l;
  {
    std::unordered_set<const nn::Module*> called;
    HookScope hooks(*model.module, [&](nn::Module& m, const Tensor& y) {
      if (detail::is_leaf_module(m) && has_trainable(m) && y.defined() && y.requires_grad() && called.insert(&m).second)
        calls.emplace_back(&m, y);
    });
    l = loss(model(inputs), targets);
    for (auto& [m, y] : calls) layers.push_back({hooks.name_of(m), m->name(), 0, 0});
  }
  if (calls.empty() || !l.requires_grad()) return {};
  // One backward for dL/dy of every layer and dL/dW of its parameters (nothing goes to .grad).
  TensorList wrt;
  std::vector<size_t> owner;  // wrt[k] belongs to layers[owner[k]]
  for (size_t i = 0; i < calls.size(); ++i) {
    wrt.push_back(calls[i].second);
    owner.push_back(i);
  }
  for (size_t i = 0; i < calls.size(); ++i)
    for (const Tensor& p : calls[i].first->parameters())
      if (p.requires_grad()) {
        wrt.push_back(p);
        owner.push_back(i);
      }
  const TensorList g = autograd::grad({l}, wrt, {}, std::nullopt, false, /*allow_unused=*/true);
  std::vector<double> param_sq(calls.size(), 0.0);
  for (size_t k = 0; k < wrt.size(); ++k) {
    const double n = norm_of(g[k]);
    if (k < calls.size()) layers[k].output_grad_norm = n;
    else param_sq[owner[k]] += n * n;
  }
  for (size_t i = 0; i < layers.size(); ++i) layers[i].param_grad_norm = std::sqrt(param_sq[i]);
  return layers;
}

Finding check_layer_gradients(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets,
                              const LayerGradientOptions& options) {
  GRADLAB_CHECK(options.warn_ratio >= 1 && options.fail_ratio >= options.warn_ratio, ValueError,
                "diagnose::check_layer_gradients", "the ratio thresholds must satisfy 1 <= warn_ratio <= fail_ratio",
                "1 <= warn_ratio <= fail_ratio", num(options.warn_ratio) + ", " + num(options.fail_ratio));
  const std::vector<LayerGradient> layers = layer_gradients(model, loss, inputs, targets);
  Finding f = make(kModel, "layer_gradients", Verdict::Ok, "");
  f.metrics["layers"] = static_cast<double>(layers.size());
  std::string table;
  std::vector<std::string> nonfinite;
  for (const LayerGradient& L : layers) {
    const std::string label = "'" + L.name + "' (" + L.type + ")";
    f.metrics["grad_" + L.name] = L.output_grad_norm;
    table += "\n  " + label + ": ||dL/dy|| " + num(L.output_grad_norm, 3) + ", ||dL/dW|| " + num(L.param_grad_norm, 3);
    if (!std::isfinite(L.output_grad_norm) || !std::isfinite(L.param_grad_norm)) nonfinite.push_back(label);
  }
  if (layers.size() < 2) {
    f.evidence = layers.empty() ? "no layer with trainable parameters gets a gradient: nothing to compare across depth"
                                : "one layer with trainable parameters: nothing to compare across depth" + table;
    return f;
  }
  const std::string head = "gradient reaching each layer's output, input to output (" +
                           plural(static_cast<int64_t>(layers.size()), "layer") + "):" + table;
  if (!nonfinite.empty()) {
    f.verdict = Verdict::Fail;
    f.evidence = plural(static_cast<int64_t>(nonfinite.size()), "layer") + " with a non-finite gradient at init, the first " +
                 nonfinite.front() + "\n" + head;
    f.hint = "the first backward already overflows: check the inputs for NaN/Inf and the init scale (see "
             "training/nonfinite_watch for the op)";
    return f;
  }
  const double first = layers.front().output_grad_norm, last = layers.back().output_grad_norm;
  if (last == 0) {
    f.evidence = "the last layer's output gets a zero gradient: the ratio across depth is undefined\n" + head;
    return f;
  }
  if (first == 0) {
    f.verdict = Verdict::Fail;
    f.metrics["ratio"] = 0;
    f.evidence = "vanishing gradients: no gradient at all reaches the first layer's output\n" + head;
    f.hint = "something between the first and the last layer stops the backward signal: dead ReLUs (see "
             "model/activations), saturated sigmoid/tanh units, or a detach()";
    return f;
  }
  // r = ||dL/dy_1|| / ||dL/dy_L||: each layer scales the backward signal by about ||W|| times the
  // activation's slope, so r is that product over the depth (r << 1 vanishing, r >> 1 exploding).
  const double r = first / last;
  f.metrics["ratio"] = r;
  const double spread = std::max(r, 1 / r);
  const bool vanishing = r < 1;
  f.evidence = "first / last layer's ||dL/dy|| = " + num(r, 3) + ": the gradient " +
               (vanishing ? "shrinks" : "grows") + " " + num(spread, 3) + "x toward the input\n" + head;
  if (spread <= options.warn_ratio) {
    f.evidence = "first / last layer's ||dL/dy|| = " + num(r, 3) + " (within " + num(options.warn_ratio) + "x either way)\n" + head;
    return f;
  }
  f.verdict = spread > options.fail_ratio ? Verdict::Fail : Verdict::Warn;
  f.evidence = (vanishing ? "vanishing gradients: " : "exploding gradients: ") + f.evidence;
  f.hint = vanishing ? "the backward signal shrinks layer by layer, so the first layers barely learn: use a ReLU-family "
                       "activation instead of sigmoid/tanh in deep stacks, the default or Kaiming init instead of a tiny "
                       "weight scale, normalization layers (BatchNorm, LayerNorm) or residual connections"
                     : "the backward signal grows layer by layer: the init scale is too large (use the default or Kaiming "
                       "init, scaled by fan-in), add normalization layers, clip the gradient norm (clip_grad_norm_)";
  return f;
}

// ---- loss floor from the output activation -------------------------------------------------------

namespace {

// What bounds the model's output: the activation op, its node and its range [lo, hi] (open
// ends are asymptotes, reached only in the limit: sigmoid's 0 and 1, tanh's ±1; relu reaches 0).
struct OutputBound {
  const Node* node = nullptr;
  std::string op;
  double lo = -kInf, hi = kInf;
  bool open = false;  // lo and hi are asymptotes
  std::string range() const {
    const std::string a = std::isinf(lo) ? "-inf" : num(lo), b = std::isinf(hi) ? "inf" : num(hi);
    return (open ? "(" : "[") + a + ", " + b + (open || std::isinf(hi) ? ")" : "]");
  }
};

// The node that made the output, looking through shape-only ops (view, reshape, squeeze).
const Node* producer_of(const Tensor& out) {
  const Node* n = out.grad_fn().get();
  while (n && (is<ops_detail::Reshape<ops_detail::ViewTag>>(n) || is<ops_detail::Reshape<ops_detail::ReshapeTag>>(n) ||
               is<ops_detail::Reshape<ops_detail::SqueezeTag>>(n) ||
               is<ops_detail::Reshape<ops_detail::UnsqueezeTag>>(n)))
    n = input_node(n, 0);
  return n;
}

OutputBound bound_of(const Node* n) {
  OutputBound b;
  b.node = n;
  if (is<ops_detail::Sigmoid>(n)) b = {n, "sigmoid", 0, 1, true};
  else if (is<ops_detail::Tanh>(n)) b = {n, "tanh", -1, 1, true};
  else if (is<ops_detail::Relu>(n)) b = {n, "relu", 0, kInf, false};
  else if (detail::is_softmax(n)) b = {n, "softmax", 0, 1, true};
  return b;
}

// softplus(z) = ln(1 + e^z), stable for large |z|.
double softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }

}  // namespace

Finding check_loss_floor(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets) {
  check_batch("diagnose::check_loss_floor", inputs);
  std::map<const Node*, std::string> module_of;  // the (deepest) module whose output a node is
  Tensor out;
  {
    EnableGradGuard grad;
    const Tensor x = inputs.is_floating_point() ? inputs.detach().requires_grad_(true) : inputs;
    HookScope* scope = nullptr;
    HookScope hooks(*model.module, [&](nn::Module& m, const Tensor& y) {
      if (!y.defined() || !y.grad_fn() || !scope) return;
      const std::string& name = scope->name_of(&m);
      if (!module_of.count(y.grad_fn().get()) || detail::is_leaf_module(m))
        module_of[y.grad_fn().get()] = (name.empty() ? std::string("the model") : "module '" + name + "'") + " (" + m.name() + ")";
    });
    scope = &hooks;
    out = model(x);
  }
  Finding f = make(kModel, "loss_floor", Verdict::Ok, "");
  const Node* producer = producer_of(out);
  if (!producer) {
    f.evidence = "the output has no recorded graph: its activation cannot be read";
    return f;
  }
  const OutputBound b = bound_of(producer);
  if (b.op.empty()) {
    f.evidence = loss.name + " receives the output of " + producer->name() + " (" + detail::user_site(producer, model.site) +
                 "): not bounded by an output activation";
    return f;
  }
  std::string who = detail::op_at(b.op, producer, model.site) + " (" + producer->name() + ")";
  if (auto it = module_of.find(producer); it != module_of.end()) who += ", the output of " + it->second;
  who += ", bounds the output to " + b.range();
  // Softmax / sigmoid into a loss that applies them itself is check_loss_pairing's failure.
  const bool paired = (b.op == "softmax" && loss.takes_class_indices()) ||
                      (b.op == "sigmoid" && loss.kind == Loss::Kind::BCEWithLogits);
  if (paired || loss.kind == Loss::Kind::NLL || loss.kind == Loss::Kind::Other) {
    f.evidence = who + "; " + (paired ? "see loss_pairing" : "no floor computed for " + loss.name);
    return f;
  }
  double floor = 0, chance = 0;
  std::string what, hint, chance_is;
  bool asymptotes = false;  // every target on an open end: floor 0, reached only in the limit
  if (loss.kind == Loss::Kind::CrossEntropy) {
    // Logits bounded to [lo, hi]: the best is the target's logit at hi, the others at lo:
    //   p = e^hi / (e^hi + (C - 1) e^lo)   ->   floor = -ln p = ln(1 + (C - 1) e^-(hi - lo)).
    const int64_t c = out.dim() >= 2 ? out.size(1) : out.size(0);
    floor = std::log1p(static_cast<double>(c - 1) * std::exp(-(b.hi - b.lo)));
    chance = std::log(static_cast<double>(c));
    chance_is = "ln " + std::to_string(c) + ", a uniform guess";
    what = std::isinf(b.hi - b.lo) ? "as logits of " + plural(c, "class") + " the range is unbounded above: no floor"
                                   : "as logits of " + plural(c, "class") + " the best cross-entropy is ln(1 + (C - 1) e^-" +
                                         num(b.hi - b.lo) + ") = " + num(floor);
    hint = "return the raw logits: remove the output " + b.op + " (CrossEntropyLoss needs unbounded logits)";
  } else {
    const std::vector<double> t = detail::values(targets);
    GRADLAB_CHECK(!t.empty(), ShapeError, "diagnose::check_loss_floor", "targets are empty", "one target or more", "0");
    const auto [mn, mx] = std::minmax_element(t.begin(), t.end());
    f.metrics["target_min"] = *mn;
    f.metrics["target_max"] = *mx;
    double sum = 0, sq = 0;
    int64_t on_ends = 0;
    for (double y : t) {
      sum += y;
      sq += y * y;
      if (b.open && (y == b.lo || y == b.hi)) ++on_ends;
    }
    const double n = static_cast<double>(t.size()), m = sum / n;
    const std::string span = "targets span [" + num(*mn) + ", " + num(*mx) + "]";
    if (loss.kind == Loss::Kind::MSE) {
      // floor = mean over elements of dist(y, [lo, hi])^2 (the output can at best sit on the edge).
      for (double y : t) floor += std::pow(y - std::clamp(y, b.lo, b.hi), 2) / n;
      chance = std::max(sq / n - m * m, 0.0);  // the loss of predicting the targets' mean
      if (chance == 0) chance = sq / n;
      chance_is = "always predicting the targets' mean";
      what = floor == 0 ? span + ": inside the range, MSE can reach 0"
                        : span + ": MSE cannot fall below " + num(floor) +
                              " (the mean squared distance of the targets to " + b.range() + ")";
      hint = b.op == "relu" ? "remove the output relu (a linear output for regression): it cannot go below 0, and "
                              "the targets do"
                            : "remove the output " + b.op + " (a linear output for regression), or scale the targets into " +
                                  b.range();
      asymptotes = floor == 0 && on_ends == static_cast<int64_t>(t.size());
      if (asymptotes) {
        what = span + ", every target on an asymptote of " + b.op + ": MSE reaches 0 only in the limit, and its "
               "gradient (times the activation's slope, ~0 there) vanishes on the way";
        hint = b.op == "tanh" ? "scale the targets inside (-1, 1), or drop the tanh and use a linear output"
                              : "for 0/1 targets drop the output " + b.op + " and use BCEWithLogitsLoss (binary, multi-label) "
                                "or CrossEntropyLoss on class indices (one-hot classes)";
      }
    } else {  // BCEWithLogits: the best logit logit(y), clamped into [lo, hi]; excess over H(y)
      for (double y : t) {
        const double z = y <= 0 ? -kInf : y >= 1 ? kInf : std::log(y / (1 - y));
        const double zc = std::clamp(z, b.lo, b.hi);
        const double best = (y > 0 && y < 1) ? -(y * std::log(y) + (1 - y) * std::log(1 - y)) : 0.0;
        const double at = std::isinf(zc) ? 0.0 : softplus(zc) - y * zc;
        floor += std::max(at - best, 0.0) / n;
      }
      chance = std::log(2.0);
      chance_is = "ln 2, logits at 0";
      what = floor == 0 ? span + ": the best logit of every target lies in " + b.range() + ", no floor"
                        : span + ": as logits in " + b.range() + " BCEWithLogitsLoss stays " + num(floor) +
                              " above its minimum (the best logit for each target, clamped into the range)";
      hint = "return the raw logits: remove the output " + b.op + " (BCEWithLogitsLoss applies the sigmoid itself)";
    }
  }
  const double rel = chance > 0 ? floor / chance : 0.0;
  f.metrics["floor"] = floor;
  f.metrics["relative_floor"] = rel;
  f.evidence = who + "; " + what;
  if (floor > 0) f.evidence += ", " + num(rel, 3) + "x the chance-level loss " + num(chance) + " (" + chance_is + ")";
  if (rel > 0.1) f.verdict = Verdict::Fail;
  else if (rel > 0.01 || asymptotes) f.verdict = Verdict::Warn;
  if (f.verdict != Verdict::Ok) f.hint = hint;
  return f;
}

}  // namespace gradlab::diagnose
