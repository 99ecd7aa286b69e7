#include "gradlab/autograd/engine.hpp"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "gradlab/autograd/anomaly.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/ops/ops.hpp"

namespace gradlab::autograd {

namespace {

struct Capture {
  Node* node;
  uint32_t slot;
  size_t index;  // position in the result
};

// Sums the gradients that reach one node, one slot per forward output.
struct InputBuffer {
  GradList grads;
  void add(size_t slot, Tensor g) {
    if (grads.size() <= slot) grads.resize(slot + 1);
    if (!g.defined()) return;
    if (!grads[slot].defined()) grads[slot] = std::move(g);
    else grads[slot] = grads[slot] + g;  // recorded under create_graph (fan-out is a sum)
  }
};

std::string node_label(const Node& n) { return n.name() + " (forward called at " + n.site.str() + ")"; }

// Gradient returned for input i of `n` must fit the input it belongs to.
Tensor validate_grad(const Node& n, size_t i, Tensor g) {
  if (!g.defined()) return g;
  const TensorMeta& m = n.input_meta().at(i);
  if (g.sizes() != m.shape) {
    // A gradient for a broadcast input may arrive with the broadcast shape: only if sum_to fits.
    throw AutogradError(error_message(
        n.name(), "backward returned a gradient of the wrong shape for input " + std::to_string(i),
        shape_str(m.shape), shape_str(g.sizes()),
        "a backward function must return one gradient per input, shaped like that input"));
  }
  if (g.dtype() != m.dtype && is_floating_point(m.dtype)) g = g.to(m.dtype);
  return g;
}

void check_backward_anomaly(const Node& n, const GradList& in, const GradList& out) {
  if (!is_anomaly_enabled()) return;
  for (const Tensor& g : in)
    if (g.defined() && !tensor_stats(g).all_finite()) return;  // already non-finite upstream
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined()) continue;
    TensorStats s = tensor_stats(out[i]);
    if (s.all_finite()) continue;
    std::string m = "anomaly detected in backward: " + n.name() + " returned a non-finite gradient for input " +
                    std::to_string(i) + " (" + s.str(out[i]) + ") from finite incoming gradients. " +
                    "The forward op was called at " + n.site.str() + ". Incoming gradients:";
    for (size_t k = 0; k < in.size(); ++k)
      if (in[k].defined()) m += "\n  grad of output " + std::to_string(k) + ": " + tensor_stats(in[k]).str(in[k]);
    throw AnomalyError(m);
  }
}

