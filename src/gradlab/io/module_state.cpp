#include "gradlab/io/module_state.hpp"

namespace gradlab::io {

StateDict remap_prefix(const StateDict& dict, const std::string& from, const std::string& to) {
  StateDict out;
  for (const auto& [k, t] : dict)
    out.insert(k.starts_with(from) ? to + k.substr(from.size()) : k, t);
  out.metadata = dict.metadata;
  return out;
}

StateDict strip_prefix(const StateDict& dict, const std::string& prefix) {
  return remap_prefix(dict, prefix, "");
}

StateDict add_prefix(const StateDict& dict, const std::string& prefix) {
  return remap_prefix(dict, "", prefix);
}

StateDict sub_dict(const StateDict& dict, const std::string& prefix) {
  StateDict out;
  for (const auto& [k, t] : dict)
    if (k.starts_with(prefix)) out.insert(k.substr(prefix.size()), t);
  out.metadata = dict.metadata;
  return out;
}

}  // namespace gradlab::io
