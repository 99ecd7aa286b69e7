// libFuzzer target for checkpoint files: the safetensors layer (io/safetensors_format.cpp) and
// the checkpoint layout on top of it (io/checkpoint_format.cpp: parts, counters, loader
// position, metadata). Built with clang -fsanitize=fuzzer,address,undefined from those two files
// alone; run by the `slow` ctest fuzz_checkpoint.
//
// Beyond "no crash": errors point inside the file; an accepted layout has one (part, key) per
// tensor, each part one of model / optimizer / scheduler; the checksum (when there is one) is
// computed over the accepted file without reading out of bounds.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "gradlab/io/checkpoint_format.hpp"
#include "gradlab/io/safetensors_format.hpp"

namespace st = gradlab::io::safetensors;
namespace ck = gradlab::io::checkpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  st::Header h;
  try {
    h = st::parse(data, size);
  } catch (const gradlab::FormatError& e) {
    FUZZ_CHECK(e.offset() <= size + 8);
    return 0;
  }
  // The checksum, as load_checkpoint verifies it (a mismatch is an error, never a crash).
  auto sum = h.metadata.find(st::kChecksumKey);
  if (sum != h.metadata.end()) {
    try {
      const uint64_t want = st::parse_checksum(sum->second, 8);
      uint64_t digest = st::table_digest(h.entries, h.metadata);
      for (const st::Entry* e : st::by_offset(h))
        digest = st::fnv1a64(data + h.data_start + e->begin, e->end - e->begin, digest);
      (void)(digest == want);
    } catch (const gradlab::FormatError& e) {
      FUZZ_CHECK(e.offset() <= size);
    }
  }
  std::vector<std::string> names;
  for (const st::Entry& e : h.entries) names.push_back(e.name);
  ck::Layout l;
  try {
    l = ck::parse(names, h.metadata);
  } catch (const gradlab::FormatError& e) {
    FUZZ_CHECK(e.offset() == 8);
    return 0;
  }
  FUZZ_CHECK(l.tensors.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& [part, key] = l.tensors[i];
    FUZZ_CHECK(part == "model" || part == "optimizer" || part == "scheduler");
    FUZZ_CHECK(names[i] == part + "/" + key);
  }
  for (const auto& [part, meta] : l.part_meta)
    FUZZ_CHECK(part == "model" || part == "optimizer" || part == "scheduler");
  return 0;
}
