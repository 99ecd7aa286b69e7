#pragma once
// A small C++ scanner for notebook cells (no clang needed, so it is unit-tested on its own):
// bracket depth outside comments, strings and character literals, and where the last top-level
// statement ends. The kernel uses it for is_complete (the trailing expression whose value a cell
// shows is found by the chunker of cell_rewrite.hpp).

#include <cstddef>
#include <string>
#include <string_view>

namespace xgradlab {

struct CellScan {
  /// Open minus closed brackets ((, [, {) at the end; negative when a closer has no opener.
  int depth = 0;
  /// The lowest depth seen (negative: a stray closer somewhere).
  int min_depth = 0;
  /// The cell ends inside a block comment, string or character literal.
  bool open_literal = false;
  /// Offset just after the last top-level `;`, `}` or preprocessor line (0 when none).
  std::size_t last_boundary = 0;
};

/// Scans `code` (raw strings R"d(...)d" included).
CellScan scan_cell(std::string_view code);

/// "complete", "incomplete" or "invalid", as the Jupyter is_complete_reply says.
std::string completeness(std::string_view code);

}  // namespace xgradlab
