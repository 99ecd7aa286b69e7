#pragma once
// nn::Sequential: modules applied one after the other. Children are named "0", "1", ... (or
// given names), so parameters read "0.weight", "2.bias", as in PyTorch.

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// A module with a name, for Sequential({{"fc1", nn::Linear(4, 8)}, {"act", nn::ReLU()}}).
struct NamedModule {
  template <class H, std::enable_if_t<detail::has_tensor_forward_v<H>, int> = 0>
  NamedModule(std::string n, H holder)  // NOLINT
      : name(std::move(n)),
        module(holder.ptr()),
        forward([p = holder.ptr()](const Tensor& x) {
          Tensor y = p->forward(x);
          p->call_forward_hooks(y);
          return y;
        }) {}
  std::string name;
  std::shared_ptr<Module> module;
  std::function<Tensor(const Tensor&)> forward;
};

/// One entry of a Sequential, as LibTorch's AnyModule when iterating (`for (auto& m : *seq)`):
/// the module and its one-Tensor forward.
class AnyModule {
 public:
  AnyModule(std::shared_ptr<Module> module, std::function<Tensor(const Tensor&)> forward)
      : module_(std::move(module)), forward_(std::move(forward)) {}
  const std::shared_ptr<Module>& ptr() const { return module_; }
  Module* operator->() const { return module_.get(); }
  /// The module's forward, then its forward hooks.
  Tensor forward(const Tensor& x) const { return forward_(x); }
  /// Is the module a T (an Impl type, or a holder such as nn::Linear)?
  template <class T>
  bool is() const {
    return dynamic_cast<typename detail::contained_of<T>::type*>(module_.get()) != nullptr;
  }
  /// The module as T's Impl (throws when it is another type).
  template <class T>
  typename detail::contained_of<T>::type& get() const {
    auto* p = dynamic_cast<typename detail::contained_of<T>::type*>(module_.get());
    GRADLAB_CHECK(p != nullptr, ValueError, "AnyModule::get", "the module has another type",
                  "the requested type", module_->name(), "check with is<T>() first");
    return *p;
  }

 private:
  std::shared_ptr<Module> module_;
  std::function<Tensor(const Tensor&)> forward_;
};

/// Chains modules whose forward takes and returns one Tensor.
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  /// Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10))
  template <class... Ms, std::enable_if_t<(sizeof...(Ms) > 0), int> = 0>
  explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  SequentialImpl(std::initializer_list<NamedModule> named);

  /// Appends a module (holder or shared_ptr) named by its position.
  template <class M>
  void push_back(M module) {
    push_back(std::to_string(size()), std::move(module));
  }
  /// Appends a module under `name`.
  template <class H, std::enable_if_t<detail::has_tensor_forward_v<H>, int> = 0>
  void push_back(std::string name, H holder) {
    add(NamedModule(std::move(name), std::move(holder)));
  }
  template <class M, std::enable_if_t<std::is_base_of_v<Module, M>, int> = 0>
  void push_back(std::string name, std::shared_ptr<M> module) {
    GRADLAB_CHECK(module != nullptr, ValueError, "Sequential::push_back", "the module is null",
                  "a module", "nullptr");
    register_module(name, module);
    items_.emplace_back(module, [module](const Tensor& x) {
      Tensor y = module->forward(x);
      module->call_forward_hooks(y);
      return y;
    });
  }

  /// Applies every module in order.
  Tensor forward(const Tensor& input);
  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  /// for (const auto& m : *seq): each entry as an AnyModule (m.ptr(), m.forward(x), m.is<T>()).
  std::vector<AnyModule>::const_iterator begin() const { return items_.begin(); }
  std::vector<AnyModule>::const_iterator end() const { return items_.end(); }
  /// The i-th module.
  std::shared_ptr<Module> ptr(size_t index) const;
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  /// The i-th module as its Impl type (throws when it is another type).
  template <class T>
  T& at(size_t index) const {
    auto p = std::dynamic_pointer_cast<T>(ptr(index));
    GRADLAB_CHECK(p != nullptr, ValueError, "Sequential::at",
                  "module " + std::to_string(index) + " has another type", "the module's Impl type",
                  ptr(index)->name());
    return *p;
  }

 private:
  void add(NamedModule m);
  std::vector<AnyModule> items_;
};
/// Holder of SequentialImpl; also takes named modules: Sequential({{"fc", nn::Linear(4, 2)}}).
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() : ModuleHolder<SequentialImpl>() {}
  Sequential(std::initializer_list<NamedModule> named)  // NOLINT
      : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>(named)) {}
};

}  // namespace gradlab::nn
