#pragma once
// Shared by both halves of the corpus: the recorded header's row type and the comparison.
// Include after corpus_snippets.hpp.

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace corpus {

struct Ref {
  const char* name;
  bool threw;
  const char* grad_fn;
  std::vector<double> value;
  std::vector<std::vector<double>> grads;
};

/// "" when a and b agree within rtol/atol (NaN matches NaN), else what differs.
inline std::string compare_values(const char* what, const std::vector<double>& got,
                                  const std::vector<double>& want, double rtol = 1e-9,
                                  double atol = 1e-12) {
  if (got.size() != want.size())
    return std::string(what) + ": " + std::to_string(got.size()) + " values, recorded " +
           std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) +
             ", recorded " + std::to_string(want[i]);
  }
  return "";
}

// %.17g: doubles survive the round trip through the header exactly.
inline std::string vec_literal(const std::vector<double>& v) {
  std::string s = "{";
  char buf[40];
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) std::snprintf(buf, sizeof buf, "%sNAN", i ? ", " : "");
    else if (std::isinf(v[i])) std::snprintf(buf, sizeof buf, "%s%sINFINITY", i ? ", " : "", v[i] < 0 ? "-" : "");
    else std::snprintf(buf, sizeof buf, "%s%.17g", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + "}";
}

}  // namespace corpus