// Runs the graph from the root edges. With captures (autograd::grad), only nodes on a path to a
// captured input run and AccumulateGrad never runs.
TensorList run_backward(const TensorList& roots, const TensorList& root_grads, bool retain_graph,
                        bool create_graph, const std::vector<Edge>& capture_edges, const Site& site,
                        const char* api) {
  GRADLAB_CHECK(root_grads.empty() || root_grads.size() == roots.size(), ValueError, api,
                "one gradient per tensor is needed", std::to_string(roots.size()) + " gradients",
                std::to_string(root_grads.size()));
  AutoGradMode mode(create_graph);
  std::vector<std::pair<Edge, Tensor>> starts;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& t = roots[i];
    GRADLAB_CHECK(t.defined(), ValueError, api, "tensor " + std::to_string(i) + " is undefined");
    if (!t.requires_grad()) {
      throw AutogradError(error_message(
          api, "element " + std::to_string(i) +
                   " of tensors does not require grad and does not have a grad_fn",
          "a tensor computed from inputs with requires_grad=true", "a tensor with no graph",
          "call requires_grad_() on the leaf inputs before the forward pass, and do not compute "
          "the loss inside NoGradGuard or from detach()ed tensors"));
    }
    Tensor g = root_grads.empty() ? Tensor() : root_grads[i];
    if (!g.defined()) {
      if (t.numel() != 1) {
        throw AutogradError(error_message(
            api, "grad can be implicitly created only for scalar outputs", "a one-element tensor",
            "a tensor of shape " + shape_str(t.sizes()),
            "reduce it first (loss.sum() or loss.mean()) or pass a gradient of the same shape"));
      }
      g = ones_like(t);
    } else {
      GRADLAB_CHECK(g.sizes() == t.sizes(), ShapeError, api,
                    "gradient " + std::to_string(i) + " has the wrong shape", shape_str(t.sizes()),
                    shape_str(g.sizes()));
    }
    starts.emplace_back(gradient_edge(t), g);
  }

  // Dependencies: how many edges point at each node from the part of the graph we will run.
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep;
  std::vector<Node*> order;  // DFS discovery
  {
    std::vector<Node*> stack;
    for (auto& [e, g] : starts) {
      if (keep.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
    }
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      order.push_back(n);
      for (const Edge& e : n->next_edges()) {
        if (!e.valid()) continue;
        deps[e.fn.get()]++;
        if (keep.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
      }
    }
  }
  const bool capturing = !capture_edges.empty();
  std::unordered_map<Node*, std::vector<Capture>> captures;
  for (size_t i = 0; i < capture_edges.size(); ++i) {
    const Edge& e = capture_edges[i];
    if (e.valid()) captures[e.fn.get()].push_back({e.fn.get(), e.input_nr, i});
  }
  // needed[n]: running n can reach a captured slot (everything is needed for backward()).
  std::unordered_set<Node*> needed;
  if (capturing) {
    // Reverse DFS order visits children before parents only approximately; iterate to a fixpoint
    // over the (acyclic) graph instead: a node is needed if any child has a capture or is needed.
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Node* n = *it;
        if (needed.count(n)) continue;
        for (const Edge& e : n->next_edges()) {
          if (e.valid() && (captures.count(e.fn.get()) || needed.count(e.fn.get()))) {
            needed.insert(n);
            changed = true;
            break;
          }
        }
      }
    }
  }

  TensorList result(capture_edges.size());
  std::unordered_map<Node*, InputBuffer> buffers;
  auto cmp = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(cmp)> ready(cmp);
  for (auto& [e, g] : starts) {
    buffers[e.fn.get()].add(e.input_nr, g);
  }
  for (auto& [e, g] : starts)
    if (deps[e.fn.get()] == 0 && buffers.count(e.fn.get())) {
      ready.push(e.fn.get());
      deps[e.fn.get()] = -1;  // queued
    }

  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    GradList grads = std::move(buffers[n].grads);
    buffers.erase(n);
    grads.resize(std::max(grads.size(), n->num_outputs()));
    // Tensor hooks, then retain_grad, then captures (same order as PyTorch).
    for (auto& [slot, hooks] : n->pre_hooks) {
      if (slot >= grads.size() || !grads[slot].defined()) continue;
      for (auto& [id, hook] : hooks) {
        Tensor r = hook(grads[slot]);
        if (r.defined()) grads[slot] = r;
      }
    }
    for (auto& [slot, weak] : n->retained) {
      auto impl = weak.lock();
      if (!impl || slot >= grads.size() || !grads[slot].defined()) continue;
      Tensor& acc = impl->autograd.grad;
      if (!acc.defined()) acc = create_graph ? grads[slot] : grads[slot].detach().clone();
      else acc = create_graph ? acc + grads[slot] : (acc + grads[slot]).detach();
    }
    if (capturing) {
      if (auto it = captures.find(n); it != captures.end())
        for (const Capture& c : it->second)
          if (c.slot < grads.size()) result[c.index] = grads[c.slot];
      if (!needed.count(n)) continue;
    }
    // Zero-fill gradients of differentiable outputs that received none (multi-output nodes).
    for (size_t k = 0; k < n->num_outputs(); ++k) {
      const TensorMeta& m = n->output_meta()[k];
      if (!grads[k].defined() && m.differentiable && n->materialize_grads())
        grads[k] = zeros(m.shape, TensorOptions().dtype(m.dtype).device(m.device));
    }
    GradList in_grads;  // kept for anomaly messages only when enabled (no copy when off)
    if (is_anomaly_enabled()) in_grads = grads;
    GradList out = [&] {
      // The ops inside apply are checked as this node's backward (check_backward_anomaly).
      struct Running {
        bool prev = std::exchange(detail::running_backward(), true);
        ~Running() { detail::running_backward() = prev; }
      } running;
      try {
        return n->apply(std::move(grads));
      } catch (const AutogradError&) {
        throw;
      } catch (const Error& e) {
        throw AutogradError(std::string("in backward of ") + node_label(*n) + ": " + e.what());
      }
    }();
    if (!retain_graph) n->release_variables();
    const auto& edges = n->next_edges();
    GRADLAB_CHECK(out.size() == edges.size() || dynamic_cast<AccumulateGrad*>(n), AutogradError,
                  n->name(), "backward returned the wrong number of gradients",
                  std::to_string(edges.size()), std::to_string(out.size()),
                  "return one gradient per forward input (an undefined Tensor for inputs that "
                  "need none)");
    check_backward_anomaly(*n, in_grads, out);
    for (size_t i = 0; i < edges.size() && i < out.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* next = e.fn.get();
      if (capturing && !needed.count(next) && !captures.count(next)) continue;
      buffers[next].add(e.input_nr, validate_grad(*n, i, std::move(out[i])));
      if (--deps[next] == 0) {
        ready.push(next);
        deps[next] = -1;
      }
    }
  }
  (void)site;
  return result;
}

}  // namespace

void backward(const TensorList& tensors, const TensorList& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph, Site site) {
  run_backward(tensors, grad_tensors, retain_graph.value_or(create_graph), create_graph, {}, site,
               "backward");
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                std::optional<bool> retain_graph, bool create_graph, bool allow_unused, Site site) {
  std::vector<Edge> edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    GRADLAB_CHECK(t.defined() && t.requires_grad(), AutogradError, "autograd::grad",
                  "input " + std::to_string(i) + " does not require grad",
                  "inputs with requires_grad=true", "a tensor with requires_grad=false",
                  "call requires_grad_() on it before the forward pass");
    edges.push_back(gradient_edge(t));
  }
  TensorList r = run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph,
                              edges, site, "autograd::grad");
  for (size_t i = 0; i < r.size(); ++i) {
    if (!r[i].defined() && !allow_unused) {
      throw AutogradError(error_message(
          "autograd::grad", "input " + std::to_string(i) + " was not used to compute the outputs",
          "every input on a path to the outputs", "input " + std::to_string(i) + " unused",
          "pass allow_unused=true to get an undefined gradient for it"));
    }
  }
  return r;
}

}  // namespace gradlab::autograd
