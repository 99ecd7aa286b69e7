#pragma once
// Small helpers several lessons share: number formatting, the largest difference between two
// results, a list joined for printing. Header-only, like lesson.hpp.
//
//   lesson::fmt("%.2e", err)        printf-style, one number       -> "3.10e-09"
//   lesson::fmt(0.98055)            fixed point, 4 decimals        -> "0.9806"
//   lesson::noise(5.6e-17, 1e-15)   a difference below the floor   -> "< 1e-15", else "%.1e"
//   lesson::relation(3e-9, 1e-15)   the same after a name          -> "= 3.0e-09" / "< 1e-15"
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

/// A difference as a lesson prints it: below `floor` it is rounding noise and prints as such
/// ("< 1e-15"), otherwise as `format` does ("%.1e": "3.1e-09"). NOTE: noise changes with the BLAS
/// kernel and the thread count (lesson 03 printed 5.6e-17 with Haswell kernels, 0.0e+00 with
/// Cooperlake's), so a README that showed it would hold on one machine only. NaN prints as "nan".
inline std::string noise(double diff, double floor, const char* format = "%.1e") {
  if (std::abs(diff) < floor) return "< " + fmt("%.0e", floor);
  return fmt(format, diff);
}

/// noise() after a quantity's name: "= 3.1e-09" above the floor, "< 1e-15" below it.
inline std::string relation(double diff, double floor, const char* format = "%.1e") {
  const std::string text = noise(diff, floor, format);
  return text[0] == '<' ? text : "= " + text;
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
