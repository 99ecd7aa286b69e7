#pragma once
// Checkpoints: everything a training run needs to continue exactly where it stopped, in one
// crash-safe safetensors file.
//
//   io::Checkpoint c;
//   c.model = model->state_dict();  c.optimizer = optimizer.state_dict();
//   c.epoch = epoch;  c.step = step;  c.loader = loader.state();  c.capture_rng();
//   io::save_checkpoint(c, "run/last.safetensors");
//   ...
//   io::Checkpoint r = io::load_checkpoint("run/last.safetensors");
//   model->load_state_dict(r.model);  optimizer.load_state_dict(r.optimizer);
//   loader.load_state(*r.loader);  r.restore_rng();
//
// File layout: tensors "model/<key>", "optimizer/<key>", "scheduler/<key>", "scaler/<key>"; metadata
// "gradlab.format" = "checkpoint-v1", "gradlab.epoch", "gradlab.step", "gradlab.rng.<name>",
// "gradlab.loader.{seed,epoch,position}", "gradlab.<part>.meta.<key>" (each part's own
// metadata), "user.<key>" (free-form), plus gradlab.checksum.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gradlab/core/state_dict.hpp"
#include "gradlab/data/dataloader.hpp"
#include "gradlab/io/safetensors.hpp"

namespace gradlab::io {

/// Model, optimizer and scheduler state, counters, RNG states, loader position and notes.
struct Checkpoint {
  StateDict model;
  StateDict optimizer;
  StateDict scheduler;
  /// amp::GradScaler::state_dict() (scale, growth tracker, factors); empty without mixed precision.
  StateDict scaler;
  int64_t epoch = 0;
  int64_t step = 0;
  /// Named generator states (Generator::get_state()); "default" is default_generator().
  std::map<std::string, std::string> rng;
  /// The DataLoader's seed, epoch and position.
  std::optional<data::LoaderState> loader;
  /// Free-form notes (config, git hash, metrics...).
  std::map<std::string, std::string> metadata;

  /// rng["default"] = default_generator().get_state().
  void capture_rng();
  /// default_generator().set_state(rng["default"]) (error when it was not captured).
  void restore_rng() const;
};

/// Writes `checkpoint` to `path` crash-safely (temporary file, fsync, rename, fsync directory).
void save_checkpoint(const Checkpoint& checkpoint, const std::filesystem::path& path,
                     const SaveOptions& options = {});
/// Reads and verifies a checkpoint (checksum required: gradlab wrote it).
Checkpoint load_checkpoint(const std::filesystem::path& path);

/// Numbered checkpoints in a directory, keeping the last `keep_last` (0 = all):
/// <dir>/<stem>-<step, 10 digits>.safetensors.
class CheckpointManager {
 public:
  explicit CheckpointManager(std::filesystem::path dir, std::string stem = "ckpt",
                             size_t keep_last = 0);
  /// Saves under the checkpoint's step, then deletes the oldest beyond keep_last and any
  /// temporaries left by killed processes. Returns the new file.
  std::filesystem::path save(const Checkpoint& checkpoint, const SaveOptions& options = {});
  /// Checkpoint files, oldest (lowest step) first.
  std::vector<std::filesystem::path> list() const;
  /// The newest checkpoint that loads and verifies (older ones are tried when a newer one is
  /// damaged); nullopt when the directory has none.
  std::optional<Checkpoint> load_latest() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::string stem_;
  size_t keep_last_;
};

}  // namespace gradlab::io
