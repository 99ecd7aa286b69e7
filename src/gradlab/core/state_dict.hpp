#pragma once
// An ordered name -> tensor map: what Module::state_dict(), Optimizer::state_dict() and
// scheduler state produce, and what gradlab::save / load read and write.
// Keys keep insertion order (like Python's OrderedDict), so files and printouts are stable.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/core/error.hpp"
#include "gradlab/core/tensor.hpp"

namespace gradlab {

/// Ordered string -> Tensor dictionary, plus free-form string metadata.
class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  /// Adds or replaces `key` (a new key goes last).
  void insert(const std::string& key, Tensor value) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      items_[it->second].second = std::move(value);
      return;
    }
    index_.emplace(key, items_.size());
    items_.emplace_back(key, std::move(value));
  }
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  /// The tensor under `key`; throws ValueError listing a few keys when it is missing.
  const Tensor& at(const std::string& key) const {
    auto it = index_.find(key);
    if (it == index_.end()) {
      std::string some;
      for (size_t i = 0; i < items_.size() && i < 8; ++i) some += (i ? ", " : "") + items_[i].first;
      throw ValueError(error_message("StateDict", "no key '" + key + "'", "one of: " + some,
                                     "'" + key + "'"));
    }
    return items_[it->second].second;
  }
  Tensor& operator[](const std::string& key) {
    if (!contains(key)) insert(key, Tensor());
    return items_[index_.at(key)].second;
  }
  /// Removes `key` if present.
  void erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
    rebuild();
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& [name, t] : items_) k.push_back(name);
    return k;
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

  /// Free-form string metadata (safetensors' "__metadata__").
  std::map<std::string, std::string> metadata;

 private:
  void rebuild() {
    index_.clear();
    for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  }
  std::vector<Item> items_;
  std::map<std::string, size_t> index_;
};

}  // namespace gradlab

namespace gradlab::io {

/// load_state_dict found problems: missing / unexpected keys (strict), shape or dtype mismatches.
/// what() lists every one of them; the fields hold them for programs.
/// NOTE: declared here, under its public name io::StateDictError, because nn::Module's
/// load_state_dict throws it and nn/ ranks below io/ (docs/layers.md).
class StateDictError : public Error {
 public:
  using Error::Error;
  std::vector<std::string> missing_keys, unexpected_keys;
  /// "key: expected [10, 64] float32, got [10, 32] float32" for each mismatch.
  std::vector<std::string> mismatches;
};

}  // namespace gradlab::io
