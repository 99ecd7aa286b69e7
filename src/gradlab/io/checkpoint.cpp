#include "gradlab/io/checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "gradlab/core/generator.hpp"
#include "gradlab/io/atomic_file.hpp"
#include "gradlab/io/checkpoint_format.hpp"

namespace gradlab::io {

namespace fs = std::filesystem;

namespace {

using checkpoint::kFormat;
using checkpoint::kFormatKey;
using checkpoint::kParts;

StateDict* part(Checkpoint& c, const std::string& name) {
  if (name == "model") return &c.model;
  if (name == "optimizer") return &c.optimizer;
  if (name == "scaler") return &c.scaler;
  return &c.scheduler;
}
const StateDict& part(const Checkpoint& c, const std::string& name) {
  return *part(const_cast<Checkpoint&>(c), name);
}

}  // namespace

void Checkpoint::capture_rng() { rng["default"] = default_generator().get_state(); }

void Checkpoint::restore_rng() const {
  auto it = rng.find("default");
  GRADLAB_CHECK(it != rng.end(), ValueError, "Checkpoint::restore_rng",
                "the checkpoint holds no default generator state", "rng[\"default\"]", "none",
                "call capture_rng() before saving");
  default_generator().set_state(it->second);
}

void save_checkpoint(const Checkpoint& c, const fs::path& path, const SaveOptions& options) {
  StateDict all;
  for (const char* p : kParts) {
    const StateDict& d = part(c, p);
    for (const auto& [k, t] : d) all.insert(std::string(p) + "/" + k, t);
    for (const auto& [k, v] : d.metadata)
      all.metadata["gradlab." + std::string(p) + ".meta." + k] = v;
  }
  all.metadata[kFormatKey] = kFormat;
  all.metadata["gradlab.epoch"] = std::to_string(c.epoch);
  all.metadata["gradlab.step"] = std::to_string(c.step);
  for (const auto& [name, state] : c.rng) all.metadata["gradlab.rng." + name] = state;
  if (c.loader) {
    all.metadata["gradlab.loader.seed"] = std::to_string(c.loader->seed);
    all.metadata["gradlab.loader.epoch"] = std::to_string(c.loader->epoch);
    all.metadata["gradlab.loader.position"] = std::to_string(c.loader->position);
  }
  for (const auto& [k, v] : c.metadata) all.metadata["user." + k] = v;
  SaveOptions o = options;
  o.checksum = true;
  save_safetensors(all, path, o);
}

Checkpoint load_checkpoint(const fs::path& path) {
  LoadOptions lo;
  lo.require_checksum = true;
  StateDict all = load_safetensors(path, lo);
  std::vector<std::string> names;
  for (const auto& [key, t] : all) names.push_back(key);
  checkpoint::Layout l;
  try {
    l = checkpoint::parse(names, all.metadata);
  } catch (const FormatError& e) {
    throw CorruptFileError(error_message("load_checkpoint", "'" + path.string() + "': " + e.what() +
                                                                " (at byte offset " +
                                                                std::to_string(e.offset()) + ")"),
                           path, e.offset());
  }
  Checkpoint c;
  size_t k = 0;
  for (const auto& [key, t] : all) {
    const auto& [p, name] = l.tensors[k++];
    part(c, p)->insert(name, t);
  }
  c.epoch = l.epoch;
  c.step = l.step;
  if (l.loader) c.loader = data::LoaderState{l.loader->seed, l.loader->epoch, l.loader->position};
  c.rng = std::move(l.rng);
  c.metadata = std::move(l.user);
  for (auto& [p, meta] : l.part_meta)
    for (auto& [k2, v] : meta) part(c, p)->metadata[k2] = v;
  return c;
}

CheckpointManager::CheckpointManager(fs::path dir, std::string stem, size_t keep_last)
    : dir_(std::move(dir)), stem_(std::move(stem)), keep_last_(keep_last) {
  fs::create_directories(dir_);
}

std::vector<fs::path> CheckpointManager::list() const {
  std::vector<std::pair<int64_t, fs::path>> found;
  const std::string pre = stem_ + "-", suf = ".safetensors";
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string n = e.path().filename().string();
    if (!n.starts_with(pre) || !n.ends_with(suf) || n.size() <= pre.size() + suf.size()) continue;
    const std::string num = n.substr(pre.size(), n.size() - pre.size() - suf.size());
    int64_t step = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), step);
    if (ec == std::errc() && end == num.data() + num.size()) found.emplace_back(step, e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

fs::path CheckpointManager::save(const Checkpoint& c, const SaveOptions& options) {
  char num[32];
  std::snprintf(num, sizeof num, "%010lld", static_cast<long long>(c.step));
  const fs::path path = dir_ / (stem_ + "-" + num + ".safetensors");
  save_checkpoint(c, path, options);
  if (keep_last_ > 0) {
    auto all = list();
    for (size_t i = 0; i + keep_last_ < all.size(); ++i) fs::remove(all[i]);
  }
  remove_stale_temporaries(dir_, stem_ + "-");
  return path;
}

std::optional<Checkpoint> CheckpointManager::load_latest() const {
  auto all = list();
  std::string failures;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      return load_checkpoint(*it);
    } catch (const IOError& e) {
      failures += std::string("\n  ") + e.what();
    }
  }
  if (all.empty()) return std::nullopt;
  throw IOError(error_message("CheckpointManager::load_latest",
                              "no checkpoint in '" + dir_.string() + "' loads:" + failures));
}

}  // namespace gradlab::io
