// libFuzzer target for the .npy parser (io/npy_format.cpp, the part of load_npy that reads
// untrusted bytes). Built with clang -fsanitize=fuzzer,address,undefined from that file alone;
// run by the `slow` ctest fuzz_npy.
//
// Beyond "no crash": an error's offset lies inside the file; an accepted file's data section
// is exactly shape x width bytes at the end of the file, and a bool holds only 0 or 1.

#include <cstddef>
#include <cstdint>

#include "fuzz_check.hpp"
#include "gradlab/io/npy_format.hpp"

namespace npy = gradlab::io::npy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npy::Header h;
  try {
    h = npy::parse(data, size);
  } catch (const gradlab::FormatError& e) {
    FUZZ_CHECK(e.offset() <= size);
    return 0;
  }
  FUZZ_CHECK(h.data_start <= size && h.data_start + h.nbytes == size);
  uint64_t numel = 1;
  for (int64_t d : h.shape) {
    FUZZ_CHECK(d >= 0);
    numel *= static_cast<uint64_t>(d);
  }
  FUZZ_CHECK(numel == h.numel && numel * static_cast<uint64_t>(h.width) == h.nbytes);
  FUZZ_CHECK(h.width == 1 || h.width == 2 || h.width == 4 || h.width == 8);
  if (h.kind == 'b')
    for (uint64_t i = 0; i < h.nbytes; ++i) FUZZ_CHECK(data[h.data_start + i] <= 1);
  return 0;
}
