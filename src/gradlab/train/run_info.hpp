#pragma once
// What identifies a training run: the seed, the configuration and the git commit of the code.
// History writes it into its CSV header and a JSON sidecar; Monitor passes it to TensorBoard's
// HParams tab (SummaryWriter::add_hparams).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "gradlab/nn/arg.hpp"

namespace gradlab::train {

/// One configuration or hyper-parameter value: a number, a string or a bool (as in PyTorch's
/// add_hparams). Integers are stored as double (exact up to 2^53).
struct HParam {
  std::variant<double, std::string, bool> value;
  HParam(double v) : value(v) {}  // NOLINT: implicit on purpose: {{"lr", 0.1}, {"opt", "sgd"}}
  HParam(int v) : value(static_cast<double>(v)) {}
  HParam(long v) : value(static_cast<double>(v)) {}
  HParam(long long v) : value(static_cast<double>(v)) {}
  HParam(unsigned long v) : value(static_cast<double>(v)) {}
  HParam(unsigned long long v) : value(static_cast<double>(v)) {}
  HParam(bool v) : value(v) {}
  HParam(std::string v) : value(std::move(v)) {}
  HParam(const char* v) : value(std::string(v)) {}
  /// "0.05", "sgd", "true" (numbers with up to 17 significant digits, shortest first).
  std::string str() const;
};

/// The commit of the source tree gradlab was configured from ("unknown" outside a git checkout).
/// NOTE: read by CMake at configure time; re-run cmake after committing to refresh it.
std::string git_commit();

/// Seed, configuration and commit of one run.
/// Configuration values by name (sorted, as printed and written).
using Config = std::map<std::string, HParam>;

/// RunInfo().seed(0).config({{"lr", 0.05}, {"batch_size", 64}})
struct RunInfo {
  GRADLAB_ARG(std::optional<uint64_t>, seed);
  GRADLAB_ARG(Config, config);
  GRADLAB_ARG(std::string, commit) = git_commit();
};

}  // namespace gradlab::train
