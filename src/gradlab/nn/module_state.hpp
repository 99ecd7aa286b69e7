#pragma once
// Module state: what nn::Module::state_dict() / load_state_dict() do. The key remaps that make a
// dict saved from a wrapped model load into a bare one are io's (io/module_state.hpp), which also
// names these functions io::module_state_dict, io::load_module_state_dict, ...

#include <optional>
#include <string>
#include <vector>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::nn {

/// A consistent key rename: keys starting with `from` start with `to` instead.
struct PrefixRemap {
  std::string from, to;
  /// How many missing keys it explains.
  size_t explained = 0;
};

/// Parameters then buffers of the module, then of each submodule depth first, by dotted name
/// (PyTorch's order). The tensors are detached handles sharing storage with the module's.
StateDict module_state_dict(const Module& module);

/// Copies `state` into the module's parameters and buffers (under NoGradGuard; versions bump).
/// A shape or dtype mismatch is always an error (io::StateDictError); with `strict`, so is any
/// missing or unexpected key. Nothing is written when an error is thrown. Without `strict`, the
/// keys that did not match are returned (and those tensors keep their values).
LoadResult load_module_state_dict(Module& module, const StateDict& state, bool strict = true);

/// The engine of load_module_state_dict, for any named tensors: `targets` are handles to copy
/// into, `who` names the receiver in messages (e.g. "Sequential").
LoadResult load_named_tensors(const NamedTensors& targets, const StateDict& state, bool strict,
                              const std::string& who);

/// When the `unexpected` keys become the `missing` ones by one prefix change, that change
/// (the one explaining the most missing keys); nullopt when none explains any.
std::optional<PrefixRemap> find_prefix_remap(const std::vector<std::string>& missing,
                                             const std::vector<std::string>& unexpected);

}  // namespace gradlab::nn
