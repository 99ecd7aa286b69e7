// Model checks: one forward (and backward) on a batch, read through forward hooks and the
// recorded graph.

#include "gradlab/diagnose/model_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <string>
#include <unordered_set>
#include <vector>

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/error.hpp"
#include "gradlab/diagnose/internal.hpp"
#include "gradlab/nn/activation.hpp"
#include "gradlab/nn/diagnostics.hpp"
#include "gradlab/ops/internal/elementwise.hpp"
#include "gradlab/ops/internal/nn_ops.hpp"
#include "gradlab/ops/internal/reduce.hpp"
#include "gradlab/ops/internal/shape.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::diagnose {
using autograd::Node;
using detail::make;
using detail::num;
using detail::plural;

using detail::check_batch;

namespace {
constexpr Stage kModel = Stage::Model;
}  // namespace

// ---- graph patterns (shared through internal.hpp) ------------------------------------------------

namespace detail {

Node* input_node(const Node* n, size_t i) {
  if (!n || i >= n->next_edges().size()) return nullptr;
  Node* m = n->next_edges()[i].fn.get();
  while (is<ops_detail::Expand>(m) && !m->next_edges().empty()) m = m->next_edges()[0].fn.get();
  return m;
}

// softmax: DivBackward0(ExpBackward0, SumBackward1(same Exp)).
bool is_softmax(const Node* n) {
  return is<ops_detail::Div>(n) && is<ops_detail::Exp>(input_node(n, 0)) && is<ops_detail::Sum<false>>(input_node(n, 1)) &&
         input_node(input_node(n, 1), 0) == input_node(n, 0);
}
// log_softmax(x) = x - (log(sum(exp(x - m))) + m):
// SubBackward0(x, AddBackward0(LogBackward0(SumBackward1(ExpBackward0)), m detached)).
bool is_log_softmax(const Node* n) {
  const Node* add = input_node(n, 1);
  return is<ops_detail::Sub>(n) && is<ops_detail::Add>(add) && is<ops_detail::Log>(input_node(add, 0)) &&
         is<ops_detail::Sum<false>>(input_node(input_node(add, 0), 0)) &&
         is<ops_detail::Exp>(input_node(input_node(input_node(add, 0), 0), 0));
}

std::vector<Node*> reachable(const Tensor& root) {
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  if (root.grad_fn()) stack.push_back(root.grad_fn().get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!n || !seen.insert(n).second) continue;
    order.push_back(n);
    for (const auto& e : n->next_edges())
      if (e.fn) stack.push_back(e.fn.get());
  }
  return order;
}

std::string op_at(const std::string& op, const Node* n, const Site& given) {
  if (n->site.in_library()) return op + " " + user_site(n, given);
  std::string s = op + " at " + n->site.str();
  if (n->module_site.known() && n->module_site.str() != n->site.str())
    s += ", inside a module called at " + n->module_site.str();
  return s;
}

}  // namespace detail

using detail::HookScope;
using detail::input_node;
using detail::is;
using detail::is_leaf_module;
using detail::is_log_softmax;
using detail::is_softmax;
using detail::reachable;

// ---- output shape ------------------------------------------------------------------------------

Finding check_output_shape(const Model& model, const Tensor& inputs, const Shape& expected) {
  check_batch("diagnose::check_output_shape", inputs);
  NoGradGuard no_grad;
  const Tensor out = model(inputs);
  Finding f = make(kModel, "output_shape", Verdict::Ok, "");
  if (out.sizes() == expected) {
    f.evidence = "output " + shape_str(out.sizes()) + " for input " + shape_str(inputs.sizes()) + ", as expected";
    return f;
  }
  f.verdict = Verdict::Fail;
  f.evidence = "output " + shape_str(out.sizes()) + " for input " + shape_str(inputs.sizes()) + "; expected " +
               shape_str(expected);
  f.hint = out.numel() == [&] {
    int64_t n = 1;
    for (int64_t s : expected) n *= s;
    return n;
  }()
               ? "same number of elements, other layout: a missing flatten/reshape, or one that moves the batch dim"
               : "the last layer's width or a flatten is wrong: compare each layer's in/out sizes with the data";
  return f;
}

