#include "gradlab/nn/module_state.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "gradlab/autograd/grad_mode.hpp"

namespace gradlab::nn {

namespace {

std::string join(const std::vector<std::string>& keys, size_t max_items = 50) {
  std::string s;
  for (size_t i = 0; i < keys.size() && i < max_items; ++i) s += (i ? ", " : "") + keys[i];
  if (keys.size() > max_items) s += ", ... (" + std::to_string(keys.size() - max_items) + " more)";
  return s;
}

// Candidate prefixes of a key set: "" and the first one or two dotted components.
std::set<std::string> prefixes(const std::vector<std::string>& keys) {
  std::set<std::string> out{""};
  for (const auto& k : keys) {
    size_t p = k.find('.');
    if (p == std::string::npos) continue;
    out.insert(k.substr(0, p + 1));
    size_t q = k.find('.', p + 1);
    if (q != std::string::npos) out.insert(k.substr(0, q + 1));
  }
  return out;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

StateDict module_state_dict(const Module& module) {
  StateDict sd;
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& [n, t] : m.named_parameters(/*recurse=*/false))
      sd.insert(prefix + n, t.detach());
    for (const auto& [n, t] : m.named_buffers(/*recurse=*/false)) sd.insert(prefix + n, t.detach());
  };
  add("", module);
  for (const auto& [name, sub] : module.named_modules()) add(name + ".", *sub);
  return sd;
}

LoadResult load_module_state_dict(Module& module, const StateDict& state, bool strict) {
  NamedTensors targets;
  auto add = [&](const std::string& prefix, const Module& m) {
    for (auto& [n, t] : m.named_parameters(false)) targets.emplace_back(prefix + n, t);
    for (auto& [n, t] : m.named_buffers(false)) targets.emplace_back(prefix + n, t);
  };
  add("", module);
  for (const auto& [name, sub] : module.named_modules()) add(name + ".", *sub);
  return load_named_tensors(targets, state, strict, module.name());
}

std::optional<PrefixRemap> find_prefix_remap(const std::vector<std::string>& missing,
                                             const std::vector<std::string>& unexpected) {
  if (missing.empty() || unexpected.empty()) return std::nullopt;
  const std::unordered_set<std::string> want(missing.begin(), missing.end());
  std::optional<PrefixRemap> best;
  for (const auto& from : prefixes(unexpected)) {
    for (const auto& to : prefixes(missing)) {
      if (from == to) continue;
      size_t hits = 0;
      for (const auto& u : unexpected)
        if (u.starts_with(from) && want.count(to + u.substr(from.size()))) ++hits;
      if (hits > 0 && (!best || hits > best->explained)) best = PrefixRemap{from, to, hits};
    }
  }
  return best;
}

LoadResult load_named_tensors(const NamedTensors& targets, const StateDict& state,
                                  bool strict, const std::string& who) {
  LoadResult result;
  std::vector<std::string> mismatches;
  std::unordered_set<std::string> expected;
  for (const auto& [key, target] : targets) {
    expected.insert(key);
    if (!state.contains(key)) {
      result.missing_keys.push_back(key);
      continue;
    }
    const Tensor& src = state.at(key);
    if (!src.defined()) {
      mismatches.push_back(key + ": expected " + target.describe() + ", got an undefined tensor");
    } else if (src.sizes() != target.sizes() || src.dtype() != target.dtype()) {
      mismatches.push_back(key + ": expected " + target.describe() + ", got " + src.describe());
    }
  }
  for (const auto& [key, t] : state)
    if (!expected.count(key)) result.unexpected_keys.push_back(key);

  const bool key_error = strict && !result.ok();
  if (key_error || !mismatches.empty()) {
    std::string what;
    if (key_error)
      what = std::to_string(result.missing_keys.size()) + " missing and " +
             std::to_string(result.unexpected_keys.size()) + " unexpected key(s)";
    if (!mismatches.empty())
      what += (what.empty() ? "" : " and ") + std::to_string(mismatches.size()) +
              " shape/dtype mismatch(es)";
    std::string msg = error_message("load_state_dict", what + " in state_dict for " + who,
                                    std::to_string(targets.size()) + " keys of the module",
                                    std::to_string(state.size()) + " keys in the dict");
    if (key_error && !result.missing_keys.empty())
      msg += "\n  missing keys: " + join(result.missing_keys);
    if (key_error && !result.unexpected_keys.empty())
      msg += "\n  unexpected keys: " + join(result.unexpected_keys);
    for (const auto& m : mismatches) msg += "\n  size/dtype mismatch for " + m;
    if (auto remap = find_prefix_remap(result.missing_keys, result.unexpected_keys)) {
      std::string example;
      for (const auto& u : result.unexpected_keys)
        if (u.starts_with(remap->from)) {
          example = "'" + u + "' -> '" + remap->to + u.substr(remap->from.size()) + "'";
          break;
        }
      const std::string call =
          remap->to.empty() ? "io::strip_prefix(dict, " + quoted(remap->from) + ")"
          : remap->from.empty()
              ? "io::add_prefix(dict, " + quoted(remap->to) + ")"
              : "io::remap_prefix(dict, " + quoted(remap->from) + ", " + quoted(remap->to) + ")";
      msg += "\n  hint: the keys differ only by a prefix: '" + remap->from + "' in the dict, '" +
             remap->to + "' in the module (" + std::to_string(remap->explained) + " of " +
             std::to_string(result.missing_keys.size()) + " missing keys match), e.g. " + example +
             "; load " + call + " instead";
    } else if (!mismatches.empty()) {
      msg += "\n  hint: was the model built with other sizes or dtype than the one saved?";
    } else {
      msg +=
          "\n  hint: pass strict=false to load the matching keys only (and check the "
          "returned missing_keys: those tensors keep their initial values)";
    }
    io::StateDictError err(msg);
    err.missing_keys = result.missing_keys;
    err.unexpected_keys = result.unexpected_keys;
    err.mismatches = mismatches;
    throw err;
  }

  NoGradGuard no_grad;
  for (const auto& [key, target] : targets) {
    if (!state.contains(key)) continue;
    Tensor dst = target;
    dst.copy_(state.at(key));
  }
  return result;
}

}  // namespace gradlab::nn
