#pragma once
// The safetensors file format, without tensors: parse and validate a header, make one, and the
// FNV-1a checksum gradlab stores in it. Depends only on the standard library (plus nlohmann-json
// inside the .cpp), so the fuzz target builds it alone with clang -fsanitize=fuzzer.
//
// Layout: [8 bytes: N, little-endian u64][N bytes: JSON header][data section]
//   header = {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//             "__metadata__": {"<key>": "<string>", ...}}      (offsets relative to the data)
// Valid means: N fits the file; the JSON is an object without duplicate keys; every entry has
// exactly those three fields with a known dtype, a shape of non-negative integers whose
// product times the dtype size equals end - begin (no overflow); sorted by offset, the entries
// tile the data section exactly (no overlap, no hole, nothing past the end).

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gradlab/core/format_error.hpp"

namespace gradlab::io::safetensors {

/// Headers larger than this are refused before anything is allocated (safetensors' own limit).
inline constexpr uint64_t kMaxHeaderSize = 100'000'000;
/// The metadata key holding gradlab's checksum: "fnv1a64:<16 hex digits>".
inline constexpr const char* kChecksumKey = "gradlab.checksum";
/// How a checksum value starts. No other metadata value may start so: that is how a damaged
/// checksum key is recognized.
inline constexpr std::string_view kChecksumPrefix = "fnv1a64:";

/// A malformed file: what is wrong and the byte offset in the file where it shows.
using FormatError = gradlab::FormatError;

/// One tensor's entry in the header.
struct Entry {
  std::string name;
  std::string dtype;  // "F32", "F64", "I64", "BOOL", "F16", "BF16", "I32", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the data section
};

/// A validated header.
struct Header {
  std::vector<Entry> entries;  // in the order the header lists them
  std::map<std::string, std::string> metadata;
  uint64_t header_size = 0;  // N
  uint64_t data_start = 0;   // 8 + N: file offset of the data section
  uint64_t data_size = 0;    // file size - data_start
};

/// Bytes per element of a safetensors dtype name; 0 for a name this format layer does not know.
size_t dtype_size(std::string_view dtype);
/// The header length N from the first 8 bytes, checked against the file size and kMaxHeaderSize.
uint64_t read_header_size(const unsigned char* first8, uint64_t file_size);
/// Parses and validates the N header bytes of a file of `file_size` bytes.
Header parse_header(std::string_view json, uint64_t file_size);
/// read_header_size + parse_header on a whole file in memory.
Header parse(const unsigned char* file, size_t size);
/// Entries sorted by data offset (the order of the bytes in the data section).
std::vector<const Entry*> by_offset(const Header& header);

/// The header bytes (JSON padded with spaces so that 8 + N is a multiple of 8) for `entries`
/// (listed in that order) and `metadata`. Throws FormatError on a name or metadata string that
/// is not valid UTF-8.
std::string make_header(const std::vector<Entry>& entries,
                        const std::map<std::string, std::string>& metadata);

/// FNV-1a, 64 bit, continued from `h`. A change of any single byte always changes the result
/// (each step is a bijection of the state).
inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
uint64_t fnv1a64(const void* data, size_t n, uint64_t h = kFnvOffset);
/// The checksum's start: a digest of the tensor table (names, dtypes, shapes, offsets) and of
/// the metadata except the checksum itself; the data section's bytes follow in file order.
uint64_t table_digest(const std::vector<Entry>& entries,
                      const std::map<std::string, std::string>& metadata);
/// "fnv1a64:00112233aabbccdd"
std::string format_checksum(uint64_t h);
/// The value of a checksum string; throws FormatError (offset `where`) when malformed.
uint64_t parse_checksum(const std::string& s, uint64_t where);

/// Checks that the bytes of a BOOL tensor are all 0 or 1 (anything else is not a C++ bool).
/// Returns the index of the first bad byte, or n when all are fine.
size_t first_bad_bool(const unsigned char* bytes, size_t n);

}  // namespace gradlab::io::safetensors
