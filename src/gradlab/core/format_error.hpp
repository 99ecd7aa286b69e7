#pragma once
// The error of the file-format layers (io/safetensors_format, io/npy_format,
// io/checkpoint_format, data/csv_format): what is wrong and where in the file. Standard library
// only, so the fuzz targets build these layers alone with clang -fsanitize=fuzzer; the loaders turn
// it into a CorruptFileError / IOError that names the file.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gradlab {

/// A malformed file: what is wrong and the byte offset in the file where it shows.
class FormatError : public std::runtime_error {
 public:
  FormatError(const std::string& what, uint64_t offset)
      : std::runtime_error(what), offset_(offset) {}
  uint64_t offset() const { return offset_; }

 private:
  uint64_t offset_;
};

}  // namespace gradlab
