// nn::Functional, nn::ModuleList, nn::ModuleDict (nn/containers.hpp).

#include "gradlab/nn/containers.hpp"

#include <ostream>

namespace gradlab::nn {

FunctionalImpl::FunctionalImpl(Function function) : function_(std::move(function)) {
  GRADLAB_CHECK(function_ != nullptr, ValueError, "Functional", "the function is empty",
                "a callable Tensor -> Tensor", "an empty std::function");
}
Tensor FunctionalImpl::forward(const Tensor& input) { return function_(input); }
void FunctionalImpl::pretty_print(std::ostream& os) const { os << "Functional()"; }

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  GRADLAB_CHECK(module != nullptr, ValueError, "ModuleList::push_back", "the module is null",
                "a constructed module", "nullptr");
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}
std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  GRADLAB_CHECK(index < modules_.size(), ValueError, "ModuleList",
                "index " + std::to_string(index) + " is out of range",
                "an index < " + std::to_string(modules_.size()), std::to_string(index),
                modules_.empty() ? "the list is empty: push_back modules first" : "");
  return modules_[index];
}
void ModuleListImpl::pretty_print(std::ostream& os) const { os << "ModuleList"; }

void ModuleDictImpl::update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [k, m] : modules) insert(k, m);
}
void ModuleDictImpl::insert(const std::string& key, std::shared_ptr<Module> module) {
  GRADLAB_CHECK(module != nullptr, ValueError, "ModuleDict", "module '" + key + "' is null",
                "a constructed module", "nullptr");
  for (auto& item : items_)
    if (item.first == key) {
      replace_module(key, module);
      item.second = std::move(module);
      return;
    }
  bool registered = false;
  for (const auto& [n, m] : named_children()) registered = registered || n == key;
  if (registered) replace_module(key, module);  // popped or cleared earlier: still registered
  else register_module(key, module);
  items_.emplace_back(key, std::move(module));
}
std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  for (const auto& item : items_)
    if (item.first == key) return item.second;
  std::string known;
  for (size_t i = 0; i < items_.size() && i < 8; ++i) known += (i ? ", \"" : "\"") + items_[i].first + "\"";
  GRADLAB_CHECK(false, ValueError, "ModuleDict", "there is no module '" + key + "'",
                items_.empty() ? std::string("a key of an empty dict") : "one of " + known, "\"" + key + "\"",
                "check with contains(key) first");
  return nullptr;
}
std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  std::shared_ptr<Module> m = (*this)[key];
  for (auto it = items_.begin(); it != items_.end(); ++it)
    if (it->first == key) {
      items_.erase(it);
      break;
    }
  return m;
}
bool ModuleDictImpl::contains(const std::string& key) const noexcept {
  for (const auto& item : items_)
    if (item.first == key) return true;
  return false;
}
std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> k;
  for (const auto& item : items_) k.push_back(item.first);
  return k;
}
std::vector<std::shared_ptr<Module>> ModuleDictImpl::values() const {
  std::vector<std::shared_ptr<Module>> v;
  for (const auto& item : items_) v.push_back(item.second);
  return v;
}
std::vector<std::pair<std::string, std::shared_ptr<Module>>> ModuleDictImpl::items() const {
  return {items_.begin(), items_.end()};
}
void ModuleDictImpl::pretty_print(std::ostream& os) const { os << "ModuleDict"; }

}  // namespace gradlab::nn