// ---- gradient flow -----------------------------------------------------------------------------

Finding check_gradient_flow(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets,
                            const optim::Optimizer* optimizer) {
  check_batch("diagnose::check_gradient_flow", inputs);
  nn::Module& m = *model.module;
  m.zero_grad();
  const Tensor out = model(inputs);
  const Tensor l = loss(out, targets);
  const std::vector<nn::UnregisteredTensor> unregistered = nn::find_unregistered_tensors(l, m);
  Finding f = make(kModel, "gradient_flow", Verdict::Ok, "");
  std::vector<std::string> unreached, missing;
  if (l.requires_grad()) l.backward();
  std::unordered_set<const void*> held;
  if (optimizer)
    for (const Tensor& p : optimizer->parameters()) held.insert(p.impl());
  int64_t trainable = 0;
  for (const auto& [name, p] : m.named_parameters()) {
    if (!p.requires_grad()) continue;
    ++trainable;
    if (!p.grad().defined()) unreached.push_back(name);
    if (optimizer && !held.count(p.impl())) missing.push_back(name);
  }
  m.zero_grad();
  f.metrics["trainable"] = static_cast<double>(trainable);
  f.metrics["unreached"] = static_cast<double>(unreached.size());
  f.metrics["unregistered"] = static_cast<double>(unregistered.size());
  f.metrics["not_in_optimizer"] = static_cast<double>(missing.size());
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 6; ++i) s += (i ? ", " : "") + v[i];
    return v.size() > 6 ? s + ", ..." : s;
  };
  std::vector<std::string> problems, hints;
  if (!unreached.empty()) {
    const bool one = unreached.size() == 1;
    problems.push_back(std::to_string(unreached.size()) + " of " + std::to_string(trainable) + " trainable " +
                       (trainable == 1 ? "parameter" : "parameters") + (one ? " gets" : " get") +
                       " no gradient from the loss: " + list(unreached));
    hints.push_back("a layer that forward never calls (left out), a detach(), or a branch not taken: make forward "
                    "use every registered layer, or remove the unused ones");
  }
  if (!unregistered.empty()) {
    const bool one = unregistered.size() == 1;
    problems.push_back(plural(static_cast<int64_t>(unregistered.size()), "tensor") +
                       (one ? " requires grad and reaches the loss without being a parameter"
                            : " require grad and reach the loss without being parameters") +
                       " of the model: " + unregistered.front().describe());
    hints.push_back("register them (register_parameter / register_module) so parameters() and the optimizer see them");
  }
  if (!missing.empty()) {
    problems.push_back(plural(static_cast<int64_t>(missing.size()), "trainable parameter") +
                       (missing.size() == 1 ? " is" : " are") + " not held by the optimizer (" +
                       optimizer->name() + "): " + list(missing));
    hints.push_back("build the optimizer from model->parameters() after the model is complete (and after .to())");
  }
  if (trainable == 0) {
    const int64_t total = static_cast<int64_t>(m.named_parameters().size());
    problems.push_back("the model has no trainable parameter (" + plural(total, "parameter") +
                       (total == 1 ? ", with" : ", all with") + " requires_grad false): nothing can learn");
    hints.push_back("a freeze left on (requires_grad_(false) or a loop that froze every layer): unfreeze the layers "
                    "to train before building the optimizer");
  }
  if (problems.empty()) {
    f.evidence = "every one of the " + std::to_string(trainable) + " trainable parameters gets a gradient" +
                 (optimizer ? " and is held by the optimizer" : "") + "; no unregistered tensor feeds the loss";
    return f;
  }
  f.verdict = Verdict::Fail;
  for (size_t i = 0; i < problems.size(); ++i) {
    f.evidence += (i ? "\n" : "") + problems[i];
    f.hint += (i ? "; " : "") + hints[i];
  }
  return f;
}

// ---- activations -------------------------------------------------------------------------------

