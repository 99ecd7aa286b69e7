#include "gradlab/nn/module.hpp"

#include <cstdlib>
#include <ostream>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/autograd/node.hpp"
#include "gradlab/core/demangle.hpp"
#include "gradlab/core/dispatch.hpp"
#include "gradlab/core/tensor_impl.hpp"
#include "gradlab/nn/module_state.hpp"

namespace gradlab::nn {

Tensor* NamedTensors::find(const std::string& key) noexcept {
  for (NamedTensor& item : *this)
    if (item.first == key) return &item.second;
  return nullptr;
}
const Tensor* NamedTensors::find(const std::string& key) const noexcept {
  return const_cast<NamedTensors*>(this)->find(key);
}
const Tensor& NamedTensors::operator[](const std::string& key) const {
  if (const Tensor* t = find(key)) return *t;
  std::string some;
  for (size_t i = 0; i < size() && i < 8; ++i) some += (i ? ", " : "") + (*this)[i].first;
  throw ValueError(error_message("named tensors", "no tensor named '" + key + "'",
                                 size() ? "one of: " + some : std::string("a registered name"),
                                 "'" + key + "'", "keys() lists every name"));
}
Tensor& NamedTensors::operator[](const std::string& key) {
  return const_cast<Tensor&>(static_cast<const NamedTensors&>(*this)[key]);
}
std::vector<std::string> NamedTensors::keys() const {
  std::vector<std::string> k;
  for (const NamedTensor& item : *this) k.push_back(item.first);
  return k;
}
std::vector<Tensor> NamedTensors::values() const {
  std::vector<Tensor> v;
  for (const NamedTensor& item : *this) v.push_back(item.second);
  return v;
}


namespace {

// A contiguous copy of t with `dtype` on `device` (no graph): core's copy kernel converts both.
Tensor converted_copy(const Tensor& t, ScalarType dtype, Device device, const char* op) {
  Tensor c = make_tensor(t.sizes(), dtype, device);
  dispatch::core_kernels(op).copy(c, t);
  return c;
}

// "gradlab::nn::LinearImpl" -> "Linear"; "(anonymous namespace)::NetImpl" -> "Net".
std::string short_type_name(const std::type_info& t) {
  std::string s = unqualified_type_name(t.name());
  if (s.size() > 4 && s.ends_with("Impl")) s = s.substr(0, s.size() - 4);
  return s;
}

}  // namespace

std::string group_digits(int64_t n) {
  std::string s = std::to_string(n < 0 ? -n : n), r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return n < 0 ? "-" + r : r;
}

Module::Module(std::string name) : name_(std::move(name)) {}

const std::string& Module::name() const {
  if (name_.empty()) name_ = short_type_name(typeid(*this));
  return name_;
}

void Module::check_new_name(const std::string& name, const char* what) const {
  GRADLAB_CHECK(!name.empty(), ValueError, std::string(what),
                std::string(what) + " name must not be empty", "a name such as \"weight\"", "\"\"");
  GRADLAB_CHECK(
      name.find('.') == std::string::npos, ValueError, std::string(what),
      std::string(what) + " name must not contain \".\" (dots join the names of nested modules)",
      "a name without dots", "\"" + name + "\"", "register a submodule instead of a dotted name");
  auto taken = [&](const auto& list) {
    for (const auto& [n, v] : list)
      if (n == name) return true;
    return false;
  };
  if (taken(parameters_) || taken(buffers_) || taken(children_)) {
    throw ValueError(
        error_message(what, "attribute '" + name + "' is already registered in " + this->name(),
                      "a new name", "\"" + name + "\"",
                      "each parameter, buffer and submodule of one module needs its own name"));
  }
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  GRADLAB_CHECK(tensor.defined(), ValueError, "register_parameter",
                "parameter '" + name + "' is an undefined tensor", "a defined tensor", "Tensor()");
  GRADLAB_CHECK(
      tensor.is_leaf(), AutogradError, "register_parameter",
      "parameter '" + name + "' must be a leaf tensor (one not computed by a recorded op)",
      "a leaf tensor",
      "a tensor made by " + (tensor.grad_fn() ? tensor.grad_fn()->name() : std::string("an op")),
      "create it under NoGradGuard, or register t.detach()");
  GRADLAB_CHECK(!requires_grad || tensor.is_floating_point(), DTypeError, "register_parameter",
                "parameter '" + name + "' must be floating point to require grad",
                "float32 or float64", to_string(tensor.dtype()),
                "register int64 or bool state with register_buffer");
  tensor.requires_grad_(requires_grad);
  parameters_.emplace_back(std::move(name), std::move(tensor));
  return parameters_.back().second;
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_new_name(name, "register_buffer");
  GRADLAB_CHECK(tensor.defined(), ValueError, "register_buffer",
                "buffer '" + name + "' is an undefined tensor", "a defined tensor", "Tensor()");
  buffers_.emplace_back(std::move(name), std::move(tensor));
  return buffers_.back().second;
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  GRADLAB_CHECK(module != nullptr, ValueError, "register_module",
                "submodule '" + name + "' is null", "a constructed module", "nullptr");
  GRADLAB_CHECK(module.get() != this, ValueError, "register_module",
                "a module cannot be its own child", "another module", "this module");
  children_.emplace_back(std::move(name), std::move(module));
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  GRADLAB_CHECK(module != nullptr, ValueError, "replace_module", "submodule '" + name + "' is null",
                "a constructed module", "nullptr");
  for (auto& [n, m] : children_)
    if (n == name) {
      m = std::move(module);
      return;
    }
  GRADLAB_CHECK(false, ValueError, "replace_module", "there is no submodule '" + name + "'",
                "the name of a registered submodule", "\"" + name + "\"", "register it with register_module");
}

Tensor* Module::find_parameter(const std::string& name) {
  for (auto& [n, t] : parameters_)
    if (n == name) return &t;
  return nullptr;
}

Tensor* Module::find_buffer(const std::string& name) {
  for (auto& [n, t] : buffers_)
    if (n == name) return &t;
  return nullptr;
}

void Module::collect(const std::string& prefix, bool recurse, bool buffers,
                     NamedTensors& out) const {
  for (const auto& [n, t] : buffers ? buffers_ : parameters_) out.emplace_back(prefix + n, t);
  if (!recurse) return;
  for (const auto& [n, m] : children_) m->collect(prefix + n + ".", true, buffers, out);
}

namespace {
NamedTensors dedupe(NamedTensors all) {
  std::unordered_set<const TensorImpl*> seen;
  NamedTensors r;
  for (auto& p : all)
    if (seen.insert(p.second.impl()).second) r.push_back(std::move(p));
  return r;
}
std::vector<Tensor> values(const NamedTensors& n) {
  std::vector<Tensor> r;
  r.reserve(n.size());
  for (const auto& [name, t] : n) r.push_back(t);
  return r;
}
}  // namespace

NamedTensors Module::named_parameters(bool recurse, bool remove_duplicate) const {
  NamedTensors r;
  collect("", recurse, false, r);
  return remove_duplicate ? dedupe(std::move(r)) : r;
}
std::vector<Tensor> Module::parameters(bool recurse) const {
  return values(named_parameters(recurse));
}
NamedTensors Module::named_buffers(bool recurse, bool remove_duplicate) const {
  NamedTensors r;
  collect("", recurse, true, r);
  return remove_duplicate ? dedupe(std::move(r)) : r;
}
std::vector<Tensor> Module::buffers(bool recurse) const { return values(named_buffers(recurse)); }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> r;
  for (const auto& [n, m] : children_) r.push_back(m);
  return r;
}

