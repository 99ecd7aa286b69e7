#include "gradlab/autograd/node.hpp"

#include <atomic>
#include <cctype>
#include <string_view>

#include "gradlab/autograd/anomaly.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/record.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::autograd {

namespace {
std::atomic<uint64_t> g_sequence{0};
std::atomic<unsigned> g_hook_id{0};
}  // namespace

unsigned next_hook_id() { return ++g_hook_id; }

Node::Node() : sequence_nr_(g_sequence++) {}

void Node::release_variables() {
  for (SavedTensor* s : saved_) s->reset();
  released_ = true;
}

// ---- SavedTensor --------------------------------------------------------------------------

void SavedTensor::save(const Tensor& t, Node* owner, bool is_output, uint32_t output_nr) {
  owner_ = owner;
  is_output_ = is_output;
  was_saved_ = true;
  version_ = t.version();
  output_nr_ = is_output ? output_nr : t.output_nr();
  if (is_output) {
    // Store a grad_fn-free alias: the node owning a reference to its own output would be a cycle.
    data_ = make_view(t, t.sizes(), t.strides(), t.storage_offset());
    // NOTE: make_view points the alias at t as its base; t -> grad_fn (this node) -> alias -> t
    // would be a reference cycle that leaks every graph never backpropagated. Keep t's own base.
    data_.impl()->view_base = t.impl()->view_base;
  } else {
    data_ = t;
    if (auto fn = t.grad_fn()) producer_ = fn->name();
  }
}

void SavedTensor::reset() { data_ = Tensor(); }

Tensor SavedTensor::unpack() const {
  const std::string consumer = owner_ ? owner_->name() : std::string("a backward function");
  if (!data_.defined()) {
    if (!was_saved_) return Tensor();
    throw AutogradError(
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed). Saved intermediate values of the graph are freed "
        "when you call .backward() or autograd::grad(). Specify retain_graph=true if you need to "
        "backward through the graph a second time or if you need to access saved tensors after "
        "calling backward. (node: " + consumer + ")");
  }
  if (data_.version() != version_) {
    // NOTE: std::string first: g++ 12 -O3 warns (-Wrestrict, a false positive) on "[" + string.
    std::string which = std::string("[") + to_string(data_.dtype()) + " tensor " + shape_str(data_.sizes()) + "]";
    std::string origin;
    if (is_output_) origin = ", which is output " + std::to_string(output_nr_) + " of " + consumer + ",";
    else if (!producer_.empty()) origin = ", which is output " + std::to_string(data_.output_nr()) + " of " + producer_ + ",";
    const Site& w = data_.impl()->storage->last_write();
    throw AutogradError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: " + which + origin + " is at version " + std::to_string(data_.version()) +
        "; expected version " + std::to_string(version_) + " instead. It was modified at " +
        w.str() + "; it is needed by " + consumer + " (forward called at " +
        (owner_ ? owner_->site.str() : std::string("<unknown site>")) +
        "). Hint: do not modify it in place (use an out-of-place op such as x = x + 1 instead of "
        "x += 1), or clone() it before the in-place write.");
  }
  if (!is_output_) return data_;
  // Give the alias its grad_fn back so that, under create_graph, gradients flow through it.
  Tensor t = make_view(data_, data_.sizes(), data_.strides(), data_.storage_offset());
  if (owner_ && output_nr_ < owner_->num_outputs() &&
      owner_->output_meta()[output_nr_].differentiable) {
    t.impl()->autograd.grad_fn = owner_->shared_from_this();
    t.impl()->autograd.output_nr = output_nr_;
    t.impl()->autograd.requires_grad = true;
  }
  return t;
}

// ---- AccumulateGrad -----------------------------------------------------------------------

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
  input_meta_.push_back({leaf_->sizes, leaf_->dtype, leaf_->storage->device(), true});
  output_meta_.push_back(input_meta_.back());
}

