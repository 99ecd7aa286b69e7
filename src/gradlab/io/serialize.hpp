#pragma once
// gradlab::save / gradlab::load: torch::save / torch::load for state dicts and modules, in the
// safetensors format (io/safetensors.hpp).
//
//   gradlab::save(model, "model.safetensors");      // model->state_dict()
//   gradlab::load(model, "model.safetensors");      // strict load into an existing model
//   StateDict sd = gradlab::load("model.safetensors");
//   gradlab::save(x, "x.safetensors"); gradlab::load(x, "x.safetensors");   // one tensor
//   gradlab::save(optimizer, "opt.safetensors");    // optimizer.state_dict()
//
// Every file is safetensors (a documented format, not LibTorch's pickle archives): a tensor is
// the key "tensor", a tensor list the keys "0", "1", ...

#include <filesystem>
#include <memory>
#include <type_traits>
#include <utility>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/io/module_state.hpp"
#include "gradlab/io/safetensors.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab {

/// Writes a state dict (crash-safe, with a checksum).
void save(const StateDict& dict, const std::filesystem::path& path);
/// Writes module.state_dict().
void save(const nn::Module& module, const std::filesystem::path& path);
template <class Impl>
void save(const nn::ModuleHolder<Impl>& module, const std::filesystem::path& path) {
  save(static_cast<const nn::Module&>(*module), path);
}

/// Reads a state dict (checksum verified when present).
StateDict load(const std::filesystem::path& path);
/// Loads a saved state dict into `module` (module.load_state_dict(load(path), strict)).
nn::LoadResult load(nn::Module& module, const std::filesystem::path& path, bool strict = true);
template <class Impl>
nn::LoadResult load(const nn::ModuleHolder<Impl>& module, const std::filesystem::path& path,
                    bool strict = true) {
  return load(static_cast<nn::Module&>(*module), path, strict);
}

/// Writes one tensor (key "tensor").
void save(const Tensor& tensor, const std::filesystem::path& path);
/// Reads a file written by save(tensor) into `tensor` (the handle is replaced, as in LibTorch).
void load(Tensor& tensor, const std::filesystem::path& path);
/// Writes a list of tensors (keys "0", "1", ...).
void save(const TensorList& tensors, const std::filesystem::path& path);
/// Reads a file written by save(tensor list).
void load(TensorList& tensors, const std::filesystem::path& path);

namespace detail {
template <class T, class = void>
struct has_state_dict : std::false_type {};
template <class T>
struct has_state_dict<T, std::void_t<decltype(std::declval<const T&>().state_dict()),
                                     decltype(std::declval<T&>().load_state_dict(std::declval<const StateDict&>()))>>
    : std::bool_constant<!std::is_base_of_v<nn::Module, T>> {};
}  // namespace detail

/// torch::save(optimizer, path): anything with state_dict() / load_state_dict() that is not a
/// module (optimizers, LR schedulers, GradScaler).
template <class T, std::enable_if_t<detail::has_state_dict<T>::value, int> = 0>
void save(const T& object, const std::filesystem::path& path) {
  save(object.state_dict(), path);
}
/// torch::load(optimizer, path): object.load_state_dict(load(path)).
template <class T, std::enable_if_t<detail::has_state_dict<T>::value, int> = 0>
void load(T& object, const std::filesystem::path& path) {
  object.load_state_dict(load(path));
}

}  // namespace gradlab
