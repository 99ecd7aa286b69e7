#include "gradlab/core/demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>

namespace gradlab {

std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && d != nullptr ? d : mangled;
  std::free(d);
  return s;
}

std::string unqualified_type_name(const char* mangled) {
  const std::string s = demangle(mangled);
  const auto lt = s.find('<');
  const auto colon = s.substr(0, lt).rfind("::");
  return colon == std::string::npos ? s : s.substr(colon + 2);
}

}  // namespace gradlab
