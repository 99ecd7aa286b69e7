#pragma once
// gradlab::save / gradlab::load: torch::save / torch::load for state dicts and modules, in the
// safetensors format (io/safetensors.hpp).
//
//   gradlab::save(model, "model.safetensors");      // model->state_dict()
//   gradlab::load(model, "model.safetensors");      // strict load into an existing model
//   StateDict sd = gradlab::load("model.safetensors");

#include <filesystem>
#include <memory>

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

}  // namespace gradlab
