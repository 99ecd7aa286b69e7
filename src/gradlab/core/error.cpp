#include "gradlab/core/error.hpp"

namespace gradlab {

Site Site::unknown() noexcept { return Site(std::source_location{}); }

std::string Site::str() const {
  if (!known()) return "<unknown site>";
  std::string file = loc.file_name();
  // Keep the path short: from the last "src/", "lessons/", "checks/" or "bench/" on, else the name.
  for (const char* root : {"lessons/", "checks/", "bench/", "src/", "notebooks/"}) {
    auto p = file.rfind(root);
    if (p != std::string::npos) {
      file = file.substr(p);
      break;
    }
  }
  std::string s = file + ":" + std::to_string(loc.line());
  std::string fn = loc.function_name();
  if (!fn.empty()) {
    // "int main()" -> "main"; "void f(int)" -> "f"
    auto paren = fn.find('(');
    std::string head = fn.substr(0, paren);
    auto space = head.rfind(' ');
    if (space != std::string::npos) head = head.substr(space + 1);
    s += " (in " + head + ")";
  }
  return s;
}

std::string error_message(std::string_view op, std::string_view what, std::string_view expected,
                          std::string_view got, std::string_view hint) {
  std::string m;
  m.append(op).append(": ").append(what);
  if (!expected.empty() || !got.empty()) {
    m.append("; expected ").append(expected).append(", got ").append(got);
  }
  if (!hint.empty()) m.append("; hint: ").append(hint);
  return m;
}

}  // namespace gradlab
