#pragma once
// LibTorch's other containers (torch/nn/modules/container/): nn::Functional (a function as a
// module), nn::ModuleList (modules named "0", "1", ... without a forward of their own) and
// nn::ModuleDict (modules by name).
//
//   nn::Sequential seq(nn::Linear(4, 8), nn::Functional(torch::relu),
//                      nn::Functional(torch::leaky_relu, 0.2));
//   nn::ModuleList layers(nn::Linear(4, 8), nn::Linear(8, 2));
//   layers = register_module("layers", layers);      // parameters "layers.0.weight", ...
//   for (const auto& m : *layers) x = m->as<nn::Linear>()->forward(x);

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// A function Tensor -> Tensor as a module (for a Sequential): Functional(torch::relu),
/// Functional(torch::leaky_relu, 0.2) (the extra arguments are bound after the input), or a
/// lambda. It has no parameters.
class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function);
  /// f(input, args...); gradlab's ops also take a trailing Site, which is filled in here.
  template <class Fn, class... Args,
            std::enable_if_t<std::is_invocable_v<const Fn&, const Tensor&, const Args&...> ||
                                 std::is_invocable_v<const Fn&, const Tensor&, const Args&..., Site>,
                             int> = 0>
  explicit FunctionalImpl(Fn function, Args... args)
      : FunctionalImpl(Function([function, args...](Tensor x) -> Tensor {
          if constexpr (std::is_invocable_v<const Fn&, const Tensor&, const Args&...>)
            return function(x, args...);
          else
            return function(x, args..., Site());
        })) {}
  Tensor forward(const Tensor& input);
  /// Same as forward.
  Tensor operator()(const Tensor& input) { return forward(input); }
  void pretty_print(std::ostream& os) const override;

 private:
  Function function_;
};
GRADLAB_MODULE(Functional);

/// Modules in a list, registered as "0", "1", ...: indexable and iterable, with no forward.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() = default;
  /// ModuleList(nn::Linear(4, 8), nn::ReLU(), ...)
  template <class... Ms, std::enable_if_t<(sizeof...(Ms) > 0), int> = 0>
  explicit ModuleListImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  /// Appends a module (a holder such as nn::Linear, or a shared_ptr to a module).
  void push_back(std::shared_ptr<Module> module);
  template <class H, std::enable_if_t<detail::is_module_holder_v<std::decay_t<H>>, int> = 0>
  void push_back(H&& holder) {
    push_back(std::shared_ptr<Module>(holder.ptr()));
  }
  template <class M, std::enable_if_t<std::is_base_of_v<Module, M>, int> = 0>
  void push_back(std::shared_ptr<M> module) {
    push_back(std::shared_ptr<Module>(std::move(module)));
  }
  /// Appends every module of a container (a vector of holders or pointers, another ModuleList).
  template <class Container>
  void extend(const Container& container) {
    for (const auto& m : container) push_back(m);
  }

  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  /// for (const auto& m : *list): each module as a std::shared_ptr<Module>.
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }
  /// The i-th module (ValueError when i >= size()).
  std::shared_ptr<Module> ptr(size_t index) const;
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  /// The i-th module as T (an Impl or a holder type), or nullptr when it is another type, as
  /// LibTorch (a dynamic_pointer_cast).
  template <class T>
  std::shared_ptr<typename detail::contained_of<T>::type> ptr(size_t index) const {
    return std::dynamic_pointer_cast<typename detail::contained_of<T>::type>(ptr(index));
  }
  /// The i-th module as T's Impl; a ValueError when it is another type.
  template <class T>
  typename detail::contained_of<T>::type& at(size_t index) const {
    auto p = ptr<T>(index);
    GRADLAB_CHECK(p != nullptr, ValueError, "ModuleList::at",
                  "module " + std::to_string(index) + " has another type", "the requested module type",
                  ptr(index)->name(), "check with list[i]->as<T>() != nullptr first");
    return *p;
  }
  void pretty_print(std::ostream& os) const override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
GRADLAB_MODULE(ModuleList);

/// One entry of a ModuleDict: .key() and .value() as LibTorch's OrderedDict item (and
/// .first / .second).
struct ModuleDictItem : std::pair<std::string, std::shared_ptr<Module>> {
  using std::pair<std::string, std::shared_ptr<Module>>::pair;
  const std::string& key() const noexcept { return first; }
  const std::shared_ptr<Module>& value() const noexcept { return second; }
};

/// Modules by name, in insertion order; registered under their names ("encoder.weight").
/// Inserting a name that exists replaces its module (as LibTorch).
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() = default;
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
    update(modules);
  }
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  /// The module called key (ValueError naming the keys there are when absent).
  std::shared_ptr<Module> operator[](const std::string& key) const;
  /// The module called key as T's Impl; a ValueError when it is another type.
  template <class T>
  typename detail::contained_of<T>::type& at(const std::string& key) const {
    auto p = std::dynamic_pointer_cast<typename detail::contained_of<T>::type>((*this)[key]);
    GRADLAB_CHECK(p != nullptr, ValueError, "ModuleDict::at", "module '" + key + "' has another type",
                  "the requested module type", (*this)[key]->name());
    return *p;
  }
  /// Removes and returns the module called key (it stays registered, as LibTorch).
  std::shared_ptr<Module> pop(const std::string& key);
  /// Forgets every entry (they stay registered, as LibTorch).
  void clear() { items_.clear(); }
  bool contains(const std::string& key) const noexcept;
  size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<Module>> values() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items() const;
  std::vector<ModuleDictItem>::const_iterator begin() const { return items_.begin(); }
  std::vector<ModuleDictItem>::const_iterator end() const { return items_.end(); }
  void pretty_print(std::ostream& os) const override;

 private:
  void insert(const std::string& key, std::shared_ptr<Module> module);
  std::vector<ModuleDictItem> items_;
};
GRADLAB_MODULE(ModuleDict);

}  // namespace gradlab::nn
