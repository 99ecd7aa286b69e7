#include "gradlab/train/tfrecord.hpp"

#include <array>
#include <fstream>
#include <iterator>

#include "gradlab/core/error.hpp"

namespace gradlab::train {
namespace {

// Byte-at-a-time table for the reflected Castagnoli polynomial 0x82F63B78. 256 entries, built
// once at compile time; speed is no concern here (a few records per training step).
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}

uint64_t get_le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;  // pre- and post-inversion, as in the standard (iSCSI) definition
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(std::string_view s) {
  const uint32_t c = crc32c(s);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord_frame(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  put_le(out, payload.size(), 8);
  put_le(out, masked_crc32c(std::string_view(out.data(), 8)), 4);
  out.append(payload);
  put_le(out, masked_crc32c(payload), 4);
  return out;
}

TFRecordScan read_tfrecords(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  GRADLAB_CHECK(f.good(), IOError, "read_tfrecords", "cannot open the file", "a readable file",
                path);
  const std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  TFRecordScan scan;
  scan.file_bytes = s.size();
  size_t at = 0;
  while (at < s.size()) {
    if (s.size() - at < 12) {
      scan.truncated_tail = true;
      scan.problem = "the file ends inside a record header at byte " + std::to_string(at);
      break;
    }
    const uint64_t len = get_le(s, at, 8);
    if (static_cast<uint32_t>(get_le(s, at + 8, 4)) !=
        masked_crc32c(std::string_view(s.data() + at, 8))) {
      scan.corrupt = true;
      scan.problem = "bad length CRC at byte " + std::to_string(at);
      break;
    }
    if (len > s.size() - at - 12 || s.size() - at - 12 - len < 4) {
      scan.truncated_tail = true;
      scan.problem = "the file ends inside the record at byte " + std::to_string(at);
      break;
    }
    const std::string_view payload(s.data() + at + 12, len);
    if (static_cast<uint32_t>(get_le(s, at + 12 + len, 4)) != masked_crc32c(payload)) {
      scan.corrupt = true;
      scan.problem = "bad data CRC in the record at byte " + std::to_string(at);
      break;
    }
    scan.records.emplace_back(payload);
    at += 16 + len;
    scan.valid_bytes = at;
  }
  return scan;
}

}  // namespace gradlab::train
