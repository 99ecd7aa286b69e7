#pragma once
// A checkpoint's layout inside its safetensors file, without tensors: which part each tensor
// belongs to and what the metadata says (see checkpoint.hpp for the keys). Standard library
// only, so the fuzz target (checks/io/fuzz/checkpoint_fuzz.cpp) builds it alone with clang.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gradlab/core/format_error.hpp"

namespace gradlab::io::checkpoint {

inline constexpr const char* kFormatKey = "gradlab.format";
inline constexpr const char* kFormat = "checkpoint-v1";
/// The parts, in the order the file stores them: tensors "<part>/<key>".
inline constexpr const char* kParts[] = {"model", "optimizer", "scheduler", "scaler"};

/// The DataLoader position a checkpoint holds.
struct Loader {
  uint64_t seed = 0, epoch = 0, position = 0;
};

/// What a checkpoint's table says.
struct Layout {
  int64_t epoch = 0, step = 0;
  std::optional<Loader> loader;
  std::map<std::string, std::string> rng;   ///< "gradlab.rng.<name>"
  std::map<std::string, std::string> user;  ///< "user.<key>"
  /// part -> its own metadata ("gradlab.<part>.meta.<key>").
  std::map<std::string, std::map<std::string, std::string>> part_meta;
  /// For each tensor name, in order: (part, key within the part).
  std::vector<std::pair<std::string, std::string>> tensors;
};

/// Validates the tensor names and metadata of a checkpoint file. Throws FormatError (offset 8:
/// the header) when it is not a checkpoint, a tensor belongs to no part, or a counter is not an
/// integer.
Layout parse(const std::vector<std::string>& tensor_names,
             const std::map<std::string, std::string>& metadata);

}  // namespace gradlab::io::checkpoint