NamedModules Module::named_modules() const {
  NamedModules r;
  for (const auto& [n, m] : children_) {
    r.emplace_back(n, m);
    for (auto& [sub, sm] : m->named_modules()) r.emplace_back(n + "." + sub, sm);
  }
  return r;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [n, m] : children_) m->apply(fn);
  fn(*this);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, m] : children_) m->train(on);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) p.zero_grad(set_to_none);
}

unsigned Module::register_forward_hook(ForwardHook hook) {
  GRADLAB_CHECK(static_cast<bool>(hook), ValueError, "Module::register_forward_hook",
                "the hook is empty", "a callable", "an empty std::function");
  const unsigned id = autograd::next_hook_id();
  forward_hooks_.emplace_back(id, std::move(hook));
  return id;
}

void Module::remove_forward_hook(unsigned handle) {
  std::erase_if(forward_hooks_, [handle](const auto& h) { return h.first == handle; });
}

void Module::run_forward_hooks(const Tensor& output) {
  // NOTE: a copy, so that a hook may remove itself (or add another) while they run.
  const auto hooks = forward_hooks_;
  for (const auto& [id, hook] : hooks) hook(*this, output);
}

void Module::for_each_tensor(const std::function<void(Tensor&)>& fn) {
  for (auto& [n, t] : parameters_) fn(t);
  for (auto& [n, t] : buffers_) fn(t);
  for (auto& [n, m] : children_) m->for_each_tensor(fn);
}

