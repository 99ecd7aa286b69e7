// libFuzzer target for the safetensors header parser and validator (the part of the loader
// that reads untrusted bytes). Built with clang -fsanitize=fuzzer,address,undefined from
// io/safetensors_format.cpp alone; run by the `slow` ctest fuzz_safetensors.
//
// Beyond "no crash": when a file is accepted, every entry lies inside the file, its byte count
// is shape x dtype size, the entries tile the data exactly, and writing the header again and
// parsing it gives the same entries.

#include <cstddef>
#include <cstdint>

#include "gradlab/io/safetensors_format.hpp"

#include "fuzz_check.hpp"

namespace st = gradlab::io::safetensors;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  st::Header h;
  try {
    h = st::parse(data, size);
  } catch (const st::FormatError& e) {
    FUZZ_CHECK(e.offset() <= size + 8);
    return 0;
  }
  FUZZ_CHECK(h.data_start + h.data_size == size);
  uint64_t covered = 0;
  for (const st::Entry* e : st::by_offset(h)) {
    FUZZ_CHECK(e->begin == covered && e->end >= e->begin && e->end <= h.data_size);
    uint64_t n = st::dtype_size(e->dtype);
    for (int64_t d : e->shape) n *= static_cast<uint64_t>(d);
    FUZZ_CHECK(n == e->end - e->begin);
    covered = e->end;
    if (e->dtype == "BOOL")
      (void)st::first_bad_bool(data + h.data_start + e->begin, e->end - e->begin);
  }
  FUZZ_CHECK(covered == h.data_size);
  // The checksum over an accepted file never reads out of bounds.
  uint64_t digest = st::table_digest(h.entries, h.metadata);
  for (const st::Entry* e : st::by_offset(h))
    digest = st::fnv1a64(data + h.data_start + e->begin, e->end - e->begin, digest);
  (void)digest;
  // Re-serialize and re-parse: same entries.
  std::string header;
  try {
    header = st::make_header(h.entries, h.metadata);
  } catch (const st::FormatError&) {
    return 0;  // names that are not valid UTF-8 are refused on writing
  }
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header;
  file.append(reinterpret_cast<const char*>(data) + h.data_start, h.data_size);
  st::Header again = st::parse(reinterpret_cast<const unsigned char*>(file.data()), file.size());
  FUZZ_CHECK(again.entries.size() == h.entries.size());
  for (size_t i = 0; i < h.entries.size(); ++i) {
    FUZZ_CHECK(again.entries[i].name == h.entries[i].name);
    FUZZ_CHECK(again.entries[i].dtype == h.entries[i].dtype);
    FUZZ_CHECK(again.entries[i].shape == h.entries[i].shape);
    FUZZ_CHECK(again.entries[i].begin == h.entries[i].begin &&
               again.entries[i].end == h.entries[i].end);
  }
  FUZZ_CHECK(again.metadata == h.metadata);
  return 0;
}
