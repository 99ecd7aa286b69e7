#include "cell_scan.hpp"

#include <cctype>

namespace xgradlab {

namespace {

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

}  // namespace

CellScan scan_cell(std::string_view code) {
  CellScan r;
  const std::size_t n = code.size();
  bool line_start = true;  // only whitespace since the last newline
  for (std::size_t i = 0; i < n;) {
    const char c = code[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#' && line_start && r.depth == 0) {
      // A preprocessor line (with \ continuations) is a statement of its own.
      while (i < n && code[i] != '\n') {
        if (code[i] == '\\' && i + 1 < n && code[i + 1] == '\n') ++i;
        ++i;
      }
      r.last_boundary = i;
      continue;
    }
    line_start = false;
    if (code.compare(i, 2, "//") == 0) {
      while (i < n && code[i] != '\n') ++i;
      continue;
    }
    if (code.compare(i, 2, "/*") == 0) {
      const std::size_t end = code.find("*/", i + 2);
      if (end == std::string_view::npos) {
        r.open_literal = true;
        return r;
      }
      i = end + 2;
      continue;
    }
    // Raw string: R"delim( ... )delim", also u8R, LR, uR, UR.
    if (c == 'R' && i + 1 < n && code[i + 1] == '"' && (i == 0 || !is_ident(code[i - 1]) ||
                                                        code[i - 1] == '8' || code[i - 1] == 'L' ||
                                                        code[i - 1] == 'u' || code[i - 1] == 'U')) {
      const std::size_t open = code.find('(', i + 2);
      if (open == std::string_view::npos) {
        r.open_literal = true;
        return r;
      }
      // NOTE: built with append, not ")" + delim: GCC 12 warns falsely (-Wrestrict) on that.
      std::string close(1, ')');
      close.append(code.substr(i + 2, open - i - 2)).push_back('"');
      const std::size_t end = code.find(close, open + 1);
      if (end == std::string_view::npos) {
        r.open_literal = true;
        return r;
      }
      i = end + close.size();
      continue;
    }
    if (c == '"' || c == '\'') {
      // A digit separator (1'000'000) is not a character literal.
      if (c == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(code[i - 1])) != 0 &&
          i + 1 < n && std::isxdigit(static_cast<unsigned char>(code[i + 1])) != 0) {
        ++i;
        continue;
      }
      std::size_t j = i + 1;
      while (j < n && code[j] != c && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
      if (j >= n || code[j] != c) {
        r.open_literal = true;
        return r;
      }
      i = j + 1;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++r.depth;
    if (c == ')' || c == ']' || c == '}') {
      --r.depth;
      if (r.depth < r.min_depth) r.min_depth = r.depth;
      if (c == '}' && r.depth == 0) r.last_boundary = i + 1;
    }
    if (c == ';' && r.depth == 0) r.last_boundary = i + 1;
    ++i;
  }
  return r;
}

std::string completeness(std::string_view code) {
  const CellScan s = scan_cell(code);
  if (s.min_depth < 0) return "invalid";
  if (s.open_literal || s.depth > 0) return "incomplete";
  // A trailing backslash continues the line (as in clang-repl).
  const std::size_t e = code.find_last_not_of(" \t\r\n");
  if (e != std::string_view::npos && code[e] == '\\') return "incomplete";
  return "complete";
}

}  // namespace xgradlab
