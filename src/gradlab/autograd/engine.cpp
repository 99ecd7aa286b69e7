#include "gradlab/autograd/engine.hpp"

#include <algorithm>
#include <optional>
#include <queue>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "gradlab/autograd/anomaly.hpp"
#include "gradlab/autograd/flags.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/core/interrupt.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::autograd {

namespace {

using Start = std::pair<Edge, Tensor>;  // a root's gradient edge and the gradient it receives

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

// The part of the graph reachable from the roots.
struct Graph {
  std::vector<std::shared_ptr<Node>> post_order;  // children before parents; keeps nodes alive
  std::unordered_map<Node*, int> deps;            // edges into each node from reachable nodes
};

// grad(): where each requested input's gradient is read, and which nodes must run to get there.
// backward() captures nothing and runs every reachable node.
struct Captures {
  struct Slot {
    uint32_t slot;
    size_t index;  // position in the result
  };
  std::unordered_map<Node*, std::vector<Slot>> at;
  std::unordered_set<Node*> needed;  // nodes with a path to a captured slot
  TensorList result;

  bool active() const { return !result.empty(); }
  bool wants(Node* n) const { return !active() || needed.count(n) || at.count(n); }
};

// The error in flight again, with the user's backward()/grad() call appended, as other gradlab
// diagnostics name the user's line: "...; backward called at train.cpp:42 (in main)".
// NOTE: only the kinds a backward pass raises are renamed, and only exactly those: a subclass
// (GradcheckError) or another kind passes unchanged rather than be sliced to a base.
template <class E>
[[noreturn]] void rethrow_as(const E& e, const std::string& at) {
  if (typeid(e) != typeid(E)) throw;
  throw E(e.what() + at);
}
[[noreturn]] void rethrow_naming_call(const char* api, const Site& site) {
  const std::string at = std::string("; ") + api + " called at " + site.str();
  try {
    throw;
  } catch (const AnomalyError& e) {
    rethrow_as(e, at);
  } catch (const AutogradError& e) {
    rethrow_as(e, at);
  } catch (const ShapeError& e) {
    rethrow_as(e, at);
  } catch (const ValueError& e) {
    rethrow_as(e, at);
  }
}

std::string node_label(const Node& n) { return n.name() + " (forward called at " + n.site.str() + ")"; }

// Each root with its starting gradient: the given one, or 1 for a one-element root.
std::vector<Start> root_starts(const TensorList& roots, const TensorList& root_grads, const char* api) {
  GRADLAB_CHECK(root_grads.empty() || root_grads.size() == roots.size(), ValueError, api,
                "one gradient per tensor is needed", std::to_string(roots.size()) + " gradients",
                std::to_string(root_grads.size()));
  std::vector<Start> starts;
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
  return starts;
}

// Depth-first from the roots: dependency counts and a topological (post-)order, O(V + E).
Graph collect_dependencies(const std::vector<Start>& starts) {
  Graph g;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;  // node, next edge to look at
  auto visit = [&](const std::shared_ptr<Node>& n) {
    if (seen.insert(n.get()).second) stack.emplace_back(n, 0);
  };
  // NOTE: one root at a time: with every root pushed first, a root that feeds another (still
  // on the stack, unvisited) would be skipped as seen and land after it in the post order.
  for (const auto& [root, grad] : starts) {
    visit(root.fn);
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next == n->next_edges().size()) {
        g.post_order.push_back(std::move(n));
        stack.pop_back();
        continue;
      }
      const Edge& e = n->next_edges()[next++];
      if (!e.valid()) continue;
      g.deps[e.fn.get()]++;
      visit(e.fn);  // NOTE: may reallocate `stack`: `n` and `next` are not used after it
    }
  }
  return g;
}

// A node is needed when one of its children holds a captured slot or is needed itself. In post
// order every child is decided before its parents, so one pass suffices.
void prune_to_captures(const Graph& g, Captures& c) {
  for (const auto& n : g.post_order)
    for (const Edge& e : n->next_edges())
      if (e.valid() && (c.at.count(e.fn.get()) || c.needed.count(e.fn.get()))) {
        c.needed.insert(n.get());
        break;
      }
}

