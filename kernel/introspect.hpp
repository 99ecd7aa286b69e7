#pragma once
// The kernel's editing help: complete_request through clang's code completion, inspect_request
// through name lookup in the Interpreter's AST (declaration + doc comment). Both run in a
// fork()ed copy of the kernel (see xgradlab.cpp), so a clang crash here never touches the
// kernel's state.

#include <string>
#include <vector>

namespace clang {
class Interpreter;
}

namespace xgradlab {

/// Byte offset of Jupyter's cursor_pos (counted in Unicode code points) in UTF-8 `text`.
std::size_t byte_offset(const std::string& text, long code_points);
/// Number of code points in the first `bytes` bytes of UTF-8 `text` (the reverse).
long code_points(const std::string& text, std::size_t bytes);

struct Completion {
  std::vector<std::string> matches;  ///< each replaces the prefix: text [cursor - prefix, cursor)
  std::size_t prefix_bytes = 0;      ///< length of the identifier being completed, before the cursor
};
/// clang's completions at byte `cursor` of `code`, from Sema's code completion in `main` itself
/// (call it only in a throw-away copy: it parses into `main`).
Completion complete(clang::Interpreter& main, const std::string& code, std::size_t cursor);

struct Inspection {
  bool found = false;
  std::string name;  ///< the name looked up ("gl::gradcheck", "x.backward")
  std::string text;  ///< each declaration found, its doc comment and where it is declared
};
/// The declaration(s) of the name at byte `cursor` of `code`: `a::b::c` (namespaces, aliases,
/// classes; unqualified names also in namespace gradlab), `var.member` and `var->member`.
Inspection inspect(clang::Interpreter& main, const std::string& code, std::size_t cursor);

}  // namespace xgradlab
