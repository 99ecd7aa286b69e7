#pragma once
// StateDict <-> safetensors files (https://github.com/huggingface/safetensors), the format
// PyTorch users share weights in: a PyTorch user can read a gradlab file with the safetensors
// library, and gradlab reads theirs.
//
// gradlab adds a checksum to the metadata ("gradlab.checksum": FNV-1a 64 over the tensor table,
// the metadata and the data), verified on load. Loading validates everything before trusting
// it: a truncated, corrupted or foreign file gives a CorruptFileError naming the file and the
// byte offset, never a crash, a huge allocation or wrong tensors.
//
// dtypes: F32, F64, I64, BOOL, F16, BF16 round-trip; I32, I16, I8, U8, U16, U32 from other
// tools load widened to int64.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "gradlab/core/error.hpp"
#include "gradlab/core/state_dict.hpp"

namespace gradlab::io {

/// A file that is not a valid (or not an intact) safetensors / npy / checkpoint file.
class CorruptFileError : public IOError {
 public:
  CorruptFileError(const std::string& message, std::filesystem::path path, uint64_t offset)
      : IOError(message), path_(std::move(path)), offset_(offset) {}
  const std::filesystem::path& path() const { return path_; }
  /// Byte offset in the file where the problem shows.
  uint64_t offset() const { return offset_; }

 private:
  std::filesystem::path path_;
  uint64_t offset_;
};

/// How files are written.
struct SaveOptions {
  /// Store gradlab.checksum in the metadata.
  bool checksum = true;
  /// fsync the file and its directory (crash safety against power loss, not only kills).
  bool durable = true;
};

/// How files are read.
struct LoadOptions {
  /// Check gradlab.checksum when the file has one.
  bool verify_checksum = true;
  /// Refuse files without a checksum (files from other tools have none).
  bool require_checksum = false;
};

/// Writes `dict` (tensors in its order, its metadata as __metadata__), crash-safely.
/// Tensors are saved from their CPU, contiguous, detached values.
void save_safetensors(const StateDict& dict, const std::filesystem::path& path,
                      const SaveOptions& options = {});
/// Reads a whole file; the keys keep the header's order; metadata comes back without
/// gradlab.checksum.
StateDict load_safetensors(const std::filesystem::path& path, const LoadOptions& options = {});

/// The bytes save_safetensors would write.
std::string to_safetensors_bytes(const StateDict& dict, bool checksum = true);
/// Parses bytes in memory; `shown_name` is what errors call them.
StateDict from_safetensors_bytes(std::string_view bytes, const LoadOptions& options = {},
                                 const std::string& shown_name = "<memory>");

}  // namespace gradlab::io