// One layer's statistics from its output y [B, ...]: every LayerStats, a module's or a
// functional activation's, is built here. `type` says what is measured: "ReLU" dead units,
// "Tanh" / "Sigmoid" saturation; every layer gets a histogram of its output.
LayerStats layer_stats(std::string name, std::string type, const Tensor& y) {
  NoGradGuard no_grad;
  LayerStats s;
  s.name = std::move(name);
  s.type = std::move(type);
  s.shape = y.sizes();
  const Tensor yd = y.detach().to(kFloat64);
  s.mean = mean(yd).item<double>();
  s.std = y.numel() > 1 ? gradlab::std(yd, {}, 0).item<double>() : 0.0;
  if (s.type == "ReLU" && y.dim() >= 1 && y.size(0) > 0) {
    // A unit (one position of a sample) is dead on this batch when it is 0 for every sample.
    const Tensor alive = amax(yd.reshape({y.size(0), -1}), {0}) > 0;
    s.dead_fraction = 1.0 - mean(alive.to(kFloat64)).item<double>();
  } else if (s.type == "Tanh") {
    s.saturated_fraction = mean((abs(yd) > 0.99).to(kFloat64)).item<double>();
  } else if (s.type == "Sigmoid") {
    s.saturated_fraction = mean(logical_or(yd < 0.01, yd > 0.99).to(kFloat64)).item<double>();
  }
  s.histogram = make_histogram(detail::values(yd));
  return s;
}

namespace {

// A functional activation's node: its op name, the module type it matches, and its output
// (these ops save y for backward). type is null for other nodes.
struct GraphActivation {
  const char* op = nullptr;
  const char* type = nullptr;
  Tensor y;
};
GraphActivation graph_activation(const Node* n) {
  // NOTE: unpack() throws when y was modified in place after the op (then it is not measured).
  try {
    if (auto* r = dynamic_cast<const ops_detail::Relu*>(n)) return {"relu", "ReLU", r->y_.unpack()};
    if (auto* t = dynamic_cast<const ops_detail::Tanh*>(n)) return {"tanh", "Tanh", t->y_.unpack()};
    if (auto* g = dynamic_cast<const ops_detail::Sigmoid*>(n)) return {"sigmoid", "Sigmoid", g->y_.unpack()};
  } catch (const Error&) {
  }
  return {};
}

}  // namespace

