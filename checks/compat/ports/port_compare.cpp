// Compares a port program's output with its recorded LibTorch output (format: port_out.hpp).
//
//   port_compare <output> <reference>     exit 0 and "port_compare: same as LibTorch" when they
//                                         agree; otherwise every differing line, and exit 1
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> lines_of(const char* path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "port_compare: cannot read " << path << "\n";
    std::exit(2);
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream is(line);
  std::vector<std::string> w;
  for (std::string s; is >> s;) w.push_back(s);
  return w;
}

bool is_integer(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return i < s.size() && s.find_first_not_of("0123456789", i) == std::string::npos;
}

bool as_number(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

// Why two tokens differ, or "" when they agree.
// Integers are counts and labels, equal or not, except on a '~' line (loose: a step count).
std::string differ(const std::string& a, const std::string& b, double tol, bool loose) {
  double x = 0, y = 0;
  if (!loose && is_integer(a) && is_integer(b)) return a == b ? "" : "integers differ";
  if (as_number(a, x) && as_number(b, y)) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? "" : "NaN on one side";
    const double bound = tol * std::max({1.0, std::fabs(x), std::fabs(y)});
    if (std::fabs(x - y) <= bound) return "";
    char buf[96];
    std::snprintf(buf, sizeof(buf), "|difference| %.3g above %.3g", std::fabs(x - y), bound);
    return buf;
  }
  return a == b ? "" : "words differ";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: port_compare <output> <reference>\n";
    return 2;
  }
  const auto got = lines_of(argv[1]);
  const auto want = lines_of(argv[2]);
  int bad = 0;
  if (got.size() != want.size()) {
    std::cout << "port_compare: " << got.size() << " lines in " << argv[1] << ", expected "
              << want.size() << " as in " << argv[2] << "\n";
    ++bad;
  }
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const auto g = words(got[i]), w = words(want[i]);
    const bool loose = !w.empty() && w[0][0] == '~';
    const double tol = loose ? 2e-2 : 1e-4;
    std::string why = g.size() == w.size() ? "" : "different number of values";
    for (size_t k = 0; why.empty() && k < g.size(); ++k) {
      why = differ(g[k], w[k], tol, loose);
      if (!why.empty()) why = "value " + std::to_string(k) + ": " + why;
    }
    if (!why.empty()) {
      std::cout << "line " << i + 1 << " (" << why << ")\n  gradlab:  " << got[i]
                << "\n  LibTorch: " << want[i] << "\n";
      ++bad;
    }
  }
  if (bad == 0) {
    std::cout << "port_compare: same as LibTorch (" << want.size() << " lines)\n";
    return 0;
  }
  std::cout << "port_compare: " << bad << " difference(s)\n";
  return 1;
}
