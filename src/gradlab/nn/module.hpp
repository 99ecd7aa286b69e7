#pragma once
// nn::Module: a node of a model tree that owns parameters (tensors trained by an optimizer),
// buffers (state that is saved but not trained, e.g. BatchNorm's running mean) and submodules.
// Mirrors torch::nn::Module: register_parameter / register_buffer / register_module,
// parameters(), named_parameters() with dotted names ("encoder.0.weight"), train() / eval().
//
// Layers come as an Impl class plus a holder (a shared_ptr with `->`), as in LibTorch:
//   struct NetImpl : nn::Module { nn::Linear fc{nullptr}; NetImpl() { fc = register_module("fc",
//   nn::Linear(4, 2)); } ... }; GRADLAB_MODULE(Net);   // Net net; net->forward(x);
//   net->parameters();

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/state_dict.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab::nn {

/// What load_state_dict did not match: keys the module has but the dict lacks, and the reverse.
struct LoadResult {
  std::vector<std::string> missing_keys, unexpected_keys;
  bool ok() const { return missing_keys.empty() && unexpected_keys.empty(); }
};

/// One named tensor: a (name, tensor) pair (.first, .second) with the face of LibTorch's
/// OrderedDict item (.key(), .value()).
struct NamedTensor : std::pair<std::string, Tensor> {
  using std::pair<std::string, Tensor>::pair;
  NamedTensor(std::pair<std::string, Tensor> p) : std::pair<std::string, Tensor>(std::move(p)) {}  // NOLINT
  const std::string& key() const noexcept { return first; }
  Tensor& value() noexcept { return second; }
  const Tensor& value() const noexcept { return second; }
};

/// Name -> tensor items in registration order (what named_parameters() returns): a vector of
/// NamedTensor, plus the lookups of LibTorch's OrderedDict (["fc.weight"], find, contains,
/// keys, values).
class NamedTensors : public std::vector<NamedTensor> {
 public:
  using std::vector<NamedTensor>::vector;
  using std::vector<NamedTensor>::operator[];
  /// The tensor named `key`; a ValueError names the key and some that exist when it is absent.
  Tensor& operator[](const std::string& key);
  const Tensor& operator[](const std::string& key) const;
  /// The tensor named `key`, or null.
  Tensor* find(const std::string& key) noexcept;
  const Tensor* find(const std::string& key) const noexcept;
  bool contains(const std::string& key) const noexcept { return find(key) != nullptr; }
  std::vector<std::string> keys() const;
  std::vector<Tensor> values() const;
};

class Module;

namespace detail {
/// The Impl a holder type contains (nn::Linear -> LinearImpl); an Impl type itself otherwise.
template <class T, class = void>
struct contained_of {
  using type = T;
};
template <class T>
struct contained_of<T, std::void_t<typename T::ContainedType>> {
  using type = typename T::ContainedType;
};
// C++17 stand-ins for the concepts these templates used (headers must parse as C++17).
template <class H, class = void>
struct has_ptr : std::false_type {};
template <class H>
struct has_ptr<H, std::void_t<decltype(std::declval<const H&>().ptr())>> : std::true_type {};
/// h.ptr() exists (a holder, or anything that hands out its module).
template <class H>
inline constexpr bool has_ptr_v = has_ptr<H>::value;

template <class H, class = void>
struct is_module_holder : std::false_type {};
template <class H>
struct is_module_holder<H, std::void_t<decltype(std::declval<const H&>().ptr()),
                                       typename H::ContainedType>> : std::true_type {};
/// h.ptr() and H::ContainedType: nn::Linear, nn::Sequential, GRADLAB_MODULE(Net)...
template <class H>
inline constexpr bool is_module_holder_v = is_module_holder<H>::value;

template <class H, class = void>
struct has_tensor_forward : std::false_type {};
template <class H>
struct has_tensor_forward<
    H, std::void_t<decltype(std::declval<const H&>().ptr()->forward(std::declval<const Tensor&>()))>>
    : std::true_type {};
/// h.ptr()->forward(const Tensor&) compiles.
template <class H>
inline constexpr bool has_tensor_forward_v = has_tensor_forward<H>::value;

template <class H, class = void>
struct is_callable_holder : std::false_type {};
template <class H>
struct is_callable_holder<H, std::void_t<decltype(std::declval<const H&>().ptr()),
                                         decltype(std::declval<const H&>()(
                                             std::declval<const Tensor&>()))>> : std::true_type {};
/// h.ptr() and h(const Tensor&) compile.
template <class H>
inline constexpr bool is_callable_holder_v = is_callable_holder<H>::value;
}  // namespace detail
/// Called after a module's forward with the module and its output (PyTorch's forward hook,
/// without the inputs: forward signatures differ from module to module).
using ForwardHook = std::function<void(Module& module, const Tensor& output)>;
/// Name -> submodule pairs in registration order.
using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

/// Base class of every layer and model.
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// `name` is what printouts show; empty = the class name (without a trailing "Impl").
  explicit Module(std::string name = {});
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The module's type name, e.g. "Linear".
  const std::string& name() const;

  // ---- registration -----------------------------------------------------------------------
  /// Registers `tensor` as a parameter: a leaf tensor (requires_grad as given) that parameters()
  /// returns, optimizers update and state_dict() saves. Returns the stored handle.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  /// Registers state that is saved in state_dict() but not trained (requires_grad stays off).
  Tensor& register_buffer(std::string name, Tensor tensor);
  /// Registers a submodule; its parameters appear as "<name>.<param>".
  /// LibTorch's module->as<nn::Linear>() (or as<LinearImpl>()): this module as that Impl, or
  /// nullptr when it is another type.
  template <class T>
  typename detail::contained_of<T>::type* as() noexcept {
    return dynamic_cast<typename detail::contained_of<T>::type*>(this);
  }
  template <class T>
  const typename detail::contained_of<T>::type* as() const noexcept {
    return dynamic_cast<const typename detail::contained_of<T>::type*>(this);
  }
  template <class M, std::enable_if_t<std::is_base_of_v<Module, M>, int> = 0>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  /// Same, for a holder (nn::Linear, nn::Sequential, ...).
  template <class H, std::enable_if_t<detail::is_module_holder_v<H>, int> = 0>
  H register_module(std::string name, H holder) {
    add_child(std::move(name), holder.ptr());
    return holder;
  }

  /// Puts `module` in place of the registered submodule `name` (LibTorch's replace_module):
  /// its parameters then appear under that name; a ValueError when there is no such submodule.
  template <class M, std::enable_if_t<std::is_base_of_v<Module, M>, int> = 0>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    replace_child(name, module);
    return module;
  }
  template <class H, std::enable_if_t<detail::is_module_holder_v<H>, int> = 0>
  H replace_module(const std::string& name, H holder) {
    replace_child(name, holder.ptr());
    return holder;
  }

  // ---- traversal --------------------------------------------------------------------------
  /// Every parameter (of submodules too when recurse), each tensor once.
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// (dotted name, parameter) pairs; a tensor registered twice (tied weights) is listed once
  /// unless remove_duplicate is false.
  NamedTensors named_parameters(bool recurse = true, bool remove_duplicate = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true, bool remove_duplicate = true) const;
  /// Direct submodules.
  std::vector<std::shared_ptr<Module>> children() const;
  const NamedModules& named_children() const { return children_; }
  /// Every submodule below this one (depth first, dotted names); not this module itself.
  NamedModules named_modules() const;
  /// Calls fn on every submodule (depth first), then on this module.
  void apply(const std::function<void(Module&)>& fn);

  // ---- modes and housekeeping -------------------------------------------------------------
  /// Training mode on (or off) for this module and every submodule (Dropout, BatchNorm read it).
  virtual void train(bool on = true);
  /// Same as train(false).
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Clears the gradient of every parameter: to none (default) or to zeros.
  void zero_grad(bool set_to_none = true);
  /// Converts every floating-point parameter and buffer (and its gradient) to `dtype`, in place:
  /// the tensors keep their identity, so optimizers built afterwards see the new data.
  void to(ScalarType dtype);
  /// Moves every parameter and buffer (and its gradient) to `device`, in place, like to(dtype).
  /// Build the optimizer after the move, or it keeps state made for the old device.
  void to(Device device);
  /// Number of parameter elements (only trainable ones when asked).
  int64_t num_parameters(bool trainable_only = false) const;

  // ---- forward hooks ------------------------------------------------------------------------
  /// Calls hook(module, output) after every forward of this module made through its holder
  /// (`fc(x)`) or a Sequential (a direct `fc->forward(x)` skips hooks). Returns a handle for
  /// remove_forward_hook. diagnose's activation statistics are built on these.
  unsigned register_forward_hook(ForwardHook hook);
  /// Removes a hook; an unknown handle is ignored.
  void remove_forward_hook(unsigned handle);
  /// Runs the forward hooks on `output` (what holders and Sequential call after forward).
  void call_forward_hooks(const Tensor& output) {
    if (!forward_hooks_.empty()) run_forward_hooks(output);  // one branch when none is set
  }

  // ---- persistence (implemented through gradlab::io) ---------------------------------------
  /// Parameters then buffers of each module (depth first), dotted names; the tensors are
  /// detached handles sharing storage with the module's tensors.
  StateDict state_dict() const;
  /// Copies values (no graph, shapes checked) into the registered tensors. strict: any
  /// missing or unexpected key is an error; otherwise they are returned.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

  // ---- printing ---------------------------------------------------------------------------
  /// One line describing this module alone, e.g. "Linear(in_features=64, out_features=10,
  /// bias=true)".
  virtual void pretty_print(std::ostream& os) const;

 protected:
  /// Finds a registered parameter of this module (not submodules); nullptr if none.
  Tensor* find_parameter(const std::string& name);
  Tensor* find_buffer(const std::string& name);

 private:
  void add_child(std::string name, std::shared_ptr<Module> module);
  void replace_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect(const std::string& prefix, bool recurse, bool buffers, NamedTensors& out) const;
  void for_each_tensor(const std::function<void(Tensor&)>& fn);
  void run_forward_hooks(const Tensor& output);

  mutable std::string name_;
  NamedTensors parameters_;
  NamedTensors buffers_;
  NamedModules children_;
  bool training_ = true;
  std::vector<std::pair<unsigned, ForwardHook>> forward_hooks_;
};

