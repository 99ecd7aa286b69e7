#pragma once
// TFRecord framing, the container of TensorBoard event files, and a reader for it.
//
// One record on disk (all integers little-endian):
//   uint64 length | uint32 masked_crc32c(length bytes) | length bytes of data | uint32 masked_crc32c(data)
// CRC32C is the Castagnoli polynomial (reflected 0x82F63B78), and the stored value is "masked":
//   masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8        (mod 2^32)
// so that a CRC computed over data that itself holds CRCs does not cancel out.
//
// NOTE: a writer appends each record with one write(2) call (SummaryWriter), so a process
// killed at any moment leaves whole records plus at most one partial record at the end;
// read_tfrecords() returns the whole ones and reports the partial tail.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradlab::train {

/// CRC32C (Castagnoli) of `n` bytes, continuing from `crc` (0 for a fresh checksum).
/// crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
inline uint32_t crc32c(std::string_view s) { return crc32c(s.data(), s.size()); }

/// The masked CRC32C that TFRecord stores: ((c >> 15) | (c << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view s);

/// One framed record: length, its masked CRC, the payload, the payload's masked CRC.
std::string tfrecord_frame(std::string_view payload);

/// What read_tfrecords found in a file.
struct TFRecordScan {
  std::vector<std::string> records;  ///< payloads of every complete record with valid CRCs
  size_t valid_bytes = 0;            ///< bytes covered by those records
  size_t file_bytes = 0;
  bool truncated_tail = false;  ///< the file ends inside a record (a killed writer)
  bool corrupt = false;         ///< a CRC did not match: reading stopped there
  std::string problem;          ///< what stopped the scan early (empty when nothing did)
};

/// Reads every complete record of a TFRecord file in order; stops at a partial tail or a bad
/// CRC (and says which in the result). IOError when the file cannot be opened.
TFRecordScan read_tfrecords(const std::string& path);

}  // namespace gradlab::train
