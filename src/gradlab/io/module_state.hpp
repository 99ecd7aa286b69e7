#pragma once
// Module state: what nn::Module::state_dict() / load_state_dict() do, plus the key remaps that
// make a dict saved from a wrapped model (DataParallel's "module.", a trainer's "model.") load
// into a bare one and back.
//
//   StateDict sd = io::load_safetensors("ckpt.safetensors");
//   model->load_state_dict(io::strip_prefix(sd, "module."));

#include <optional>
#include <string>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/state_dict.hpp"
#include "gradlab/nn/module.hpp"

namespace gradlab::io {

/// load_state_dict found problems: missing / unexpected keys (strict), shape or dtype mismatches.
/// what() lists every one of them; the fields hold them for programs.
class StateDictError : public Error {
 public:
  using Error::Error;
  std::vector<std::string> missing_keys, unexpected_keys;
  /// "key: expected [10, 64] float32, got [10, 32] float32" for each mismatch.
  std::vector<std::string> mismatches;
};

/// A consistent key rename: keys starting with `from` start with `to` instead.
struct PrefixRemap {
  std::string from, to;
  /// How many missing keys it explains.
  size_t explained = 0;
};

/// Parameters then buffers of the module, then of each submodule depth first, by dotted name
/// (PyTorch's order). The tensors are detached handles sharing storage with the module's.
StateDict module_state_dict(const nn::Module& module);

/// Copies `state` into the module's parameters and buffers (under NoGradGuard; versions bump).
/// A shape or dtype mismatch is always an error; with `strict`, so is any missing or
/// unexpected key. Nothing is written when an error is thrown. Without `strict`, the keys that
/// did not match are returned (and those tensors keep their values).
nn::LoadResult load_module_state_dict(nn::Module& module, const StateDict& state,
                                      bool strict = true);

/// The engine of load_module_state_dict, for any named tensors: `targets` are handles to copy
/// into, `who` names the receiver in messages (e.g. "Sequential").
nn::LoadResult load_named_tensors(const nn::NamedTensors& targets, const StateDict& state,
                                  bool strict, const std::string& who);

/// `dict` with the prefix `from` of every key replaced by `to` (keys without it are kept as
/// they are; metadata is copied). remap_prefix(sd, "module.", "") == strip_prefix(sd, "module.").
StateDict remap_prefix(const StateDict& dict, const std::string& from, const std::string& to);
/// `dict` with `prefix` removed from the keys that start with it
/// (torch.nn.modules.utils.consume_prefix_in_state_dict_if_present).
StateDict strip_prefix(const StateDict& dict, const std::string& prefix);
/// `dict` with `prefix` put in front of every key.
StateDict add_prefix(const StateDict& dict, const std::string& prefix);
/// The entries whose keys start with `prefix`, with the prefix removed (e.g. one submodule's
/// state: sub_dict(sd, "encoder.")).
StateDict sub_dict(const StateDict& dict, const std::string& prefix);

/// When the `unexpected` keys become the `missing` ones by one prefix change, that change
/// (the one explaining the most missing keys); nullopt when none explains any.
std::optional<PrefixRemap> find_prefix_remap(const std::vector<std::string>& missing,
                                             const std::vector<std::string>& unexpected);

}  // namespace gradlab::io
