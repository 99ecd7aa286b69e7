#pragma once
// Small helpers several lessons share: number formatting, the largest difference between two
// results, a list joined for printing. Header-only, like lesson.hpp.
//
//   lesson::fmt("%.2e", err)        printf-style, one number       -> "3.10e-09"
//   lesson::fmt(0.98055)            fixed point, 4 decimals        -> "0.9806"
//   lesson::max_abs_diff(a, b)      max |a - b| (vectors or tensors; +inf when sizes differ, NaN
//                                   when a difference is NaN)
//   lesson::worst_of({d1, d2})      the largest, NaN when one is NaN
//   lesson::join(names)             "a, b, c", or "(none)" for an empty list

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <gradlab/gradlab.hpp>
#include <initializer_list>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace lesson {

/// One number formatted by a printf format with one conversion: fmt("%.2e", 1234.5) == "1.23e+03".
inline std::string fmt(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

/// One number in fixed point with `precision` decimals (std::fixed): fmt(0.12345) == "0.1235".
inline std::string fmt(double v, int precision = 4) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << v;
  return os.str();
}

/// max_i |a_i - b_i|; +inf when the sizes differ (a mismatch must never look like agreement).
/// NaN when a difference is NaN, so a check `max_abs_diff(a, b) < tol` fails on a diverged run.
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - b[i]);
    if (std::isnan(d)) return d;  // NOTE: std::max(m, NaN) would return m and hide it
    m = std::max(m, d);
  }
  return m;
}

/// The largest of several differences, NaN when one is NaN (std::max({...}) may skip a NaN).
inline double worst_of(std::initializer_list<double> diffs) {
  double m = 0;
  for (double d : diffs) {
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

/// max |a - b| over all elements (a and b broadcast as in a - b), computed without a graph.
inline double max_abs_diff(const gradlab::Tensor& a, const gradlab::Tensor& b) {
  gradlab::NoGradGuard no_grad;
  return gradlab::max(gradlab::abs(a - b)).item<double>();
}

/// The items separated by ", "; "(none)" when there are none.
inline std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s.empty() ? "(none)" : s;
}

}  // namespace lesson
