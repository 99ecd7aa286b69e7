// libFuzzer target for the CSV reader's untrusted part (data/csv_format.cpp): gzip inflation
// (one or more members, capped) and the parser. Built with clang -fsanitize=fuzzer,address,
// undefined from that file alone (+ zlib); run by the `slow` ctest fuzz_csv.
//
// Beyond "no crash": the text never exceeds the cap set by the file size; an inflation error's
// offset lies inside the file; a parse error names a line that exists and a column inside it;
// an accepted table holds rows x cols values.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "gradlab/data/csv_format.hpp"

namespace csv = gradlab::data::csv;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text;
  const uint64_t cap = csv::max_text_size(size);
  try {
    text = csv::decompress(data, size, cap);
  } catch (const gradlab::FormatError& e) {
    FUZZ_CHECK(e.offset() <= size || e.offset() == cap);
    return 0;
  }
  FUZZ_CHECK(text.size() <= cap);
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  for (bool header : {false, true}) {
    for (char delim : {',', ';'}) {
      try {
        const csv::Table t = csv::parse(text, delim, header);
        FUZZ_CHECK(t.values.size() == t.rows * t.cols);
        FUZZ_CHECK(!header || t.rows == 0 || !t.columns.empty());
      } catch (const csv::ParseError& e) {
        FUZZ_CHECK(e.line() >= 1 && e.line() <= lines);
        FUZZ_CHECK(e.column() <= text.size() + 1);
      }
    }
  }
  return 0;
}