void Module::to(ScalarType dtype) {
  GRADLAB_CHECK(is_floating_point(dtype), DTypeError, "Module::to",
                "modules convert to floating point dtypes only", "float32 or float64",
                to_string(dtype));
  std::unordered_set<TensorImpl*> done;
  // Like PyTorch's param.data = param.data.to(dtype): the TensorImpl (the identity every handle
  // shares) gets new storage, so handles held elsewhere see the converted tensor.
  auto convert = [&](Tensor& t) {
    if (!t.defined() || !t.is_floating_point() || t.dtype() == dtype) return;
    if (!done.insert(t.impl()).second) return;
    Tensor c = converted_copy(t, dtype, t.device(), "Module::to");
    TensorImpl* impl = t.impl();
    impl->storage = c.impl()->storage;
    impl->offset = 0;
    impl->strides = contiguous_strides(impl->sizes);
    impl->dtype = dtype;
    impl->view_base = nullptr;
    impl->autograd.grad_accumulator.reset();
    if (impl->autograd.grad.defined())
      impl->autograd.grad = converted_copy(impl->autograd.grad, dtype, impl->autograd.grad.device(), "Module::to");
  };
  for_each_tensor(convert);
}

void Module::to(Device device) {
  // "cuda" -> cuda:0; throws without a GPU
  if (device.is_cuda()) device = dispatch::cuda_memory("Module::to").resolve(device, "Module::to");
  std::unordered_set<TensorImpl*> done;
  // As to(dtype): each TensorImpl gets storage on `device`, so Parameter handles held elsewhere
  // (an optimizer built before the move) see the moved tensor. Gradients move with them.
  auto move = [&](Tensor& t) {
    if (!t.defined() || t.device() == device) return;
    if (!done.insert(t.impl()).second) return;
    Tensor c = converted_copy(t, t.dtype(), device, "Module::to");
    TensorImpl* impl = t.impl();
    impl->storage = c.impl()->storage;
    impl->offset = 0;
    impl->strides = contiguous_strides(impl->sizes);
    impl->view_base = nullptr;
    impl->autograd.grad_accumulator.reset();
    if (impl->autograd.grad.defined()) {
      impl->autograd.grad =
          converted_copy(impl->autograd.grad, impl->autograd.grad.dtype(), device, "Module::to");
    }
  };
  for_each_tensor(move);
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

StateDict Module::state_dict() const { return module_state_dict(*this); }

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  return load_module_state_dict(*this, state, strict);
}

void Module::pretty_print(std::ostream& os) const { os << name() << "()"; }

namespace {

void print_tree(std::ostream& os, const Module& m, int indent) {
  const auto& kids = m.named_children();
  if (kids.empty())
    m.pretty_print(os);
  else
    os << m.name();
  const int64_t own = [&] {
    int64_t n = 0;
    for (const Tensor& p : m.parameters(/*recurse=*/false)) n += p.numel();
    return n;
  }();
  if (kids.empty()) {
    if (own > 0) os << "  [" << group_digits(own) << " params]";
    return;
  }
  os << "(\n";
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  for (const auto& [name, child] : kids) {
    os << pad << "(" << name << "): ";
    print_tree(os, *child, indent + 2);
    os << "\n";
  }
  os << std::string(static_cast<size_t>(indent), ' ') << ")";
  if (indent > 0) os << "  [" << group_digits(m.num_parameters()) << " params]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Module& module) {
  print_tree(os, module, 0);
  const int64_t total = module.num_parameters(), trainable = module.num_parameters(true);
  os << "  [" << group_digits(total) << " params, " << group_digits(trainable) << " trainable]";
  return os;
}

}  // namespace gradlab::nn
