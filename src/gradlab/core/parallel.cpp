// The start-up thread count (core/parallel.hpp): environment variables, then the usable cores.

#include "gradlab/core/parallel.hpp"

#include <sched.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <thread>

namespace gradlab::detail {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

namespace {
// A positive int, or 0 for anything else. OMP_NUM_THREADS may be a list ("4,2": one count per
// nesting level): its first entry is the outer level's.
int parse_count(const char* s, bool list) {
  if (s == nullptr || *s == '\0') return 0;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || errno != 0 || v <= 0 || v > 4096) return 0;
  while (*end == ' ') ++end;
  if (*end != '\0' && !(list && *end == ',')) return 0;
  return static_cast<int>(v);
}
}  // namespace

int num_threads_from_env(const char* gradlab_num_threads, const char* omp_num_threads, int cores,
                         std::string& warning) {
  warning.clear();
  const bool use_gradlab = gradlab_num_threads != nullptr && *gradlab_num_threads != '\0';
  const char* name = use_gradlab ? "GRADLAB_NUM_THREADS" : "OMP_NUM_THREADS";
  const char* value = use_gradlab ? gradlab_num_threads : omp_num_threads;
  if (value == nullptr || *value == '\0') return cores;
  const int n = parse_count(value, !use_gradlab);
  if (n > 0) return n;
  warning = std::string("gradlab: ignoring ") + name + "='" + value +
            "'; expected a positive integer (at most 4096); using " + std::to_string(cores) +
            " threads (the usable cores)";
  return cores;
}

}  // namespace gradlab::detail