GradList AccumulateGrad::apply(GradList&& grads) {
  Tensor g = std::move(grads.at(0));
  if (!g.defined()) return {};
  for (auto& [id, hook] : leaf_->autograd.leaf_hooks) {
    Tensor r = hook(g);
    if (r.defined()) g = r;
  }
  Tensor& acc = leaf_->autograd.grad;
  if (!acc.defined()) {
    // Under create_graph the gradient keeps its graph; otherwise store a private copy (the
    // incoming tensor may be shared with other consumers of the same upstream gradient).
    acc = GradMode::is_enabled() ? g : g.detach().clone();
  } else if (GradMode::is_enabled()) {
    acc = acc + g;  // out of place: keeps the graph of both terms
  } else {
    NoGradGuard ng;
    acc.add_(g);
  }
  if (!leaf_->autograd.post_accumulate_hooks.empty()) {
    Tensor leaf(leaf_);
    // NOTE: a copy of the list: a hook may remove itself (or others) while it runs.
    auto hooks = leaf_->autograd.post_accumulate_hooks;
    for (auto& [id, hook] : hooks) hook(leaf);
  }
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  TensorImpl* impl = t.impl();
  if (impl->view_base && impl->base_history_version != impl->view_base->history_version) [[unlikely]] {
    throw AutogradError(error_message(
        "autograd", "a view was used after an in-place operation on its base (or on another view of it)",
        "a view taken after the last in-place write to its base",
        "a view " + t.describe() + " whose grad_fn predates that write",
        "take the view again after the in-place write (PyTorch regenerates such a view's grad_fn; "
        "gradlab does not, so it refuses rather than give a gradient that misses the write)"));
  }
  if (impl->autograd.grad_fn) return {impl->autograd.grad_fn, impl->autograd.output_nr};
  auto acc = impl->autograd.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->autograd.grad_accumulator = acc;
  }
  return {acc, 0};
}

// ---- recording ----------------------------------------------------------------------------

bool should_record(const std::vector<const Tensor*>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

void connect(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
             std::vector<Tensor*>& outputs, const std::vector<const TensorImpl*>& non_differentiable) {
  auto& edges = node->mutable_next_edges();
  auto& in_meta = node->mutable_input_meta();
  // A custom Function sets its edges before forward (so ctx->needs_input_grad works there).
  const bool have_edges = !edges.empty();
  for (const Tensor* t : inputs) {
    if (!have_edges) edges.push_back(gradient_edge(*t));
    if (t->defined()) in_meta.push_back({t->sizes(), t->dtype(), t->device(), t->requires_grad()});
    else in_meta.push_back({{}, kFloat32, Device(), false});
  }
  auto& out_meta = node->mutable_output_meta();
  for (Tensor* o : outputs) {
    bool diff = o->defined() && o->is_floating_point();
    for (const TensorImpl* nd : non_differentiable)
      if (nd == o->impl()) diff = false;
    out_meta.push_back({o->defined() ? o->sizes() : Shape{}, o->defined() ? o->dtype() : kFloat32,
                        o->defined() ? o->device() : Device(), diff});
    if (diff) {
      auto& m = o->impl()->autograd;
      m.grad_fn = node;
      m.output_nr = static_cast<uint32_t>(out_meta.size() - 1);
      m.requires_grad = true;
    }
  }
}

// ---- anomaly mode -------------------------------------------------------------------------

namespace {
// "ClampBackward1" -> "Clamp": an op's node name without its BackwardN suffix names the forward op.
std::string forward_name(std::string_view node_name) {
  std::string_view stem = node_name;
  while (!stem.empty() && std::isdigit(static_cast<unsigned char>(stem.back()))) stem.remove_suffix(1);
  constexpr std::string_view kBackward = "Backward";
  const bool numbered = stem.size() < node_name.size();
  if (!numbered || stem.size() <= kBackward.size() || !stem.ends_with(kBackward)) return std::string(node_name);
  stem.remove_suffix(kBackward.size());
  return std::string(stem);
}
}  // namespace

void check_forward_anomaly(const char* op, const Site& site, const std::vector<const Tensor*>& inputs,
                           const std::vector<Tensor*>& outputs) {
  if (!is_anomaly_enabled() || detail::running_backward()) return;
  std::vector<TensorStats> in_stats;
  for (const Tensor* t : inputs) {
    if (!t->defined() || !t->is_floating_point()) continue;
    in_stats.push_back(tensor_stats(*t));
    if (!in_stats.back().all_finite()) return;  // born earlier: that op already reported it
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor* o = outputs[i];
    if (!o->defined() || !o->is_floating_point()) continue;
    TensorStats s = tensor_stats(*o);
    if (s.all_finite()) continue;
    std::string m = "anomaly detected in forward: " + forward_name(op) + " (called at " + site.str() +
                    inside_module(site, ModuleCallScope::current()) + ") returned non-finite values in output " + std::to_string(i) + " (" +
                    s.str(*o) + ") from finite inputs:";
    size_t k = 0;
    for (const Tensor* t : inputs) {
      if (!t->defined() || !t->is_floating_point()) continue;
      m += "\n  input " + std::to_string(k) + ": " + in_stats[k].str(*t);
      ++k;
    }
    throw AnomalyError(m, site, ModuleCallScope::current());
  }
}

}  // namespace gradlab::autograd