std::vector<LayerStats> activation_stats(const Model& model, const Tensor& inputs) {
  check_batch("diagnose::activation_stats", inputs);
  // One forward with the graph recorded: leaf modules are read by forward hooks, and activations
  // called as functions (gl::relu(fc1(x)) in a forward) by their graph nodes. A module's own
  // activation (nn::ReLU) is a graph node too: its output's grad_fn marks it as seen. (A custom
  // leaf module ending in gl::relu is not an activation module: its relu is measured as well.)
  std::vector<std::pair<uint64_t, LayerStats>> layers;  // (creation order, stats)
  std::map<const Node*, std::string> by_module;          // output node -> module type
  EnableGradGuard grad;
  const Tensor x = inputs.is_floating_point() ? inputs.detach().requires_grad_(true) : inputs;
  Tensor out;
  {
    std::vector<std::pair<nn::Module*, Tensor>> seen;
    HookScope hooks(*model.module, [&](nn::Module& m, const Tensor& y) {
      if (is_leaf_module(m) && y.defined() && y.is_floating_point()) seen.emplace_back(&m, y);
    });
    out = model(x);
    uint64_t order = 0;
    for (auto& [m, y] : seen) {
      if (y.grad_fn()) {
        order = y.grad_fn()->sequence_nr();
        by_module[y.grad_fn().get()] = m->name();
      }
      layers.emplace_back(order, layer_stats(hooks.name_of(m), m->name(), y));
    }
  }
  for (const Node* n : reachable(out)) {
    const GraphActivation a = graph_activation(n);
    if (!a.type || !a.y.defined() || !a.y.is_floating_point()) continue;
    if (auto it = by_module.find(n); it != by_module.end() && it->second == a.type) continue;
    LayerStats s = layer_stats(detail::op_at(a.op, n, model.site), a.type, a.y);
    s.functional = true;
    layers.emplace_back(n->sequence_nr(), std::move(s));
  }
  std::stable_sort(layers.begin(), layers.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  std::vector<LayerStats> result;
  for (auto& [order, s] : layers) result.push_back(std::move(s));
  return result;
}

Finding check_activations(const Model& model, const Tensor& inputs, const ActivationOptions& options) {
  return check_activations(activation_stats(model, inputs), options);
}

Finding check_activations(const std::vector<LayerStats>& layers, const ActivationOptions& options) {
  Finding f = make(kModel, "activations", Verdict::Ok, "");
  std::vector<std::string> bad;
  for (const LayerStats& s : layers) {
    const std::string label = s.functional ? s.name : "'" + s.name + "' (" + s.type + ")";
    std::string line = label + " " + shape_str(s.shape) + ": mean " + num(s.mean, 3) + ", std " + num(s.std, 3);
    // One fraction per activation kind, judged alike: above max fail, above max / 2 warn.
    auto judge = [&](const char* key, double frac, double max, const char* shown, const char* why) {
      f.metrics[key + s.name] = frac;
      line += std::string(", ") + shown + " " + num(100 * frac, 3) + "%";
      if (frac > max) {
        f.verdict = Verdict::Fail;
        bad.push_back(label + ": " + num(100 * frac, 3) + "% " + why);
      } else if (frac > max / 2) {
        f.verdict = std::max(f.verdict, Verdict::Warn);
      }
    };
    if (s.type == "ReLU")
      judge("dead_", s.dead_fraction, options.max_dead_fraction, "dead units",
            "of its units are 0 for every sample (dead ReLU)");
    else if (s.type == "Tanh" || s.type == "Sigmoid")
      judge("saturated_", s.saturated_fraction, options.max_saturated_fraction, "saturated",
            "of its outputs are saturated (gradient ~0)");
    f.evidence += (f.evidence.empty() ? "" : "\n") + line;
  }
  if (layers.empty())
    f.evidence = "no module forward and no relu / tanh / sigmoid was seen (hooks need holders or Sequential: fc(x), "
                 "not fc->forward(x))";
  if (!bad.empty()) {
    std::string head;
    for (const auto& b : bad) head += b + "\n";
    f.evidence = head + f.evidence;
    // NOTE: no LR advice: this runs before any step, so the LR has not touched the weights yet
    f.hint = "pre-activations are too large or too shifted: normalize the inputs, use the default (Kaiming) init or a "
             "smaller weight scale, check biases; for ReLU a LeakyReLU keeps a gradient where it is negative";
  } else if (f.verdict == Verdict::Warn) {
    f.hint = "many dead or saturated units: check the input scale and the init";
  }
  return f;
}

// ---- batch independence --------------------------------------------------------------------------

namespace {

// max |grad| over samples j != i relative to max |grad| of sample i.
double batch_leak(const Model& model, const Tensor& inputs, int64_t i) {
  Tensor x = inputs.detach().clone().requires_grad_(true);
  const Tensor out = model(x);
  const Tensor gi = autograd::grad({out.select(0, i).sum()}, {x}, {}, std::nullopt, false, /*allow_unused=*/true)[0];
  if (!gi.defined()) return 0.0;
  const Tensor g = abs(gi.detach().to(kFloat64)).reshape({x.size(0), -1});
  const double own = amax(g.select(0, i)).item<double>();
  Tensor others = g.clone();
  others.select(0, i).zero_();
  const double leak = amax(others).item<double>();
  return own > 0 ? leak / own : leak;
}

}  // namespace

Finding check_batch_independence(const Model& model, const Tensor& inputs, int64_t sample) {
  check_batch("diagnose::check_batch_independence", inputs);
  GRADLAB_CHECK(inputs.size(0) >= 2, ShapeError, "diagnose::check_batch_independence", "needs two samples or more",
                "a batch of >= 2", shape_str(inputs.sizes()));
  GRADLAB_CHECK(sample >= 0 && sample < inputs.size(0), ValueError, "diagnose::check_batch_independence",
                "sample is outside the batch", "0 <= sample < " + std::to_string(inputs.size(0)), std::to_string(sample));
  GRADLAB_CHECK(inputs.is_floating_point(), DTypeError, "diagnose::check_batch_independence",
                "inputs must be floating point (the gradient with respect to them is measured)", "a float dtype",
                to_string(inputs.dtype()), "index inputs (embeddings) cannot be checked this way");
  constexpr double kTol = 1e-6;  // relative: independent models give exact zeros
  Finding f = make(kModel, "batch_independence", Verdict::Ok, "");
  const double leak = batch_leak(model, inputs, sample);
  f.metrics["leak"] = leak;
  const std::string what = "d output[" + std::to_string(sample) + "] / d input[j != " + std::to_string(sample) + "]";
  if (!std::isfinite(leak)) {  // NaN/Inf in the input gradient: no mixing can be read from it
    f.verdict = Verdict::Fail;
    f.evidence = what + " is " + num(leak) + ": the backward of one forward at init is not finite, so batch "
                 "independence cannot be judged";
    f.hint = "an op outside its domain in forward (sqrt or log at 0, a division by 0): its derivative is infinite "
             "there; run watch_nonfinite (anomaly mode) to name it, or add an eps";
    return f;
  }
  if (leak <= kTol) {
    f.evidence = what + " is 0: the samples of a batch do not mix";
    return f;
  }
  // BatchNorm in training mode mixes samples through the batch statistics, by design.
  std::vector<std::string> bn;
  for (auto& [name, m] : model.module->named_modules())
    if (m->name().rfind("BatchNorm", 0) == 0 && m->is_training()) bn.push_back("'" + name + "' (" + m->name() + ")");
  if (bn.empty() && model.module->name().rfind("BatchNorm", 0) == 0 && model.module->is_training()) bn.push_back("the model");
  if (bn.empty()) {
    f.verdict = Verdict::Fail;
    f.evidence = what + " reaches " + num(leak, 3) + " of the sample's own gradient: the samples mix";
    f.hint = "something in forward combines samples: a reshape/view/transpose that moves the batch dim, a reduction "
             "over dim 0 (mean, softmax(dim=0)), a concatenation along the batch";
    return f;
  }
  // Repeat in eval mode (running statistics): then the model must be independent.
  std::vector<std::pair<nn::Module*, bool>> modes{{model.module.get(), model.module->is_training()}};
  for (auto& [name, m] : model.module->named_modules()) modes.emplace_back(m.get(), m->is_training());
  model.module->eval();
  double eval_leak = 0;
  try {
    eval_leak = batch_leak(model, inputs, sample);
  } catch (...) {
    for (auto& [m, on] : modes) m->train(on);
    throw;
  }
  for (auto& [m, on] : modes) m->train(on);  // parents first: each module ends with its own mode
  f.metrics["leak_eval"] = eval_leak;
  std::string names;
  for (const auto& b : bn) names += (names.empty() ? "" : ", ") + b;
  if (eval_leak <= kTol) {
    f.evidence = what + " is " + num(leak, 3) + " in train mode, through BatchNorm " + names +
                 " (batch statistics: legitimate); 0 in eval mode";
    return f;
  }
  f.verdict = Verdict::Fail;
  f.evidence = what + " is " + num(eval_leak, 3) + " even in eval mode (BatchNorm " + names +
               " uses running statistics there): something else mixes the samples";
  f.hint = "a reshape/view/transpose across the batch dim, or a reduction over dim 0, in forward";
  return f;
}

// ---- loss at init ------------------------------------------------------------------------------

Finding check_initial_loss(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets) {
  check_batch("diagnose::check_initial_loss", inputs);
  NoGradGuard no_grad;
  const Tensor out = model(inputs);
  const double l = loss(out, targets).item<double>();
  Finding f = make(kModel, "initial_loss", Verdict::Ok, "");
  f.metrics["loss"] = l;
  double expected = 0;
  std::string why;
  switch (loss.kind) {
    case Loss::Kind::CrossEntropy:
    case Loss::Kind::NLL: {
      const int64_t c = out.dim() >= 2 ? out.size(1) : out.size(0);
      expected = std::log(static_cast<double>(c));
      why = "ln " + std::to_string(c) + " (a uniform guess over " + std::to_string(c) + " classes)";
      break;
    }
    case Loss::Kind::BCEWithLogits:
      expected = std::numbers::ln2;
      why = "ln 2 (logits near 0)";
      break;
    case Loss::Kind::MSE: {
      const Tensor y = targets.detach().to(kFloat64);
      expected = mean(y * y).item<double>();
      why = "E[y^2] = Var(y) + mean(y)^2 (outputs near 0)";
      break;
    }
    case Loss::Kind::Other:
      f.evidence = "loss at init " + num(l) + " (" + loss.name + ": no expected value known)";
      return f;
  }
  f.metrics["expected"] = expected;
  const double ratio = expected > 0 ? l / expected : (l == 0 ? 1.0 : std::numeric_limits<double>::infinity());
  f.metrics["ratio"] = ratio;
  f.evidence = "loss at init " + num(l) + ", expected about " + num(expected) + " = " + why + ": ratio " + num(ratio, 3);
  if (!std::isfinite(l)) {
    f.verdict = Verdict::Fail;
    f.hint = "the first forward is already not finite: check the inputs for NaN/Inf and the model for log(0) or 0/0";
  } else if (ratio > 3 || ratio < 1.0 / 3) {
    f.verdict = Verdict::Fail;
  } else if (ratio > 1.5 || ratio < 1 / 1.5) {
    f.verdict = Verdict::Warn;
  }
  if (f.verdict != Verdict::Ok && f.hint.empty())
    f.hint = ratio > 1 ? "the model starts confident and wrong: unnormalized (large) inputs, a too large init scale, "
                         "or a last layer with large weights; normalize the inputs, keep the default init"
                       : "the loss is lower than chance before training: targets that leak into the inputs, or a "
                         "loss that does not match the outputs";
  return f;
}

// ---- activation / loss pairing -------------------------------------------------------------------

Finding check_loss_pairing(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets) {
  check_batch("diagnose::check_loss_pairing", inputs);
  // The module whose output is each graph node (the deepest one: a leaf module beats Sequential).
  std::map<const Node*, std::string> module_of;
  Tensor out, l;
  {
    HookScope* scope = nullptr;
    HookScope hooks(*model.module, [&](nn::Module& m, const Tensor& y) {
      if (!y.defined() || !y.grad_fn() || !scope) return;
      const Node* n = y.grad_fn().get();
      const std::string& name = scope->name_of(&m);
      if (!module_of.count(n) || is_leaf_module(m))
        module_of[n] = (name.empty() ? std::string("the model") : "module '" + name + "'") + " (" + m.name() + ")";
    });
    scope = &hooks;
    out = model(inputs);
    l = loss(out, targets);
  }
  Finding f = make(kModel, "loss_pairing", Verdict::Ok, "");
  // "softmax (DivBackward0, called at net.cpp:14 (in forward)), the output of module '3' (Softmax)":
  // the user's line (detail::user_site), never one inside gradlab's own Softmax.
  auto where = [&](const Node* n, const std::string& op) {
    std::string s = op + " (" + n->name() + ", " + detail::user_site(n, model.site) + ")";
    if (auto it = module_of.find(n); it != module_of.end()) s += ", the output of " + it->second;
    return s;
  };
  auto loss_site = [&](const Node* n) { return detail::user_site(n, loss.site, "the loss"); };
  std::vector<std::string> fails, warns, hints;
  // 1. Every fused cross-entropy node in the loss graph (also inside a custom loss).
  int64_t ce_nodes = 0;
  for (Node* n : reachable(l)) {
    if (!is<ops_detail::CrossEntropyOp>(n)) continue;
    ++ce_nodes;
    const Node* in = input_node(n, 0);
    if (is_softmax(in)) {
      fails.push_back(where(in, "softmax") + " is fed to cross_entropy (" + loss_site(n) +
                      "), which applies log_softmax itself: the loss is computed on probabilities and its gradients "
                      "nearly vanish");
      hints.push_back("return the logits (remove the softmax); apply softmax only to read probabilities");
    } else if (is_log_softmax(in)) {
      warns.push_back(where(in, "log_softmax") + " is fed to cross_entropy (" + loss_site(n) +
                      "): redundant (log_softmax of log_softmax is the same), but the outputs are not logits");
      hints.push_back("remove the log_softmax, or keep it and use NLLLoss");
    }
  }
  const Node* producer = out.grad_fn().get();
  // 2. By the loss kind, on the model's output.
  if (loss.kind == Loss::Kind::BCEWithLogits && is<ops_detail::Sigmoid>(producer)) {
    fails.push_back(where(producer, "sigmoid") + " is fed to " + loss.name +
                    ", which applies sigmoid itself: the model's probabilities are squashed twice");
    hints.push_back("return the logits (remove the sigmoid), or use a BCE on probabilities");
  }
  if (loss.kind == Loss::Kind::NLL && producer && !is_log_softmax(producer) && !is<ops_detail::Log>(producer)) {
    fails.push_back(where(producer, "raw output") + " is fed to " + loss.name +
                    ", which expects log-probabilities: without log_softmax it just pushes the target's logit up "
                    "without bound");
    hints.push_back("end the model with log_softmax(dim=1), or use CrossEntropyLoss on the logits");
  }
  if (loss.kind == Loss::Kind::CrossEntropy && ce_nodes == 0 && is_softmax(producer)) {
    fails.push_back(where(producer, "softmax") + " is fed to " + loss.name + ", which applies log_softmax itself");
    hints.push_back("return the logits (remove the softmax)");
  }
  f.metrics["fails"] = static_cast<double>(fails.size());
  f.metrics["warns"] = static_cast<double>(warns.size());
  if (fails.empty() && warns.empty()) {
    f.evidence = loss.name + " receives " +
                 (producer ? "the output of " + producer->name() + " (" + detail::user_site(producer, model.site) + ")"
                           : std::string("an output without graph")) +
                 ": no activation that the loss applies itself";
    return f;
  }
  f.verdict = fails.empty() ? Verdict::Warn : Verdict::Fail;
  for (const auto& s : fails) f.evidence += (f.evidence.empty() ? "" : "\n") + s;
  for (const auto& s : warns) f.evidence += (f.evidence.empty() ? "" : "\n") + s;
  for (const auto& h : hints) f.hint += (f.hint.empty() ? "" : "; ") + h;
  return f;
}

// ---- all of them -------------------------------------------------------------------------------

std::vector<Finding> check_model(const Model& model, const Loss& loss, const Tensor& inputs, const Tensor& targets,
                                 const optim::Optimizer* optimizer, const ModelCheckOptions& options,
                                 std::vector<LayerStats>* layers) {
  std::vector<Finding> out;
  if (layers) layers->clear();
  if (!options.expected_output.empty()) {
    out.push_back(check_output_shape(model, inputs, options.expected_output));
    if (out.back().failed()) return out;  // the other checks would fail on the shape alone
  }
  out.push_back(check_loss_pairing(model, loss, inputs, targets));
  out.push_back(check_loss_floor(model, loss, inputs, targets));
  out.push_back(check_gradient_flow(model, loss, inputs, targets, optimizer));
  out.push_back(check_layer_gradients(model, loss, inputs, targets, options.layer_gradients));
  out.push_back(check_initial_loss(model, loss, inputs, targets));
  std::vector<LayerStats> stats = activation_stats(model, inputs);
  out.push_back(check_activations(stats, options.activations));
  if (layers) *layers = std::move(stats);
  if (inputs.size(0) >= 2 && inputs.is_floating_point())
    out.push_back(check_batch_independence(model, inputs, options.sample));
  return out;
}

}  // namespace gradlab::diagnose