/// The module tree, PyTorch style, with parameter counts:
///   Sequential(
///     (0): Linear(in_features=64, out_features=128, bias=true)  [8,320 params]
///     ...
///   )  [9,610 params, 9,610 trainable]
std::ostream& operator<<(std::ostream& os, const Module& module);

/// "8,320": an integer with thousands separators (used by printouts).
std::string group_digits(int64_t n);

/// A shared_ptr to a module Impl with `->`, as LibTorch's ModuleHolder. Layers are used
/// through holders: `nn::Linear fc(64, 10); fc->forward(x)` or `fc(x)`.
template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  /// Default-constructs the Impl (only for Impls that have a default constructor).
  template <class I = Impl, std::enable_if_t<std::is_default_constructible_v<I>, int> = 0>
  ModuleHolder() : impl_(std::make_shared<Impl>()) {}
  /// An empty holder, to be assigned later (`nn::Linear fc{nullptr};`).
  ModuleHolder(std::nullptr_t) {}                                       // NOLINT
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT
  /// Constructs the Impl from the arguments: nn::Linear(64, 10).
  template <class Head, class... Tail,
            std::enable_if_t<!std::is_base_of_v<ModuleHolder, std::decay_t<Head>> &&
                                 !std::is_same_v<std::decay_t<Head>, std::nullptr_t> &&
                                 !std::is_same_v<std::decay_t<Head>, std::shared_ptr<Impl>> &&
                                 std::is_constructible_v<Impl, Head, Tail...>,
                             int> = 0>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    GRADLAB_CHECK(impl_ != nullptr, ValueError, "ModuleHolder", "accessing an empty module holder",
                  "a constructed module", "nullptr",
                  "assign it first, e.g. fc = register_module(\"fc\", nn::Linear(4, 2))");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  /// Forwards to the Impl's operator[] (seq[0] on a Sequential), as LibTorch's holder does.
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) const {
    return (*get())[std::forward<Arg>(arg)];
  }
  explicit operator bool() const { return impl_ != nullptr; }
  /// Calls forward: fc(x) == fc->forward(x), then the module's forward hooks on a Tensor result.
  /// With one or two arguments the caller's line is kept (ModuleCallScope): anomaly mode names
  /// it beside the line inside the module where a NaN was born.
  template <class A>
  decltype(auto) operator()(A&& a, Site site = {}) const {
    ModuleCallScope scope(site);
    return call(std::forward<A>(a));
  }
  template <class A, class B>
  decltype(auto) operator()(A&& a, B&& b, Site site = {}) const {
    ModuleCallScope scope(site);
    return call(std::forward<A>(a), std::forward<B>(b));
  }
  template <class... Args, std::enable_if_t<sizeof...(Args) == 0 || (sizeof...(Args) > 2), int> = 0>
  decltype(auto) operator()(Args&&... args) const {
    return call(std::forward<Args>(args)...);
  }

 private:
  template <class... Args>
  decltype(auto) call(Args&&... args) const {
    using Out = decltype(get()->forward(std::forward<Args>(args)...));
    if constexpr (std::is_same_v<std::decay_t<Out>, Tensor>) {
      Tensor out = get()->forward(std::forward<Args>(args)...);
      get()->call_forward_hooks(out);
      return out;
    } else {
      return get()->forward(std::forward<Args>(args)...);
    }
  }

  std::shared_ptr<Impl> impl_;
};

template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& h) {
  return os << static_cast<const Module&>(*h);
}

}  // namespace gradlab::nn

/// Declares holder `Name` for `NameImpl`, as LibTorch's TORCH_MODULE.
#define GRADLAB_MODULE(Name)                                     \
  class Name : public ::gradlab::nn::ModuleHolder<Name##Impl> {  \
   public:                                                       \
    using ::gradlab::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }
