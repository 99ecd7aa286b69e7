#pragma once
// CSV of numbers without tensors: gzip inflation and parsing of the text. Standard library and
// zlib only, so the fuzz target (checks/io/fuzz/csv_fuzz.cpp) builds it alone with clang.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gradlab/core/format_error.hpp"

namespace gradlab::data::csv {

/// The bytes as text: gzip (magic 1f 8b, one member or several) is inflated, anything else is
/// returned as it is. More than `max_output` bytes of text is an error (a gzip bomb), as is a
/// truncated or damaged stream; FormatError's offset is the byte of the compressed file.
std::string decompress(const unsigned char* data, size_t size, uint64_t max_output);

/// The largest text decompress() is allowed to make from `size` bytes: deflate packs at most
/// 1032 bytes into one, so no well-formed file needs more.
inline uint64_t max_text_size(uint64_t size) { return 1032 * size + 65536; }

/// A bad line: its number (from 1), the field's column (from 1; 0 for the whole line), what is
/// wrong, what was expected and what was found.
class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& what, size_t line, size_t column, std::string expected,
             std::string got)
      : std::runtime_error(what),
        line_(line),
        column_(column),
        expected_(std::move(expected)),
        got_(std::move(got)) {}
  size_t line() const { return line_; }
  size_t column() const { return column_; }
  const std::string& expected() const { return expected_; }
  const std::string& got() const { return got_; }

 private:
  size_t line_, column_;
  std::string expected_, got_;
};

/// A parsed table: `rows` x `cols` values, row-major; column names when there is a header.
struct Table {
  std::vector<std::string> columns;
  std::vector<double> values;
  size_t rows = 0, cols = 0;
};

/// Parses lines of `delimiter`-separated numbers (blank lines skipped; with `header`, the first
/// other line names the columns; fields trimmed of spaces,
/// tabs and '\r'); every row needs the same number of fields. Throws ParseError.
Table parse(std::string_view text, char delimiter, bool header);

}  // namespace gradlab::data::csv
