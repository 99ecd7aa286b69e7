#include "gradlab/train/run_info.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

// CMake writes the commit into a generated file that only this file includes, so a new commit
// recompiles this file alone (see CMakeLists.txt).
#ifdef GRADLAB_GIT_COMMIT_FILE
#include GRADLAB_GIT_COMMIT_FILE
#endif
#ifndef GRADLAB_GIT_COMMIT
#define GRADLAB_GIT_COMMIT "unknown"
#endif

namespace gradlab::train {

std::string git_commit() { return GRADLAB_GIT_COMMIT; }

std::string HParam::str() const {
  if (const double* d = std::get_if<double>(&value)) {
    // the shortest of %.{1..17}g that reads back as the same double
    char b[40];
    for (int p = 1; p <= 17; ++p) {
      std::snprintf(b, sizeof b, "%.*g", p, *d);
      if (std::strtod(b, nullptr) == *d || std::isnan(*d)) break;
    }
    return b;
  }
  if (const std::string* s = std::get_if<std::string>(&value)) return *s;
  return std::get<bool>(value) ? "true" : "false";
}

}  // namespace gradlab::train
