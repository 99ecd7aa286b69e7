// Tensor's autograd methods (declared in core/tensor.hpp). They live here, not in core/tensor.cpp,
// because they need the graph and the engine: core depends on nothing above it (as LibTorch
// defines them in torch/csrc/autograd, not in ATen).

#include "gradlab/autograd/engine.hpp"
#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/tensor.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab {

std::string autograd::node_name(const Node& n) { return n.name(); }

bool Tensor::requires_grad() const {
  return defined() && (impl_->autograd.requires_grad || impl_->autograd.grad_fn != nullptr);
}

const Tensor& Tensor::requires_grad_(bool r) const {
  check_defined("requires_grad_");
  if (!is_leaf()) {
    GRADLAB_CHECK(r, AutogradError, "requires_grad_",
                  "you can only change requires_grad flags of leaf variables", "a leaf tensor",
                  "a tensor made by " + impl_->autograd.grad_fn->name(),
                  "use detach() to get a leaf that does not require grad");
    return *this;
  }
  GRADLAB_CHECK(!r || is_floating_point(), AutogradError, "requires_grad_",
                "only floating point tensors can require gradients", "float32 or float64",
                to_string(dtype()), "int64 and bool tensors (labels, indices, masks) never get a gradient");
  impl_->autograd.requires_grad = r;
  return *this;
}

const Tensor& Tensor::grad() const {
  check_defined("grad");
  return impl_->autograd.grad;
}
Tensor& Tensor::mutable_grad() const {
  check_defined("mutable_grad");
  return impl_->autograd.grad;
}
void Tensor::zero_grad(bool set_to_none) const {
  Tensor& g = mutable_grad();
  if (!g.defined()) return;
  if (set_to_none) {
    g = Tensor();
  } else {
    NoGradGuard ng;
    if (g.grad_fn()) g = g.detach();
    g.zero_();
  }
}
bool Tensor::is_leaf() const { check_defined("is_leaf"); return impl_->autograd.grad_fn == nullptr; }
std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  return defined() ? impl_->autograd.grad_fn : nullptr;
}
uint32_t Tensor::output_nr() const { return defined() ? impl_->autograd.output_nr : 0; }

void Tensor::retain_grad() const {
  check_defined("retain_grad");
  GRADLAB_CHECK(requires_grad(), AutogradError, "retain_grad",
                "can't retain_grad on a tensor that has requires_grad=false",
                "a tensor that requires grad", "requires_grad=false");
  if (is_leaf()) return;  // leaves keep .grad anyway
  impl_->autograd.retains_grad = true;
  impl_->autograd.grad_fn->retained[impl_->autograd.output_nr] = impl_;
}
bool Tensor::retains_grad() const { return defined() && impl_->autograd.retains_grad; }

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      Site site) const {
  check_defined("backward");
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, site);
}

unsigned Tensor::register_hook(GradHook hook) const {
  check_defined("register_hook");
  GRADLAB_CHECK(requires_grad(), AutogradError, "register_hook",
                "cannot register a hook on a tensor that doesn't require gradient",
                "a tensor that requires grad", "requires_grad=false");
  unsigned id = autograd::next_hook_id();
  if (is_leaf()) impl_->autograd.leaf_hooks.emplace_back(id, std::move(hook));
  else impl_->autograd.grad_fn->pre_hooks[impl_->autograd.output_nr].emplace_back(id, std::move(hook));
  return id;
}

unsigned Tensor::register_hook(std::function<void(const Tensor&)> hook) const {
  return register_hook(GradHook([h = std::move(hook)](const Tensor& g) {
    h(g);
    return Tensor();
  }));
}

unsigned Tensor::register_post_accumulate_grad_hook(std::function<void(Tensor&)> hook) const {
  check_defined("register_post_accumulate_grad_hook");
  GRADLAB_CHECK(requires_grad(), AutogradError, "register_post_accumulate_grad_hook",
                "cannot register a hook on a tensor that doesn't require gradient",
                "a tensor that requires grad", "requires_grad=false");
  GRADLAB_CHECK(is_leaf(), AutogradError, "register_post_accumulate_grad_hook",
                "post accumulate grad hooks cannot be registered on non-leaf tensors",
                "a leaf tensor", "a tensor with grad_fn " + autograd::node_name(*grad_fn()),
                "use register_hook for a non-leaf's gradient");
  unsigned id = autograd::next_hook_id();
  impl_->autograd.post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_hook(unsigned handle) const {
  check_defined("remove_hook");
  auto drop = [handle](auto& v) {
    std::erase_if(v, [handle](const auto& p) { return p.first == handle; });
  };
  drop(impl_->autograd.leaf_hooks);
  drop(impl_->autograd.post_accumulate_hooks);
  if (impl_->autograd.grad_fn)
    for (auto& [slot, hooks] : impl_->autograd.grad_fn->pre_hooks) drop(hooks);
}

Tensor Tensor::detach() const {
  check_defined("detach");
  Tensor t = make_view(*this, sizes(), strides(), storage_offset());
  t.impl()->view_base = nullptr;  // a detached tensor is a leaf of its own, not a view in the graph
  return t;
}

const Tensor& Tensor::detach_() const {
  check_defined("detach_");
  impl_->autograd.grad_fn = nullptr;
  impl_->autograd.requires_grad = false;
  impl_->autograd.output_nr = 0;
  return *this;
}

}  // namespace gradlab
