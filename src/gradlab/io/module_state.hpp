#pragma once
// Module state: what nn::Module::state_dict() / load_state_dict() do, plus the key remaps that
// make a dict saved from a wrapped model (DataParallel's "module.", a trainer's "model.") load
// into a bare one and back.
//
//   StateDict sd = io::load_safetensors("ckpt.safetensors");
//   model->load_state_dict(io::strip_prefix(sd, "module."));

#include <string>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/state_dict.hpp"
#include "gradlab/nn/module_state.hpp"

namespace gradlab::io {

// Module state itself is nn's (nn/module_state.hpp: Module::state_dict() uses it); io names it too.
using nn::find_prefix_remap;
using nn::load_module_state_dict;
using nn::load_named_tensors;
using nn::module_state_dict;
using nn::PrefixRemap;

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

}  // namespace gradlab::io
