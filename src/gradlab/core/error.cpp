#include "gradlab/core/error.hpp"

namespace gradlab {

Site Site::unknown() noexcept { return Site(SiteLocation{}); }

std::string short_source_path(std::string_view file) {
  // NOTE: a root counts only as a whole component (at the start or after '/'): a plain rfind of
  // "lessons/" in "/work/wt/i11-lessons/src/gradlab/nn/layers.cpp" cut it to
  // "lessons/src/gradlab/nn/layers.cpp". The rightmost root wins, whichever it is.
  size_t best = std::string_view::npos;
  for (std::string_view root : {"lessons/", "checks/", "bench/", "src/", "notebooks/"}) {
    size_t p = file.rfind(root);
    while (p != std::string_view::npos && p != 0 && file[p - 1] != '/') p = file.rfind(root, p - 1);
    if (p != std::string_view::npos && (best == std::string_view::npos || p > best)) best = p;
  }
  return std::string(best == std::string_view::npos ? file : file.substr(best));
}

namespace {
thread_local Site t_module_call{SiteLocation{}};  // line 0: none
}  // namespace

bool Site::in_library() const noexcept {
  const std::string_view file = loc.file_name();
  return file.find("src/gradlab/") != std::string_view::npos || file.find("include/gradlab/") != std::string_view::npos;
}

ModuleCallScope::ModuleCallScope(const Site& site) noexcept {
  if (!site.known() || site.in_library()) return;
  previous_ = t_module_call;
  t_module_call = site;
  set_ = true;
}

ModuleCallScope::~ModuleCallScope() {
  if (set_) t_module_call = previous_;
}

Site ModuleCallScope::current() noexcept { return t_module_call; }

std::string Site::str() const {
  if (!known()) return "<unknown site>";
  std::string s = short_source_path(loc.file_name()) + ":" + std::to_string(loc.line());
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