// Tensor hooks, then retain_grad (same order as PyTorch; captures come after both).
void run_pre_hooks(Node& n, GradList& grads, bool create_graph) {
  for (auto& [slot, hooks] : n.pre_hooks) {
    if (slot >= grads.size() || !grads[slot].defined()) continue;
    for (auto& [id, hook] : hooks)
      if (Tensor r = hook(grads[slot]); r.defined()) grads[slot] = r;
  }
  for (auto& [slot, weak] : n.retained) {
    auto impl = weak.lock();
    if (!impl || slot >= grads.size() || !grads[slot].defined()) continue;
    Tensor& acc = impl->autograd.grad;
    if (!acc.defined()) acc = create_graph ? grads[slot] : grads[slot].detach().clone();
    else acc = create_graph ? acc + grads[slot] : (acc + grads[slot]).detach();
  }
}

// Differentiable outputs that received no gradient get zeros (multi-output nodes), unless the
// node asked for undefined tensors (a custom function's set_materialize_grads(false)).
void zero_fill(const Node& n, GradList& grads) {
  if (!n.materialize_grads()) return;
  for (size_t k = 0; k < n.num_outputs(); ++k) {
    const TensorMeta& m = n.output_meta()[k];
    if (!grads[k].defined() && m.differentiable)
      grads[k] = zeros(m.shape, TensorOptions().dtype(m.dtype).device(m.device));
  }
}

void check_backward_anomaly(const Node& n, const GradList& in, const GradList& out) {
  for (const Tensor& g : in)
    if (g.defined() && !tensor_stats(g).all_finite()) return;  // already non-finite upstream
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined()) continue;
    TensorStats s = tensor_stats(out[i]);
    if (s.all_finite()) continue;
    std::string m = "anomaly detected in backward: " + n.name() + " returned a non-finite gradient for input " +
                    std::to_string(i) + " (" + s.str(out[i]) + ") from finite incoming gradients. " +
                    "The forward op was called at " + n.site.str() + inside_module(n.site, n.module_site) +
                    ". Incoming gradients:";
    for (size_t k = 0; k < in.size(); ++k)
      if (in[k].defined()) m += "\n  grad of output " + std::to_string(k) + ": " + tensor_stats(in[k]).str(in[k]);
    throw AnomalyError(m, n.site, n.module_site);
  }
}

// n.apply, with a non-autograd error named after the node and, in anomaly mode, its result checked.
GradList dispatch(Node& n, GradList&& grads) {
  const bool anomaly = is_anomaly_enabled();
  GradList in_grads;  // kept for the anomaly message only
  if (anomaly) in_grads = grads;
  GradList out = [&] {
    detail::RunningBackwardGuard running;  // the ops inside are checked as this node's backward
    try {
      return n.apply(std::move(grads));
    } catch (const InterruptedError&) {
      throw;  // a stop request, not an error of this node: it keeps its type (KeyboardInterrupt)
    } catch (const AutogradError&) {
      throw;
    } catch (const Error& e) {
      throw AutogradError(std::string("in backward of ") + node_label(n) + ": " + e.what());
    }
  }();
  GRADLAB_CHECK(out.size() == n.next_edges().size() || dynamic_cast<AccumulateGrad*>(&n), AutogradError,
                n.name(), "backward returned the wrong number of gradients",
                std::to_string(n.next_edges().size()), std::to_string(out.size()),
                "return one gradient per forward input (an undefined Tensor for inputs that "
                "need none)");
  if (anomaly) check_backward_anomaly(n, in_grads, out);
  return out;
}

// PyTorch's is_expandable_to: `shape` broadcasts to `target` (trailing dims equal or 1).
bool is_expandable_to(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  for (size_t i = 1; i <= shape.size(); ++i) {
    const int64_t s = shape[shape.size() - i], t = target[target.size() - i];
    if (s != t && s != 1) return false;
  }
  return true;
}

// The gradient for input i of `n` must fit that input. As PyTorch's validate_outputs: one with
// a shape the input broadcasts to is summed back to the input's shape (sum_to); others are errors.
Tensor validate_grad(const Node& n, size_t i, Tensor g) {
  if (!g.defined()) return g;
  const TensorMeta& m = n.input_meta().at(i);
  if (g.sizes() != m.shape) {
    if (!is_expandable_to(m.shape, g.sizes())) {
      throw AutogradError(error_message(
          n.name(), "backward returned a gradient of the wrong shape for input " + std::to_string(i),
          shape_str(m.shape), shape_str(g.sizes()),
          "a backward function must return one gradient per input, shaped like that input"));
    }
    g = g.sum_to_size(m.shape);
  }
  if (g.dtype() != m.dtype && is_floating_point(m.dtype)) g = g.to(m.dtype);
  return g;
}

// Runs one ready node: hooks, captures, then its backward. Returns the gradients for its next
// edges, or nothing when grad() does not need the node to run.
std::optional<GradList> run_node(Node& n, GradList grads, bool retain_graph, bool create_graph,
                                 Captures& c) {
  grads.resize(std::max(grads.size(), n.num_outputs()));
  run_pre_hooks(n, grads, create_graph);
  if (c.active()) {
    if (auto it = c.at.find(&n); it != c.at.end())
      for (const auto& s : it->second)
        if (s.slot < grads.size()) c.result[s.index] = grads[s.slot];
    if (!c.needed.count(&n)) return std::nullopt;  // e.g. AccumulateGrad never runs under grad()
  }
  zero_fill(n, grads);
  GradList out = dispatch(n, std::move(grads));
  if (!retain_graph) n.release_variables();
  return out;
}

// Runs the graph from the roots. With captures (autograd::grad), only nodes on a path to a
// captured input run, and AccumulateGrad never does.
TensorList run_backward(const TensorList& roots, const TensorList& root_grads, bool retain_graph,
                        bool create_graph, const std::vector<Edge>& capture_edges, const char* api) {
  AutoGradMode mode(create_graph);
  const std::vector<Start> starts = root_starts(roots, root_grads, api);
  Graph graph = collect_dependencies(starts);
  Captures captures;
  captures.result.resize(capture_edges.size());
  for (size_t i = 0; i < capture_edges.size(); ++i)
    if (const Edge& e = capture_edges[i]; e.valid()) captures.at[e.fn.get()].push_back({e.input_nr, i});
  if (captures.active()) prune_to_captures(graph, captures);

  // Ready nodes run latest-created first (sequence_nr), as PyTorch's ready queue does.
  auto later = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  std::unordered_map<Node*, InputBuffer> buffers;
  auto arrive = [&](const Edge& e, Tensor g) {
    buffers[e.fn.get()].add(e.input_nr, std::move(g));
    int& deps = graph.deps[e.fn.get()];
    if (deps == 0) {
      ready.push(e.fn.get());
      deps = -1;  // queued: a second root on the same node must not queue it again
    }
  };
  for (const auto& [e, g] : starts) arrive(e, g);

  while (!ready.empty()) {
    check_interrupt();  // a safe point between nodes (one relaxed load)
    Node* n = ready.top();
    ready.pop();
    auto out = run_node(*n, std::move(buffers[n].grads), retain_graph, create_graph, captures);
    buffers.erase(n);
    if (!out) continue;
    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size() && i < out->size(); ++i) {
      if (!edges[i].valid() || !captures.wants(edges[i].fn.get())) continue;
      --graph.deps[edges[i].fn.get()];
      arrive(edges[i], validate_grad(*n, i, std::move((*out)[i])));
    }
  }
  return std::move(captures.result);
}

}  // namespace

void backward(const TensorList& tensors, const TensorList& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph, Site site) {
  try {
    run_backward(tensors, grad_tensors, retain_graph.value_or(create_graph), create_graph, {}, "backward");
  } catch (const Error&) {
    rethrow_naming_call("backward", site);
  }
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                std::optional<bool> retain_graph, bool create_graph, bool allow_unused, Site site) {
  try {
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
                                edges, "autograd::grad");
    for (size_t i = 0; i < r.size(); ++i) {
      if (!r[i].defined() && !allow_unused) {
        throw AutogradError(error_message(
            "autograd::grad", "input " + std::to_string(i) + " was not used to compute the outputs",
            "every input on a path to the outputs", "input " + std::to_string(i) + " unused",
            "pass allow_unused=true to get an undefined gradient for it"));
      }
    }
    return r;
  } catch (const Error&) {
    rethrow_naming_call("autograd::grad", site);
  }
}

}  // namespace gradlab::autograd
